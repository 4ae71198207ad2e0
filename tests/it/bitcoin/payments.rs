//! Bitcoin payments found: the output whose value is the amount is the payment and goes
//! pending, confirmed and final by depth; every address kind pays, two orders on one address are
//! paid by two outputs, and bad answers credit nothing; the deposit scan finds what no provider
//! reported and reads only the window.

use payrecon::domain::State;
use payrecon_testkit::esplora::Out;

use crate::reconcile::{entry, found, on_backends, CG};

use super::{pays, txid, BtcWorld, CHANGE, P2PKH, P2TR, P2WPKH, TIP};

/// A payment of one output among several (a change output, and a second output to the same
/// address): the output whose value equals Chaingateway's amount is the payment; pending at 1
/// confirmation, confirmed at 2, final at 6. A transaction only in the mempool is not yet a
/// payment.
#[tokio::test]
async fn an_output_is_picked_by_amount_and_goes_pending_confirmed_final_by_depth() {
    on_backends(|db| async move {
        let w = BtcWorld::start(&db).await;
        w.order("B-1", P2WPKH, 125_000).await;
        let id = txid(1);
        w.esplora.add(
            &id,
            None,
            vec![
                Out {
                    address: CHANGE.into(),
                    sats: 3_810_000,
                },
                Out {
                    address: P2WPKH.into(),
                    sats: 40_000,
                },
                Out {
                    address: P2WPKH.into(),
                    sats: 125_000,
                },
            ],
        );
        w.notify("801", &id, P2WPKH, Some("0.00125"));
        let report = w.run().await;
        assert_eq!(
            w.row("B-1").await.state,
            State::Unpaid,
            "{db}: mempool only: {}",
            report.to_json()
        );

        w.esplora.confirm(&id, TIP);
        w.run().await;
        let row = w.row("B-1").await;
        assert_eq!(row.state, State::Pending, "{db}");
        assert_eq!(
            (row.tx_hash.as_deref(), row.log_index),
            (Some(id.as_str()), Some(2)),
            "{db}: vout 2"
        );
        assert_eq!(row.amount_paid.as_deref(), Some("125000"), "{db}: satoshis");

        w.esplora.mine(1);
        w.run().await;
        assert_eq!(w.row("B-1").await.state, State::Confirmed, "{db}");
        w.esplora.mine(4);
        let report = w.run().await;
        assert_eq!(
            w.row("B-1").await.state,
            State::Final,
            "{db}: {}",
            report.to_json()
        );
        let cg = entry(&report, CG);
        assert_eq!(cg.rejected, 0, "{db}");
    })
    .await;
}

