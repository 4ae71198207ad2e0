//! Bitcoin payments whose transaction or block the chain drops: a reorg re-keys a payment
//! re-included elsewhere, a replacement by fee bump is flagged and never moves an order back,
//! and a block leaving the best chain flags its payments.

use payrecon::domain::State;
use payrecon_testkit::esplora::Out;

use crate::reconcile::{found, on_backends};

use super::{pays, txid, BtcWorld, P2TR, P2WPKH, TIP};

/// A reorg: a pending payment re-included in another block is re-keyed by the sweep; one
/// whose transaction a fee bump replaced (404) is `reorged` every run and keeps its state.
#[tokio::test]
async fn a_reorg_rekeys_and_a_replacement_is_flagged_never_moved_back() {
    on_backends(|db| async move {
        let w = BtcWorld::start(&db).await;
        w.order("R-1", P2WPKH, 10_000).await;
        w.order("R-2", P2TR, 20_000).await;
        w.esplora.add(
            &txid(21),
            Some(TIP),
            vec![Out {
                address: P2WPKH.into(),
                sats: 10_000,
            }],
        );
        w.esplora.add(
            &txid(22),
            Some(TIP),
            vec![Out {
                address: P2TR.into(),
                sats: 20_000,
            }],
        );
        w.notify("821", &txid(21), P2WPKH, Some("0.0001"));
        w.notify("822", &txid(22), P2TR, Some("0.0002"));
        w.run().await;
        assert_eq!(w.row("R-1").await.state, State::Pending, "{db}");
        w.esplora.reorg_from(TIP);
        w.esplora.mine(1);
        w.esplora.confirm(&txid(21), TIP + 1);
        w.esplora.remove(&txid(22));
        let report = w.run().await;
        let swept: Vec<_> = found(&report, "reorged")
            .into_iter()
            .filter(|f| f.provider == "chain")
            .collect();
        assert_eq!(swept.len(), 2, "{db}: {}", report.to_json());
        let r1 = w.row("R-1").await;
        assert_eq!(r1.block_number, Some((TIP + 1) as i64), "{db}: re-keyed");
        assert_eq!(
            r1.block_hash.as_deref(),
            Some(w.esplora.block_hash(TIP + 1).as_str())
        );
        assert_eq!(
            w.row("R-2").await.state,
            State::Pending,
            "{db}: never moved back"
        );
        w.esplora.mine(10);
        w.run().await;
        assert_eq!(w.row("R-1").await.state, State::Final, "{db}");
        assert_eq!(w.row("R-2").await.state, State::Pending, "{db}");
    })
    .await;
}

