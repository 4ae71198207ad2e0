//! Delivery to real HTTP receivers on loopback: Standard Webhooks headers verified by the
//! official library, 2xx-only success, retries on schedule, `Retry-After`, dead then replay,
//! an endpoint down then up, per-order order, and two instances sharing one PostgreSQL.

use std::sync::Arc;
use std::time::Duration;

use payrecon::app::App;
use payrecon::config::Config;
use payrecon::domain::{PlannedTransition, State, U256};
use payrecon::events::Deliverer;
use payrecon::store::{ApplyContext, EventFilter, NewOrder, Source, Store};

use super::receiver::{Receiver, Reply};
use super::{all_events, distinct_ids, effects, verify_with_standardwebhooks, SECRET, WAIT};
use crate::support::{self, wait_until};
use payrecon_testkit::inspect::Inspect;

/// An App with events to `receiver` on `db_url`: no chain, no provider (events are
/// produced by applying transitions directly, as any run would).
pub(super) async fn app(db_url: &str, receiver: &Receiver, retries: usize, timeout: &str) -> App {
    let schedule = vec!["\"100ms\""; retries].join(", ");
    let text = format!(
        "[database]\nurl = \"{db_url}\"\n[http]\nlisten = \"127.0.0.1:0\"\n\
         [events]\nurl = \"{}\"\nsecret = \"{SECRET}\"\ntimeout = \"{timeout}\"\n\
         max_concurrency = 8\nretry_schedule = [{schedule}]\nflush_timeout = \"10s\"\n",
        receiver.url()
    );
    let config = Config::from_toml(&text, std::iter::empty()).expect("config");
    App::build(config).await.expect("App::build")
}

pub(super) fn deliverer(app: &App) -> Arc<Deliverer> {
    app.events.clone().expect("events are on")
}

/// `n` orders `D-0..` moved `unpaid -> pending` by payrecon (one batch, events on).
pub(super) async fn pending_orders(store: &Store, n: usize) -> Vec<i64> {
    let orders: Vec<NewOrder> = (0..n)
        .map(|i| NewOrder {
            order_ref: format!("D-{i}"),
            chain: "ethereum".into(),
            pay_to: format!("0x{:040x}", i + 1),
            asset: "native".into(),
            amount_due: U256::from(1000u64 + i as u64),
        })
        .collect();
    store.insert_orders(&orders).await.unwrap();
    let mut ids = Vec::new();
    for i in 0..n {
        ids.push(
            store
                .order_by_ref(&format!("D-{i}"))
                .await
                .unwrap()
                .unwrap()
                .id,
        );
    }
    advance(store, &ids, State::Unpaid, State::Pending).await;
    ids
}

pub(super) async fn advance(store: &Store, ids: &[i64], from: State, to: State) {
    let batch: Vec<PlannedTransition> = ids
        .iter()
        .map(|&id| PlannedTransition {
            order_id: id,
            order_ref: String::new(),
            from,
            to,
            attach: None,
            credit: None,
        })
        .collect();
    let ctx = ApplyContext {
        source: Source::Reconcile,
        provider: "cg".into(),
        run_id: "run-1".into(),
        events: true,
        retries: Default::default(),
    };
    store.apply(&batch, &ctx).await.unwrap();
}

async fn statuses(store: &Store) -> Vec<String> {
    all_events(store)
        .await
        .into_iter()
        .map(|e| e.status)
        .collect()
}

/// Runs the serve-mode loop of `d` until the returned sender is dropped or sent.
fn serve_loop(
    d: Arc<Deliverer>,
) -> (
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<()>,
) {
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        d.run(async move {
            let _ = rx.await;
        })
        .await
    });
    (tx, task)
}

