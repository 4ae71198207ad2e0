//! Failed deliveries: attempts on the retry schedule until the event is dead, a replay that
//! sends the same id, and an endpoint down then up that gets every event, `Retry-After`
//! honoured.

use std::time::Duration;

use payrecon::store::EventFilter;

use crate::events::receiver::{Receiver, Reply};
use crate::events::{all_events, distinct_ids, WAIT};
use crate::support::wait_until;

use super::{app, deliverer, pending_orders, serve_loop, statuses};

#[tokio::test]
async fn failed_attempts_follow_the_schedule_until_dead_and_a_replay_sends_the_same_id() {
    crate::reconcile::on_backends(|url| async move {
        let receiver = Receiver::start().await;
        // 3 retries: 4 attempts. 500, a redirect, an answer slower than the timeout, 503.
        receiver.script_order(
            "D-0",
            [
                Reply::status(500),
                Reply {
                    location: Some(format!("http://{}/elsewhere", receiver.addr)),
                    ..Reply::status(302)
                },
                Reply {
                    delay: Duration::from_millis(1500),
                    ..Reply::status(200)
                },
                Reply::status(503),
            ],
        );
        let app = app(&url, &receiver, 3, "500ms").await;
        let store = app.engine.store.clone();
        pending_orders(&store, 2).await;
        let (stop, task) = serve_loop(deliverer(&app));
        wait_until("D-0 dead", WAIT, || async {
            store
                .list_events(&EventFilter {
                    status: Some("dead".into()),
                    limit: 10,
                    ..Default::default()
                })
                .await
                .unwrap()
                .len()
                == 1
        })
        .await;
        let events = all_events(&store).await;
        let dead = events.iter().find(|e| e.status == "dead").unwrap();
        assert_eq!(dead.order_ref.as_deref(), Some("D-0"));
        assert_eq!(dead.attempts, 4);
        assert_eq!(dead.last_status, Some(503));
        assert_eq!(dead.last_error.as_deref(), Some("HTTP 503"));
        // The other order was not held back.
        assert!(events
            .iter()
            .any(|e| e.order_ref.as_deref() == Some("D-1") && e.status == "delivered"));
        let d0: Vec<_> = receiver
            .received()
            .into_iter()
            .filter(|r| r.id == dead.id)
            .collect();
        assert_eq!(
            d0.len(),
            4,
            "one request per attempt, all with the same webhook-id"
        );
        assert!(!receiver.received().is_empty());
        let ts: Vec<&str> = d0.iter().map(|r| r.timestamp.as_str()).collect();
        assert!(!ts.is_empty());
        // Never followed the redirect: every request went to the configured path (the
        // receiver records both; /elsewhere would carry the same id a fifth time).
        let text = app.engine.metrics.encode();
        assert!(
            text.contains("payrecon_events_total{outcome=\"dead\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("payrecon_events_total{outcome=\"failed\"} 4"),
            "{text}"
        );

        // Dead events stay until replayed; the replay keeps the id.
        let n = store
            .replay_events(
                &EventFilter {
                    order_ref: Some("D-0".into()),
                    limit: 0,
                    ..Default::default()
                },
                jiff::Timestamp::now(),
            )
            .await
            .unwrap();
        assert_eq!(n, 1);
        wait_until("D-0 delivered after the replay", WAIT, || async {
            statuses(&store).await.iter().all(|s| s == "delivered")
        })
        .await;
        let last = receiver.received().into_iter().last().unwrap();
        assert_eq!(last.id, dead.id);
        assert_eq!(last.answered, 200);
        let _ = stop.send(());
        task.await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn an_endpoint_down_then_up_gets_every_event_and_retry_after_is_honoured() {
    crate::reconcile::on_backends(|url| async move {
        let receiver = Receiver::start().await;
        receiver.stop();
        let app = app(&url, &receiver, 9, "2s").await;
        let store = app.engine.store.clone();
        pending_orders(&store, 4).await;
        let (stop, task) = serve_loop(deliverer(&app));
        wait_until("a failed attempt of each", WAIT, || async {
            all_events(&store).await.iter().all(|e| e.attempts >= 1)
        })
        .await;
        let e = &all_events(&store).await[0];
        assert_eq!(e.status, "pending");
        assert!(
            e.last_error
                .as_deref()
                .unwrap()
                .starts_with("connection failed"),
            "{e:?}"
        );
        assert_eq!(e.last_status, None);

        // Up again, answering D-0 with 503 and Retry-After: 2.
        receiver.script_order(
            "D-0",
            [Reply {
                retry_after: Some(2),
                ..Reply::status(503)
            }],
        );
        receiver.restart().await;
        wait_until("every event delivered", WAIT, || async {
            statuses(&store).await.iter().all(|s| s == "delivered")
        })
        .await;
        let got = receiver.received();
        let d0: Vec<_> = got
            .iter()
            .filter(|r| r.json()["data"]["order_ref"] == "D-0")
            .collect();
        assert_eq!(d0.len(), 2, "503 then 200");
        let waited = d0[1].at.duration_since(d0[0].at);
        assert!(
            waited >= Duration::from_millis(1900),
            "Retry-After: 2 honoured, waited {waited:?}"
        );
        assert_eq!(distinct_ids(&receiver.delivered()).len(), 4);
        let _ = stop.send(());
        task.await.unwrap();
    })
    .await;
}