/// Replacements by fee bump (RBF) that pay less: one replacing a mempool transaction is the
/// payment (`amount_mismatch`, the satoshis paid credited, the order held short); one replacing a confirmed payment
/// leaves the order on the payment it holds (`reorged`, never moved back), and the
/// replacement credits nothing (`unknown_payment`: no unpaid order for it).
#[tokio::test]
async fn a_replacement_that_pays_less_is_a_mismatch_or_flagged_never_moved_back() {
    on_backends(|db| async move {
        let w = BtcWorld::start(&db).await;
        w.order("F-1", P2WPKH, 100_000).await;
        w.order("F-2", P2TR, 50_000).await;
        w.esplora.add(&txid(41), None, pays(P2WPKH, 100_000));
        w.notify("841", &txid(41), P2WPKH, Some("0.001"));
        w.esplora.add(&txid(43), Some(TIP), pays(P2TR, 50_000));
        w.notify("843", &txid(43), P2TR, Some("0.0005"));
        w.run().await;
        assert_eq!(w.row("F-1").await.state, State::Unpaid, "{db}");
        assert_eq!(w.row("F-2").await.state, State::Pending, "{db}");

        w.esplora.remove(&txid(41));
        w.esplora
            .add(&txid(42), Some(TIP + 1), pays(P2WPKH, 90_000));
        w.notify("842", &txid(42), P2WPKH, Some("0.0009"));
        w.esplora.reorg_from(TIP);
        w.esplora.remove(&txid(43));
        w.esplora.add(&txid(44), Some(TIP + 1), pays(P2TR, 45_000));
        w.notify("844", &txid(44), P2TR, Some("0.00045"));
        w.esplora.mine(1);
        let report = w.run().await;
        // 90,000 of 100,000 sat: credited and held unpaid (docs/configuration.md, "Amounts").
        let f1 = w.row("F-1").await;
        assert_eq!(f1.state, State::Unpaid, "{db}: {}", report.to_json());
        assert_eq!(
            (f1.tx_hash.as_deref(), f1.amount_paid.as_deref()),
            (None, Some("90000")),
            "{db}"
        );
        let mismatch = found(&report, "amount_mismatch");
        assert!(
            mismatch
                .iter()
                .any(|f| f.order_ref.as_deref() == Some("F-1")
                    && f.tx_hash.as_deref() == Some(txid(42).as_str())
                    && f.action == "held"),
            "{db}: {}",
            report.to_json()
        );
        let f2 = w.row("F-2").await;
        assert_eq!(
            (f2.state, f2.tx_hash.as_deref()),
            (State::Pending, Some(txid(43).as_str())),
            "{db}: never moved back"
        );
        let reorged = found(&report, "reorged");
        assert!(
            reorged
                .iter()
                .any(|f| f.tx_hash.as_deref() == Some(txid(43).as_str())),
            "{db}: {}",
            report.to_json()
        );
        let unknown = found(&report, "unknown_payment");
        assert!(
            unknown
                .iter()
                .any(|f| f.tx_hash.as_deref() == Some(txid(44).as_str())),
            "{db}: {}",
            report.to_json()
        );
        w.esplora.mine(10);
        w.run().await;
        let f1 = w.row("F-1").await;
        assert_eq!(
            (f1.state, f1.amount_paid.as_deref()),
            (State::Unpaid, Some("90000")),
            "{db}: still short, credited once"
        );
        assert_eq!(w.row("F-2").await.state, State::Pending, "{db}");
    })
    .await;
}

/// A block leaving the best chain with nothing replacing it: a payment back in the mempool,
/// and one whose status still cites the replaced block (`in_best_chain: false`), are both
/// `reorged` and keep their states; mined again elsewhere, the first is re-keyed and goes
/// final.
#[tokio::test]
async fn a_block_leaving_the_best_chain_flags_its_payments() {
    on_backends(|db| async move {
        let w = BtcWorld::start(&db).await;
        w.order("L-1", P2WPKH, 10_000).await;
        w.order("L-2", P2TR, 20_000).await;
        w.esplora.add(&txid(51), Some(TIP), pays(P2WPKH, 10_000));
        w.esplora.add(&txid(52), Some(TIP), pays(P2TR, 20_000));
        w.notify("851", &txid(51), P2WPKH, Some("0.0001"));
        w.run().await;
        assert_eq!(w.row("L-1").await.state, State::Pending, "{db}");
        assert_eq!(w.row("L-2").await.state, State::Pending, "{db}: scanned");
        w.esplora.keep_citing(&txid(52));
        w.esplora.reorg_from(TIP);
        w.esplora.unconfirm(&txid(51));
        let report = w.run().await;
        let swept: Vec<_> = found(&report, "reorged")
            .into_iter()
            .filter(|f| f.provider == "chain")
            .filter_map(|f| f.order_ref.clone())
            .collect();
        assert!(
            swept.contains(&"L-1".to_string()) && swept.contains(&"L-2".to_string()),
            "{db}: {}",
            report.to_json()
        );
        assert_eq!(w.row("L-1").await.state, State::Pending, "{db}");
        assert_eq!(w.row("L-2").await.state, State::Pending, "{db}");
        let stale = w.row("L-2").await.block_hash;
        w.esplora.mine(2);
        w.esplora.confirm(&txid(51), TIP + 2);
        w.esplora.mine(6);
        w.run().await;
        let l1 = w.row("L-1").await;
        assert_eq!(
            (l1.state, l1.block_number),
            (State::Final, Some((TIP + 2) as i64)),
            "{db}: re-keyed"
        );
        let l2 = w.row("L-2").await;
        assert_eq!((l2.state, l2.block_hash), (State::Pending, stale), "{db}");
    })
    .await;
}
