//! Chaingateway deliveries through a real `serve`: applied per the chain, once, also when the
//! same delivery arrives again or 50 times at once.

use payrecon::domain::State;

use super::{
    assert_one_webhook_transition, audit, cg_body, cg_sig, providers, wait_applied, wait_processed,
    Daemon, CG_SECRET, NEVER,
};
use crate::reconcile::{on_backends, payee, usdt, World, CG, CONFS};
use crate::serve::series;
use payrecon_testkit::inspect::Inspect;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ingest_chaingateway_delivery_is_applied_per_the_chain_once() {
    on_backends(|url| async move {
        let p = providers(None);
        let Some(w) = World::start_with(&url, &p, NEVER).await else {
            return;
        };
        let to = payee(1);
        w.orders(&[("C-1", &to, usdt(25))]).await;
        let tx = w.pay(&to, usdt(25)).await;
        // head - block + 1 = CONFS + 1: confirmed, far above the finalized block.
        w.anvil.mine(CONFS).await;
        let (block, block_hash, log_index) = w.where_is(&tx).await;
        let d = Daemon::start(w.another_app(&p, NEVER).await).await;
        assert_eq!(d.webhooks(CG, "accepted").await, 0.0, "{url}");

        let body = cg_body(&w, "7001", &tx, &to);
        let sig = cg_sig(CG_SECRET, &tx);
        assert_eq!(
            d.post(CG, &sig, body.clone()).await,
            (200, String::new()),
            "{url}"
        );
        wait_applied(&w, "C-1").await;
        wait_processed(w.store(), CG).await;

        let o = w.order("C-1").await;
        assert_eq!(o.state, State::Confirmed, "{url}: {o:?}");
        assert_eq!(o.tx_hash.as_deref(), Some(tx.as_str()), "{url}");
        assert_eq!(o.log_index, Some(log_index), "{url}");
        assert_eq!(o.amount_paid, Some(usdt(25).to_string()), "{url}");
        assert_eq!(o.block_number, Some(block as i64), "{url}");
        assert_eq!(o.block_hash.as_deref(), Some(block_hash.as_str()), "{url}");
        let rows = audit(w.store()).await;
        assert_one_webhook_transition(&rows, "C-1", State::Confirmed, CG);
        assert_eq!(
            rows[0].run_id, None,
            "{url}: a webhook applies outside any run"
        );
        assert_eq!(w.store().webhook_delivery_count(CG).await.unwrap(), 1);

        // The same delivery again: 200 and empty, nothing new stored or applied.
        assert_eq!(
            d.post(CG, &sig, body.clone()).await,
            (200, String::new()),
            "{url}"
        );
        assert_eq!(d.webhooks(CG, "duplicate").await, 1.0, "{url}");
        assert_eq!(d.webhooks(CG, "accepted").await, 1.0, "{url}");
        assert_eq!(w.store().webhook_delivery_count(CG).await.unwrap(), 1);
        assert_eq!(audit(w.store()).await, rows, "{url}");
        assert_eq!(w.order("C-1").await, o, "{url}");

        let m = d.metrics().await;
        assert_eq!(
            series(
                &m,
                "payrecon_transitions_applied_total",
                &[("provider", CG), ("from", "unpaid"), ("to", "confirmed")]
            ),
            Some(1.0),
            "{url}:\n{m}"
        );
        d.stop().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ingest_fifty_concurrent_copies_of_one_delivery_apply_once() {
    on_backends(|url| async move {
        let p = providers(None);
        let Some(w) = World::start_with(&url, &p, NEVER).await else {
            return;
        };
        let to = payee(2);
        w.orders(&[("C-2", &to, usdt(25))]).await;
        let tx = w.pay(&to, usdt(25)).await;
        w.anvil.mine(70).await; // below the finalized block (head - 64)
        let d = Daemon::start(w.another_app(&p, NEVER).await).await;

        let body = cg_body(&w, "7002", &tx, &to);
        let sig = cg_sig(CG_SECRET, &tx);
        let posts = (0..50).map(|_| d.post(CG, &sig, body.clone()));
        let answers = futures::future::join_all(posts).await;
        for (i, a) in answers.iter().enumerate() {
            assert_eq!(a, &(200, String::new()), "{url}: delivery {i}");
        }
        wait_applied(&w, "C-2").await;
        wait_processed(w.store(), CG).await;

        assert_eq!(
            w.store().webhook_delivery_count(CG).await.unwrap(),
            1,
            "{url}"
        );
        assert_eq!(d.webhooks(CG, "accepted").await, 1.0, "{url}");
        assert_eq!(d.webhooks(CG, "duplicate").await, 49.0, "{url}");
        let o = w.order("C-2").await;
        assert_eq!(o.state, State::Final, "{url}: {o:?}");
        assert_eq!(o.tx_hash.as_deref(), Some(tx.as_str()));
        assert_one_webhook_transition(&audit(w.store()).await, "C-2", State::Final, CG);
        d.stop().await;
    })
    .await;
}

/// A delivery of a payment short of its order credits it and holds the order (unpaid), and
/// opens the order's `amount_mismatch` exception at once, without a run: no run may list that
/// payment again. No finding row is written (a delivery is no run). The same payment
/// delivered again under another id touches the exception, never a second one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ingest_an_underpaid_delivery_holds_the_order_and_opens_its_exception() {
    on_backends(|url| async move {
        let p = providers(None);
        let Some(w) = World::start_with(&url, &p, NEVER).await else {
            return;
        };
        let to = payee(2);
        w.orders(&[("C-2", &to, usdt(25))]).await;
        let tx = w.pay(&to, usdt(20)).await;
        w.anvil.mine(CONFS).await;
        let d = Daemon::start(w.another_app(&p, NEVER).await).await;
        let sig = cg_sig(CG_SECRET, &tx);
        for id in ["7101", "7102"] {
            let body = cg_body(&w, id, &tx, &to);
            assert_eq!(d.post(CG, &sig, body).await, (200, String::new()), "{url}");
            wait_processed(w.store(), CG).await;
        }
        let o = w.order("C-2").await;
        assert_eq!(o.state, State::Unpaid, "{url}: held, {o:?}");
        assert_eq!(o.amount_paid, Some(usdt(20).to_string()), "{url}");
        let open = w
            .store()
            .list_exceptions(&payrecon::store::ExceptionFilter {
                status: Some("open".into()),
                limit: 100,
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(open.len(), 1, "{url}: {open:?}");
        assert_eq!(open[0].kind, "amount_mismatch", "{url}");
        assert_eq!(open[0].order_ref.as_deref(), Some("C-2"));
        assert!(open[0].detail.starts_with("underpaid"), "{:?}", open[0]);
        assert_eq!(
            w.store().count("payrecon_findings").await.unwrap(),
            0,
            "{url}"
        );
        d.stop().await;
    })
    .await;
}