#[tokio::test]
async fn events_are_signed_as_standard_webhooks_and_sent_byte_for_byte() {
    crate::reconcile::on_backends(|url| async move {
        let receiver = Receiver::start().await;
        let app = app(&url, &receiver, 2, "2s").await;
        let store = &app.engine.store;
        pending_orders(store, 3).await;
        let flushed = deliverer(&app).flush(Duration::from_secs(10)).await;
        assert_eq!(flushed.delivered, 3, "{flushed:?}");

        let got = receiver.received();
        assert_eq!(got.len(), 3);
        let events = all_events(store).await;
        assert!(events
            .iter()
            .all(|e| e.status == "delivered" && e.attempts == 1));
        for r in &got {
            assert_eq!(r.content_type, "application/json");
            assert!(r.id.starts_with("evt_"));
            let stored = events.iter().find(|e| e.id == r.id).expect("a stored id");
            assert_eq!(r.json()["type"], stored.kind.as_str());
            assert_eq!(
                r.json()["data"]["order_ref"].as_str(),
                stored.order_ref.as_deref()
            );
            let ts: i64 = r.timestamp.parse().unwrap();
            assert!((jiff::Timestamp::now().as_second() - ts).abs() < 60);
            assert!(r.signature.starts_with("v1,"));
        }
        if let Some(n) = verify_with_standardwebhooks(SECRET, &got) {
            assert_eq!(n, 3);
        }
        // A wrong secret does not verify (the check can fail).
        let mut forged = got[0].clone();
        forged.body = forged.body.replace("pending", "final");
        assert_ne!(forged.body, got[0].body);
        let refused = std::panic::catch_unwind(|| {
            verify_with_standardwebhooks(SECRET, std::slice::from_ref(&forged))
        });
        assert!(refused.is_err(), "a changed body must not verify");

        let text = app.engine.metrics.encode();
        assert!(
            text.contains("payrecon_events_total{outcome=\"delivered\"} 3"),
            "{text}"
        );
        assert!(text.contains("payrecon_events_pending 0"), "{text}");
        assert!(!text.contains(SECRET) && !text.contains(&SECRET[6..]));
    })
    .await;
}

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

/// `serve`'s loop is woken by a committed batch: the event goes out well within 1 s of the
/// commit, without waiting for the poll.
#[tokio::test]
async fn a_committed_batch_wakes_the_delivery_loop() {
    crate::reconcile::on_backends(|url| async move {
        let receiver = Receiver::start().await;
        let app = app(&url, &receiver, 2, "2s").await;
        let store = app.engine.store.clone();
        let (stop, task) = serve_loop(deliverer(&app));
        // The loop is idle (nothing pending); a batch commits and wakes it, as Engine does.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let t0 = std::time::Instant::now();
        pending_orders(&store, 1).await;
        let committed = t0.elapsed();
        app.engine.events_wake.as_ref().unwrap().notify_one();
        wait_until("delivered", Duration::from_secs(5), || async {
            !receiver.received().is_empty()
        })
        .await;
        let latency = receiver.received()[0].at.duration_since(t0) - committed;
        // Well below the poll interval: the wake, not the fallback poll, sent it.
        assert!(
            latency < payrecon::events::POLL / 2,
            "{latency:?} (poll every {:?})",
            payrecon::events::POLL
        );
        let _ = stop.send(());
        task.await.unwrap();
    })
    .await;
}

/// Retention deletes delivered events older than the cutoff, never pending or dead ones.
#[tokio::test]
async fn retention_deletes_only_old_delivered_events() {
    crate::reconcile::on_backends(|url| async move {
        let receiver = Receiver::start().await;
        receiver.script_order("D-1", [Reply::status(500)]);
        let app = app(&url, &receiver, 0, "2s").await;
        let store = app.engine.store.clone();
        pending_orders(&store, 3).await;
        // D-0 and D-2 delivered, D-1 dead (no retries in this schedule).
        deliverer(&app).flush(Duration::from_secs(5)).await;
        let before = all_events(&store).await;
        let kinds: Vec<&str> = before.iter().map(|e| e.status.as_str()).collect();
        assert_eq!(kinds, ["delivered", "dead", "delivered"]);
        let now = jiff::Timestamp::now();
        assert_eq!(
            store
                .prune_events(now - jiff::SignedDuration::from_hours(1))
                .await
                .unwrap(),
            0
        );
        assert_eq!(
            store
                .prune_events(now + jiff::SignedDuration::from_secs(1))
                .await
                .unwrap(),
            2
        );
        let left = all_events(&store).await;
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].status, "dead");
    })
    .await;
}
