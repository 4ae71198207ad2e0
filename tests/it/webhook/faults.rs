//! Deliveries racing each other, a sink that cannot take more, a database that fails.

use super::{client, endpoint, qvard, Hook, BODY};
use crate::support;

use payrecon::webhook::Scheme;

#[tokio::test]
async fn webhook_concurrent_deliveries_of_one_event_store_it_once() {
    let (_dir, urls) = support::all_backends().await;
    for url in &urls {
        let mut hook = Hook::start(url, vec![endpoint("qvard", Scheme::Qvard)], 128).await;
        let hook_base = hook.base.clone();
        let tasks: Vec<_> = (0..50)
            .map(|_| {
                let url = format!("{hook_base}/webhooks/qvard");
                tokio::spawn(async move {
                    let (k, v) = qvard(BODY).remove(0);
                    let resp = client()
                        .post(url)
                        .header(k, v)
                        .body(BODY)
                        .send()
                        .await
                        .unwrap();
                    (resp.status().as_u16(), resp.text().await.unwrap())
                })
            })
            .collect();
        for t in tasks {
            assert_eq!(t.await.unwrap(), (200, String::new()), "{url}");
        }
        assert_eq!(hook.stored("qvard").await, 1, "{url}");
        assert_eq!(hook.drain_sink().len(), 1, "{url}");
        assert_eq!(hook.counted("qvard", "accepted"), 1.0);
        assert_eq!(hook.counted("qvard", "duplicate"), 49.0);
    }
}

#[tokio::test]
async fn webhook_a_full_or_closed_sink_does_not_block_the_answer() {
    let (dir, url) = support::sqlite_url();
    let mut hook = Hook::start(&url, vec![endpoint("qvard", Scheme::Qvard)], 1).await;
    for n in 0..3 {
        let body = format!(r#"{{"id":"o-{n}","status":"completed"}}"#);
        assert_eq!(
            hook.post("qvard", &qvard(&body), body.clone()).await,
            (200, String::new())
        );
    }
    assert_eq!(hook.drain_sink().len(), 1);
    hook.rx.close();
    let body = r#"{"id":"o-9","status":"completed"}"#;
    assert_eq!(hook.post("qvard", &qvard(body), body).await.0, 200);
    // Every event is in the inbox, unprocessed, for the next run.
    let waiting = hook
        .store
        .unprocessed_webhook_deliveries(None, 10)
        .await
        .unwrap();
    assert_eq!(waiting.len(), 4);
    drop(dir);
}

#[tokio::test]
async fn webhook_database_failure_is_503_without_secrets() {
    let (_dir, urls) = support::all_backends().await;
    for url in &urls {
        let mut hook = Hook::start(url, vec![endpoint("qvard", Scheme::Qvard)], 16).await;
        // The table goes away: storing fails, the provider is told to retry. (Renamed, which
        // every backend spells the same.)
        let rename = |from: &str, to: &str| format!("ALTER TABLE {from} RENAME TO {to}");
        let gone = "payrecon_webhook_events_gone";
        crate::store::exec(&hook.store, &rename("payrecon_webhook_events", gone)).await;
        let (status, text) = hook.post("qvard", &qvard(BODY), BODY).await;
        assert_eq!(status, 503, "{url}");
        assert!(
            !text.contains("api-key-never-shown") && !text.contains("payrecon_webhook_events"),
            "{text}"
        );
        assert!(hook.drain_sink().is_empty());
        assert_eq!(hook.counted("qvard", "error"), 1.0);
        assert_eq!(hook.counted("qvard", "accepted"), 0.0);
        // Back again: the retried delivery is stored.
        crate::store::exec(&hook.store, &rename(gone, "payrecon_webhook_events")).await;
        assert_eq!(hook.post("qvard", &qvard(BODY), BODY).await.0, 200, "{url}");
        assert_eq!(hook.drain_sink().len(), 1);
    }
}
