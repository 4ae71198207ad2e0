//! Every gap kind on Bitcoin in one world: missing, lagging, failed_notification,
//! amount_mismatch, unknown_payment and reorged, each found by the run.

use payrecon::domain::State;

use crate::reconcile::{entry, found, on_backends, CG};

use super::{pays, txid, BtcWorld, P2PKH, P2TR, P2WPKH, TIP};

/// Every gap kind on Bitcoin: missing (a paid order still unpaid),
/// lagging (pending in the ledger, final on chain), failed_notification (resent once),
/// amount_mismatch (underpaid), unknown_payment (an address no order has), reorged (a held
/// payment's transaction gone).
#[tokio::test]
async fn every_gap_kind_on_bitcoin() {
    on_backends(|db| async move {
        let w = BtcWorld::start(&db).await;
        w.order("G-1", P2WPKH, 10_000).await;
        w.order("G-2", P2TR, 20_000).await;
        w.order("G-3", P2PKH, 30_000).await;
        w.order("G-4", "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4", 40_000)
            .await;
        w.esplora
            .add(&txid(61), Some(TIP - 10), pays(P2WPKH, 10_000));
        w.esplora.add(&txid(62), Some(TIP), pays(P2TR, 20_000));
        w.esplora
            .add(&txid(63), Some(TIP - 10), pays(P2PKH, 25_000));
        w.esplora.add(
            &txid(64),
            Some(TIP - 10),
            pays("bc1qm34lsc65zpw79lxes69zkqmk6ee3ewf0j77s3h", 5_000),
        );
        w.esplora.add(
            &txid(65),
            Some(TIP),
            pays("bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4", 40_000),
        );
        w.notify("861", &txid(61), P2WPKH, Some("0.0001"));
        w.notify("862", &txid(62), P2TR, Some("0.0002"));
        w.notify("863", &txid(63), P2PKH, Some("0.00025"));
        w.notify(
            "864",
            &txid(64),
            "bc1qm34lsc65zpw79lxes69zkqmk6ee3ewf0j77s3h",
            Some("0.00005"),
        );
        w.notify(
            "865",
            &txid(65),
            "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4",
            Some("0.0004"),
        );
        assert!(w.cg.mark_failed("bitcoin", "861"));
        let first = w.run().await;
        assert_eq!(w.row("G-2").await.state, State::Pending, "{db}");
        assert_eq!(w.row("G-4").await.state, State::Pending, "{db}");
        w.esplora.mine(6);
        w.esplora.remove(&txid(65));
        let second = w.run().await;
        let all: Vec<&payrecon::report::FindingOut> =
            first.findings.iter().chain(&second.findings).collect();
        let order = |r: &str| Some(r.to_string());
        for (kind, what, hit) in [
            (
                "missing",
                "G-1",
                all.iter()
                    .any(|f| f.kind == "missing" && f.order_ref == order("G-1")),
            ),
            (
                "failed_notification",
                "861",
                all.iter()
                    .any(|f| f.kind == "failed_notification" && f.detail.contains("861")),
            ),
            (
                "lagging",
                "G-2",
                found(&second, "lagging")
                    .iter()
                    .any(|f| f.order_ref == order("G-2")),
            ),
            (
                "amount_mismatch",
                "G-3",
                all.iter()
                    .any(|f| f.kind == "amount_mismatch" && f.order_ref == order("G-3")),
            ),
            (
                "unknown_payment",
                "the stray",
                all.iter().any(|f| {
                    f.kind == "unknown_payment" && f.tx_hash.as_deref() == Some(txid(64).as_str())
                }),
            ),
            (
                "reorged",
                "G-4",
                found(&second, "reorged")
                    .iter()
                    .any(|f| f.order_ref == order("G-4")),
            ),
        ] {
            assert!(
                hit,
                "{db}: no {kind} finding for {what}:\n{}\n{}",
                first.to_json(),
                second.to_json()
            );
        }
        assert_eq!(entry(&first, CG).resends.requested, 1, "{db}");
        assert_eq!(
            w.cg.retries(),
            vec![("bitcoin".to_string(), "861".to_string())]
        );
        assert_eq!(
            w.row("G-2").await.state,
            State::Final,
            "{db}: lagging repaired"
        );
        let g3 = w.row("G-3").await;
        assert_eq!(g3.amount_paid.as_deref(), Some("25000"), "{db}");
        assert_eq!(
            w.row("G-4").await.state,
            State::Pending,
            "{db}: never moved back"
        );
    })
    .await;
}
