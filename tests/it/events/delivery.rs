//! Delivery to real HTTP receivers on loopback: Standard Webhooks headers verified by the
//! official library, 2xx-only success, retries on schedule, `Retry-After`, dead then replay,
//! an endpoint down then up, per-order order, and two instances sharing one PostgreSQL.

use std::sync::Arc;
use std::time::Duration;

use payrecon::app::App;
use payrecon::config::Config;
use payrecon::domain::{PlannedTransition, State, U256};
use payrecon::events::Deliverer;
use payrecon::store::{ApplyContext, NewOrder, Source, Store};

use super::receiver::{Receiver, Reply};
use super::{all_events, verify_with_standardwebhooks, SECRET};
use crate::support::wait_until;
use payrecon_testkit::inspect::Inspect;

mod ordering;
mod retries;

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
