//! Qvard status deliveries (`{"id", "status"}`, no transaction) through a real `serve`: the
//! status map decides, matched by `order_ref`; an unknown order or an unmapped status is
//! stored and answered 200, and changes nothing.

use payrecon::domain::State;
use payrecon_testkit::qvard::FakeQvard;

use super::{
    assert_one_webhook_transition, audit, providers, qv_sig, wait_applied, wait_processed, Daemon,
    NEVER, QV_KEY, QV_SECRET,
};
use crate::reconcile::{on_backends, payee, usdt, World};
use payrecon_testkit::inspect::Inspect;

const QV: &str = "qvard";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ingest_qvard_status_delivery_applies_the_status_map_by_order_ref() {
    on_backends(|url| async move {
        let qvard = FakeQvard::start(QV_KEY).await;
        let p = providers(Some(qvard.base_url()));
        let Some(w) = World::start_with(&url, &p, NEVER).await else {
            return;
        };
        w.orders(&[("A-1", &payee(11), usdt(25)), ("A-2", &payee(12), usdt(25))])
            .await;
        let d = Daemon::start(w.another_app(&p, NEVER).await).await;

        let body = r#"{"id":"A-1","status":"completed"}"#;
        assert_eq!(
            d.post(QV, &qv_sig(QV_SECRET, body), body).await,
            (200, String::new()),
            "{url}"
        );
        wait_applied(&w, "A-1").await;
        wait_processed(w.store(), QV).await;
        let a1 = w.order("A-1").await;
        assert_eq!(a1.state, State::Final, "{url}: {a1:?}");
        assert_eq!(
            (
                a1.tx_hash.as_deref(),
                a1.log_index,
                a1.amount_paid.as_deref()
            ),
            (None, None, None),
            "{url}: a status delivery attaches no payment key"
        );
        let rows = audit(w.store()).await;
        assert_one_webhook_transition(&rows, "A-1", State::Final, QV);
        assert_eq!(rows[0].run_id, None, "{url}");

        // The same delivery again: a duplicate, nothing new.
        assert_eq!(
            d.post(QV, &qv_sig(QV_SECRET, body), body).await,
            (200, String::new())
        );
        assert_eq!(d.webhooks(QV, "duplicate").await, 1.0, "{url}");

        // An order the ledger does not have: authentic, stored, 200; nothing changes.
        let unknown = r#"{"id":"A-404","status":"completed"}"#;
        assert_eq!(
            d.post(QV, &qv_sig(QV_SECRET, unknown), unknown).await,
            (200, String::new()),
            "{url}"
        );
        // A status the status map does not know: stored, 200, nothing applied.
        let pending = r#"{"id":"A-2","status":"pending"}"#;
        assert_eq!(
            d.post(QV, &qv_sig(QV_SECRET, pending), pending).await,
            (200, String::new()),
            "{url}"
        );
        assert_eq!(d.webhooks(QV, "accepted").await, 3.0, "{url}");
        assert_eq!(
            w.store().webhook_delivery_count(QV).await.unwrap(),
            3,
            "{url}"
        );
        wait_processed(w.store(), QV).await;

        assert_eq!(w.order("A-1").await, a1, "{url}");
        let a2 = w.order("A-2").await;
        assert_eq!(a2.state, State::Unpaid, "{url}: {a2:?}");
        assert_eq!(a2.tx_hash, None);
        assert!(
            w.store().order_by_ref("A-404").await.unwrap().is_none(),
            "{url}: no order is created"
        );
        assert_eq!(audit(w.store()).await, rows, "{url}");
        assert_eq!(w.store().count("orders").await.unwrap(), 2);
        d.stop().await;
    })
    .await;
}
