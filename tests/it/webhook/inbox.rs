//! The inbox table on both backends: one row per (provider, event id), also under racing
//! inserts; oldest first until marked.

use jiff::{SignedDuration, Timestamp};
use payrecon::store::Store;

use crate::store::open;
use crate::support;
use payrecon_testkit::inspect::Inspect;

fn t0() -> Timestamp {
    "2026-11-01T10:00:00.123456Z".parse().unwrap()
}

#[tokio::test]
async fn webhook_inbox_stores_each_event_once() {
    let (_dir, urls) = support::all_backends().await;
    for url in &urls {
        let store = open(url).await;
        store.migrate().await.expect("second migrate");
        let body = r#"{"id":"ord_1","status":"completed","note":"é"}"#;
        let first = store
            .insert_webhook_delivery("qvard", "ord_1:completed", body, t0())
            .await
            .unwrap()
            .expect("a new event");
        assert_eq!(first.provider, "qvard");
        assert_eq!(first.event_id, "ord_1:completed");
        assert_eq!(first.body, body);
        let again = store
            .insert_webhook_delivery("qvard", "ord_1:completed", "{}", t0())
            .await
            .unwrap();
        assert_eq!(again, None, "{url}");
        // Another provider, or another event id, is another event.
        assert!(store
            .insert_webhook_delivery("paymos", "ord_1:completed", body, t0())
            .await
            .unwrap()
            .is_some());
        assert!(store
            .insert_webhook_delivery("qvard", "ord_1:final", body, t0())
            .await
            .unwrap()
            .is_some());
        assert_eq!(
            store.webhook_delivery_count("qvard").await.unwrap(),
            2,
            "{url}"
        );
        assert_eq!(store.webhook_delivery_count("paymos").await.unwrap(), 1);
        assert_eq!(store.webhook_delivery_count("other").await.unwrap(), 0);
        // The listed event is the stored one, byte for byte, with the returned timestamp.
        let listed = store
            .unprocessed_webhook_deliveries(Some("qvard"), 10)
            .await
            .unwrap();
        assert_eq!(listed[0], first, "{url}");
        assert_eq!(listed[0].body, body);
    }
}

#[tokio::test]
async fn webhook_inbox_racing_inserts_yield_one_new_event() {
    let (_dir, urls) = support::all_backends().await;
    for url in &urls {
        let store = open(url).await;
        let other = Store::connect(url, 4).await.unwrap();
        let now = Timestamp::now();
        let tasks: Vec<_> = (0..50)
            .map(|i| {
                let s = if i % 2 == 0 {
                    store.clone()
                } else {
                    other.clone()
                };
                tokio::spawn(async move {
                    s.insert_webhook_delivery("cg", "4711", r#"{"id":4711}"#, now)
                        .await
                })
            })
            .collect();
        let mut new = 0;
        for t in tasks {
            if t.await.unwrap().expect("insert").is_some() {
                new += 1;
            }
        }
        assert_eq!(new, 1, "{url}");
        assert_eq!(
            store.webhook_delivery_count("cg").await.unwrap(),
            1,
            "{url}"
        );
    }
}

#[tokio::test]
async fn webhook_inbox_lists_unprocessed_oldest_first() {
    let (_dir, urls) = support::all_backends().await;
    for url in &urls {
        let store = open(url).await;
        let at = |secs: i64| t0() + SignedDuration::from_secs(secs);
        // Inserted out of order: listed by received_at.
        for (provider, id, secs) in [
            ("a", "e3", 30),
            ("a", "e1", 10),
            ("b", "e2", 20),
            ("a", "e4", 40),
        ] {
            store
                .insert_webhook_delivery(provider, id, "{}", at(secs))
                .await
                .unwrap()
                .unwrap();
        }
        let ids = |events: Vec<payrecon::store::StoredDelivery>| -> Vec<String> {
            events.into_iter().map(|e| e.event_id).collect()
        };
        let all = store
            .unprocessed_webhook_deliveries(None, 100)
            .await
            .unwrap();
        assert_eq!(
            all[0].received_at.as_millisecond(),
            at(10).as_millisecond(),
            "{url}"
        );
        assert_eq!(ids(all.clone()), ["e1", "e2", "e3", "e4"], "{url}");
        let first_two = store.unprocessed_webhook_deliveries(None, 2).await.unwrap();
        assert_eq!(ids(first_two), ["e1", "e2"]);
        let of_a = store
            .unprocessed_webhook_deliveries(Some("a"), 100)
            .await
            .unwrap();
        assert_eq!(ids(of_a), ["e1", "e3", "e4"]);

        let done: Vec<i64> = all
            .iter()
            .filter(|e| e.event_id != "e3")
            .map(|e| e.id)
            .collect();
        store
            .mark_webhook_deliveries(&done[..2], "applied", at(50))
            .await
            .unwrap();
        store
            .mark_webhook_deliveries(&[], "applied", at(50))
            .await
            .unwrap();
        let left = store
            .unprocessed_webhook_deliveries(None, 100)
            .await
            .unwrap();
        assert_eq!(ids(left), ["e3", "e4"], "{url}");
        // A marked event keeps its first outcome; marking it again changes nothing.
        store
            .mark_webhook_deliveries(&done, "ignored", at(60))
            .await
            .unwrap();
        let left = store
            .unprocessed_webhook_deliveries(None, 100)
            .await
            .unwrap();
        assert_eq!(ids(left), ["e3"], "{url}");
        let outcomes = outcomes(&store).await;
        assert_eq!(
            outcomes,
            [
                ("e1".into(), Some("applied".into())),
                ("e2".into(), Some("applied".into())),
                ("e3".into(), None),
                ("e4".into(), Some("ignored".into()))
            ],
            "{url}"
        );
        // Marked rows are still stored (a duplicate delivery stays a duplicate).
        assert_eq!(store.webhook_delivery_count("a").await.unwrap(), 3);
        assert!(store
            .insert_webhook_delivery("a", "e1", "{}", at(70))
            .await
            .unwrap()
            .is_none());
    }
}

async fn outcomes(store: &Store) -> Vec<(String, Option<String>)> {
    let sql = "SELECT event_id, outcome FROM payrecon_webhook_events ORDER BY event_id";
    let rows = store.rows(sql).await.unwrap();
    rows.into_iter()
        .map(|r| (r[0].clone().unwrap(), r[1].clone()))
        .collect()
}