/// P2PKH and taproot outputs pay too; two orders on one address are paid by two outputs of
/// one transaction (each its own payment key); a 404 and a malformed answer credit nothing
/// and never panic; a record whose address fails its checksum is rejected.
#[tokio::test]
async fn every_address_kind_separate_outputs_404_and_malformed_answers() {
    on_backends(|db| async move {
        let w = BtcWorld::start(&db).await;
        w.order("P-1", P2PKH, 50_000).await;
        w.order("P-2", P2TR, 60_000).await;
        w.order("S-1", P2WPKH, 70_000).await;
        w.order("S-2", P2WPKH, 80_000).await;
        w.order("N-1", CHANGE, 90_000).await;
        w.esplora.add(
            &txid(11),
            Some(TIP - 10),
            vec![Out {
                address: P2PKH.into(),
                sats: 50_000,
            }],
        );
        w.esplora.add(
            &txid(12),
            Some(TIP - 10),
            vec![Out {
                address: P2TR.into(),
                sats: 60_000,
            }],
        );
        w.esplora.add(
            &txid(13),
            Some(TIP - 10),
            vec![
                Out {
                    address: P2WPKH.into(),
                    sats: 70_000,
                },
                Out {
                    address: P2WPKH.into(),
                    sats: 80_000,
                },
            ],
        );
        w.esplora
            .set_raw(&txid(15), r#"{"txid": "x", "vout": "not a list"#);
        w.notify("811", &txid(11), P2PKH, Some("0.0005"));
        w.notify("812", &txid(12), P2TR, Some("0.0006"));
        w.notify("813", &txid(13), P2WPKH, Some("0.0007"));
        w.notify("814", &txid(13), P2WPKH, Some("0.0008"));
        w.notify("815", &txid(14), CHANGE, Some("0.0009"));
        w.notify("816", &txid(15), CHANGE, Some("0.0009"));
        w.notify(
            "817",
            &txid(16),
            "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdx",
            Some("0.1"),
        );
        let report = w.run().await;
        for r in ["P-1", "P-2", "S-1", "S-2"] {
            assert_eq!(
                w.row(r).await.state,
                State::Final,
                "{db}: {r}: {}",
                report.to_json()
            );
        }
        let (s1, s2) = (w.row("S-1").await, w.row("S-2").await);
        assert_eq!(
            (s1.log_index, s2.log_index),
            (Some(0), Some(1)),
            "{db}: one output each"
        );
        assert_eq!(w.row("N-1").await.state, State::Unpaid, "{db}");
        assert_eq!(entry(&report, CG).rejected, 1, "{db}: the bad checksum");
        assert!(
            !found(&report, "unknown_payment").is_empty(),
            "{db}: {}",
            report.to_json()
        );
    })
    .await;
}

/// The deposit scan (docs/configuration.md, "Bitcoin"): a payment no provider reported is found
/// by the address's history; the history is read newest first and stops at the first page
/// reaching past the window by block time (2 requests of the 3 the whole history takes: 30
/// sweeps of the address, the payment, 40 payments from a week ago); the old payments credit
/// nothing; a mempool transaction is not yet a payment; a history answer that is not JSON, or a
/// 404 (Esplora answers `[]` for an address it has never seen), fails the sweep's entry with
/// the address named, never a panic.
#[tokio::test]
async fn the_deposit_scan_finds_unreported_payments_and_reads_only_the_window() {
    on_backends(|db| async move {
        let w = BtcWorld::start(&db).await;
        w.order("D-1", P2WPKH, 30_000).await;
        w.order("D-2", P2TR, 40_000).await;
        w.order("D-3", P2PKH, 50_000).await;
        w.esplora
            .add(&txid(31), Some(TIP - 5), pays(P2WPKH, 30_000));
        // A week ago (1,008 blocks), outside the 48 h window: history, not a payment now.
        for i in 0..40 {
            w.esplora
                .add(&txid(100 + i), Some(TIP - 1_008 - i), pays(P2TR, 40_000));
        }
        w.esplora.add(&txid(32), Some(TIP - 40), pays(P2TR, 40_000));
        for i in 0..30 {
            let spend = vec![Out {
                address: CHANGE.into(),
                sats: 39_000,
            }];
            w.esplora
                .add_spend(&txid(200 + i), Some(TIP - 30 + i), P2TR, spend);
        }
        w.esplora.add(&txid(33), None, pays(P2PKH, 50_000));
        let report = w.run().await;
        let d1 = w.row("D-1").await;
        assert_eq!(d1.state, State::Final, "{db}: {}", report.to_json());
        assert_eq!(
            (
                d1.tx_hash.as_deref(),
                d1.log_index,
                d1.amount_paid.as_deref()
            ),
            (Some(txid(31).as_str()), Some(1), Some("30000")),
            "{db}"
        );
        let d2 = w.row("D-2").await;
        assert_eq!(d2.state, State::Final, "{db}: {}", report.to_json());
        assert_eq!(d2.tx_hash.as_deref(), Some(txid(32).as_str()), "{db}");
        assert_eq!(w.row("D-3").await.state, State::Unpaid, "{db}: mempool");
        let history: Vec<String> = w
            .esplora
            .requests()
            .into_iter()
            .filter(|p| p.starts_with(&format!("/address/{P2TR}/")))
            .collect();
        assert_eq!(
            history,
            vec![
                format!("/address/{P2TR}/txs"),
                format!("/address/{P2TR}/txs/chain/{}", txid(205)),
            ],
            "{db}: the window's pages only"
        );
        assert!(
            found(&report, "unknown_payment").is_empty(),
            "{db}: {}",
            report.to_json()
        );

        // Mined: the scan finds it; then a malformed history fails the sweep's entry.
        w.esplora.confirm(&txid(33), TIP + 1);
        w.esplora.mine(1);
        // BIP 173's example address: no history on the fake.
        w.order("D-4", "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4", 1_000)
            .await;
        w.run().await;
        assert_eq!(w.row("D-3").await.state, State::Pending, "{db}");
        for (status, body, says) in [
            (200, "<html>rate limited</html>", "malformed history for"),
            (404, "<html>Not Found</html>", "HTTP 404 for the history of"),
        ] {
            w.esplora.push_history_answer(status, body);
            let report = w.run().await;
            let chain = entry(&report, "chain");
            assert!(chain.failed(), "{db}: {}", report.to_json());
            let err = chain.error.as_deref().unwrap_or_default();
            assert!(
                err.contains(says) && err.contains("bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4"),
                "{db}: {err}"
            );
        }
    })
    .await;
}
