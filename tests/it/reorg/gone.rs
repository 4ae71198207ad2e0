//! A held payment whose transaction a reorg dropped (never re-included) or replaced (same
//! nonce, another recipient): the row and its state stay, a `reorged` finding every run,
//! `payrecon_reorged_open` counts it, nothing is credited anywhere else. Young `final` rows
//! are rechecked; older ones (or `recheck_final = "0s"`) are not.

use payrecon::domain::State;

use super::{has_receipt, nonce, reorg, reorged_open, reorged_total, send, transfer_req, world};
use crate::reconcile::{entry, found, gaps, on_backends, payee, usdt, World, CG};

/// Pays `to` 10 USDT at a fixed fee and seeds `order_ref` with it at `state`.
async fn paid(w: &World, order_ref: &str, to: &str, state: State) -> (u64, String) {
    let n = nonce(w, &w.payer).await;
    let tx = send(w, transfer_req(w, &w.payer, n, to, usdt(10), 2)).await;
    let (_, _, li) = w.where_is(&tx).await;
    w.seed(order_ref, &tx, li, usdt(10), state).await;
    (n, tx)
}

#[tokio::test]
async fn a_pending_payment_dropped_by_a_reorg_stays_and_is_flagged_on_every_run() {
    on_backends(|url| async move {
        let Some(w) = world(&url, 6, "1h").await else {
            return;
        };
        // GN-2 waits for the same payment at the same address: it must never get it.
        w.orders(&[("GN-1", &payee(1), usdt(10)), ("GN-2", &payee(1), usdt(10))])
            .await;
        let (_, tx) = paid(&w, "GN-1", &payee(1), State::Pending).await;
        reorg(&w, 1, vec![]).await;
        assert!(!has_receipt(&w, &tx).await, "the reorg dropped it");
        w.anvil.mine(1).await;
        assert!(!has_receipt(&w, &tx).await, "never re-included");
        // The provider still lists it (its notification predates the reorg).
        w.notify("3001", &tx, &payee(1), "10");
        assert_eq!(reorged_open(&w), 0);

        for run in 1..=2u64 {
            let report = w.run().await;
            let chain = entry(&report, "chain");
            assert_eq!(
                gaps(chain),
                [0, 0, 0, 0, 0, 1],
                "run {run}: {}",
                report.to_json()
            );
            assert_eq!(gaps(entry(&report, CG)), [0, 0, 0, 0, 0, 1], "run {run}");
            let f = found(&report, "reorged");
            let mine = f.iter().find(|f| f.provider == "chain").unwrap();
            assert_eq!(mine.order_ref.as_deref(), Some("GN-1"));
            assert_eq!(mine.action, "none");
            assert!(
                mine.detail.contains("no longer has a receipt"),
                "{}",
                mine.detail
            );
            assert_eq!(reorged_open(&w), 1, "run {run}");
            assert_eq!(reorged_total(&w), run, "run {run}");
        }
        let o = w.order("GN-1").await;
        assert_eq!(
            (o.state, o.tx_hash.as_deref()),
            (State::Pending, Some(tx.as_str()))
        );
        let other = w.order("GN-2").await;
        assert_eq!((other.state, other.tx_hash), (State::Unpaid, None));
        assert_eq!(w.audit().await.len(), 1, "only the handler's transition");
    })
    .await;
}

#[tokio::test]
async fn a_payment_replaced_by_another_transaction_with_the_same_nonce_is_never_reattached() {
    on_backends(|url| async move {
        let Some(w) = world(&url, 6, "1h").await else {
            return;
        };
        w.orders(&[("RP-1", &payee(1), usdt(10)), ("RP-2", &payee(1), usdt(10))])
            .await;
        let (n, tx) = paid(&w, "RP-1", &payee(1), State::Pending).await;
        // The reorg replaces the block: the payer's nonce now pays someone else.
        let replacement = transfer_req(&w, &w.payer, n, &payee(9), usdt(10), 3);
        reorg(&w, 1, vec![(replacement, 0)]).await;
        assert!(!has_receipt(&w, &tx).await);
        assert_eq!(
            nonce(&w, &w.payer).await,
            n + 1,
            "the nonce is used by the replacement"
        );
        let block = w
            .anvil
            .rpc("eth_getBlockByNumber", serde_json::json!(["latest", false]))
            .await;
        let replaced = block["transactions"][0].as_str().unwrap().to_lowercase();
        assert_ne!(replaced, tx);
        w.notify("3101", &tx, &payee(1), "10");
        w.notify("3102", &replaced, &payee(9), "10");

        let report = w.run().await;

        assert_eq!(
            gaps(entry(&report, "chain")),
            [0, 0, 0, 0, 0, 1],
            "{}",
            report.to_json()
        );
        // The provider path: the held payment is reorged; the replacement pays nobody's order.
        assert_eq!(
            gaps(entry(&report, CG)),
            [0, 0, 0, 0, 1, 1],
            "{}",
            report.to_json()
        );
        assert_eq!(reorged_open(&w), 1);
        let o = w.order("RP-1").await;
        assert_eq!(
            (o.state, o.tx_hash.as_deref()),
            (State::Pending, Some(tx.as_str()))
        );
        let other = w.order("RP-2").await;
        assert_eq!((other.state, other.tx_hash), (State::Unpaid, None));
        assert_eq!(w.audit().await.len(), 1);
    })
    .await;
}

#[tokio::test]
async fn a_young_final_payment_reorged_away_is_flagged_and_stays_final() {
    on_backends(|url| async move {
        let Some(w) = world(&url, 3, "1h").await else {
            return;
        };
        w.orders(&[("FN-1", &payee(1), usdt(10))]).await;
        let (_, tx) = paid(&w, "FN-1", &payee(1), State::Final).await;
        w.anvil.mine(2).await; // 3 confirmations = final_depth: final on chain too
        reorg(&w, 3, vec![]).await;
        assert!(!has_receipt(&w, &tx).await);

        let report = w.run().await;

        let chain = entry(&report, "chain");
        assert_eq!(chain.checked, 1, "{}", report.to_json());
        assert_eq!(gaps(chain), [0, 0, 0, 0, 0, 1], "{}", report.to_json());
        let f = found(&report, "reorged")[0];
        assert_eq!(f.local_state.as_deref(), Some("final"));
        assert_eq!(w.order("FN-1").await.state, State::Final);
        assert_eq!(reorged_open(&w), 1);
    })
    .await;
}

#[tokio::test]
async fn a_final_payment_older_than_recheck_final_is_not_checked() {
    on_backends(|url| async move {
        let Some(w) = world(&url, 3, "0s").await else {
            return;
        };
        w.orders(&[("FO-1", &payee(1), usdt(10))]).await;
        let (_, tx) = paid(&w, "FO-1", &payee(1), State::Final).await;
        w.anvil.mine(2).await;
        reorg(&w, 3, vec![]).await;
        assert!(!has_receipt(&w, &tx).await);

        let report = w.run().await;

        let chain = entry(&report, "chain");
        assert_eq!(chain.checked, 0, "{}", report.to_json());
        assert_eq!(gaps(chain), [0; 6], "{}", report.to_json());
        assert_eq!(w.order("FO-1").await.state, State::Final);
        assert_eq!(reorged_open(&w), 0);
    })
    .await;
}
