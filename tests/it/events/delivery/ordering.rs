//! The order events go out in: an order's events in order, a failing order holding back only
//! itself, and two instances on one PostgreSQL never sending one event twice.

use std::time::Duration;

use payrecon::domain::State;

use crate::events::receiver::{Receiver, Reply};
use crate::events::{distinct_ids, effects, WAIT};
use crate::support::{self, wait_until};

use super::{advance, app, deliverer, pending_orders, serve_loop, statuses};

#[tokio::test]
async fn an_orders_events_go_out_in_order_and_a_failing_order_holds_back_only_itself() {
    crate::reconcile::on_backends(|url| async move {
        let receiver = Receiver::start().await;
        let app = app(&url, &receiver, 9, "2s").await;
        let store = app.engine.store.clone();
        let ids = pending_orders(&store, 3).await;
        advance(&store, &ids, State::Pending, State::Final).await;
        // D-0's pending event fails three times before it is delivered.
        receiver.script_order(
            "D-0",
            [Reply::status(500), Reply::status(500), Reply::status(500)],
        );
        let (stop, task) = serve_loop(deliverer(&app));
        wait_until("all six delivered", WAIT, || async {
            let s = statuses(&store).await;
            s.len() == 6 && s.iter().all(|s| s == "delivered")
        })
        .await;
        let got = receiver.received();
        for order in ["D-0", "D-1", "D-2"] {
            let kinds: Vec<(String, u16)> = got
                .iter()
                .filter(|r| r.json()["data"]["order_ref"] == order)
                .map(|r| (r.json()["type"].as_str().unwrap().to_string(), r.answered))
                .collect();
            let first_final = kinds.iter().position(|k| k.0 == "order.final").unwrap();
            let pending_ok = kinds
                .iter()
                .position(|k| k.0 == "order.pending" && k.1 == 200)
                .unwrap();
            assert!(pending_ok < first_final, "{order}: {kinds:?}");
        }
        // D-1 and D-2 were done while D-0 still failed.
        let d0_ok = got
            .iter()
            .position(|r| r.json()["data"]["order_ref"] == "D-0" && r.answered == 200)
            .unwrap();
        let others_done = got
            .iter()
            .filter(|r| r.json()["data"]["order_ref"] != "D-0")
            .count();
        assert_eq!(others_done, 4);
        assert!(
            got[..d0_ok]
                .iter()
                .filter(|r| r.json()["data"]["order_ref"] != "D-0")
                .count()
                >= 2
        );
        assert_eq!(effects(&receiver.delivered()).len(), 6);
        let _ = stop.send(());
        task.await.unwrap();
    })
    .await;
}

/// Two instances (each its own pools, claims and HTTP client) on one PostgreSQL, delivering
/// 120 events to a receiver that answers slowly: each event is sent exactly once.
#[tokio::test]
async fn two_instances_on_postgres_never_send_one_event_twice() {
    let Some(url) = support::pg_database_url().await else {
        return;
    };
    let receiver = Receiver::start().await;
    receiver.script((0..400).map(|_| Reply {
        delay: Duration::from_millis(20),
        ..Reply::status(200)
    }));
    let a = app(&url, &receiver, 9, "2s").await;
    let b = app(&url, &receiver, 9, "2s").await;
    let store = a.engine.store.clone();
    let ids = pending_orders(&store, 60).await;
    advance(&store, &ids, State::Pending, State::Final).await;
    let (stop_a, ta) = serve_loop(deliverer(&a));
    let (stop_b, tb) = serve_loop(deliverer(&b));
    wait_until("120 delivered", Duration::from_secs(60), || async {
        statuses(&store)
            .await
            .iter()
            .filter(|s| *s == "delivered")
            .count()
            == 120
    })
    .await;
    let _ = stop_a.send(());
    let _ = stop_b.send(());
    ta.await.unwrap();
    tb.await.unwrap();
    let got = receiver.received();
    assert_eq!(got.len(), 120, "no event sent twice");
    assert_eq!(distinct_ids(&got).len(), 120);
    let sent_by_a = a.engine.metrics.encode();
    let sent_by_b = b.engine.metrics.encode();
    let delivered = |t: &str| -> u64 {
        t.lines()
            .find_map(|l| l.strip_prefix("payrecon_events_total{outcome=\"delivered\"} "))
            .unwrap()
            .parse()
            .unwrap()
    };
    assert_eq!(delivered(&sent_by_a) + delivered(&sent_by_b), 120);
    assert!(
        delivered(&sent_by_a) > 0 && delivered(&sent_by_b) > 0,
        "both instances worked"
    );
}
