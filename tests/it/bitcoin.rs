//! Bitcoin end to end (docs/configuration.md, "Bitcoin"): `Engine::run` against the fake
//! Esplora API, the fake Chaingateway serving `bitcoin` records as Chaingateway writes them (a
//! txid, the address, the amount in BTC, no output index), and real SQLite and PostgreSQL
//! ledgers.

use payrecon::app::App;
use payrecon::config::Config;
use payrecon::domain::{State, U256};
use payrecon::report::Report;
use payrecon::store::NewOrder;
use payrecon_testkit::esplora::{FakeEsplora, Out};
use payrecon_testkit::sandbox::chaingateway::{notification, FakeChaingateway};
use serde_json::json;

use crate::reconcile::{entry, found, minutes_ago, on_backends, opts, CG, KEY};
use payrecon_testkit::inspect::Inspect;

const TIP: u64 = 925_000;
/// Real mainnet addresses of each kind.
const P2WPKH: &str = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq";
const P2PKH: &str = "1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2";
const P2TR: &str = "bc1p5d7rjq7g6rdk2yhzks9smlaqtedr4dekq08ge8ztwac72sfr9rusxg3297";
const CHANGE: &str = "bc1qxy2kgdygjrsqtzq2n0yrf2493p83kkfjhx0wlh";

fn txid(n: u64) -> String {
    format!("{:064x}", 0xb7c_0000u64 + n)
}

struct BtcWorld {
    esplora: FakeEsplora,
    cg: FakeChaingateway,
    app: App,
}

impl BtcWorld {
    async fn start(db: &str) -> BtcWorld {
        let esplora = FakeEsplora::start(TIP).await;
        let (cg, cg_url) = FakeChaingateway::start(KEY).await;
        let text = format!(
            r#"[database]
url = "{db}"

{chain}
[providers.{CG}]
kind = "chaingateway"
base_url = "{cg_url}"
api_key = "{KEY}"
network = "mainnet"
chains = ["bitcoin"]
timeout = "5s"
max_retries = 2
backoff = "20ms"
"#,
            chain = esplora.config_table("confirmations = 2\nfinal_depth = 6\nmax_retries = 2"),
        );
        let config = Config::from_toml(&text, std::iter::empty()).expect("a valid config");
        let app = App::build(config).await.expect("App::build");
        BtcWorld { esplora, cg, app }
    }

    async fn order(&self, order_ref: &str, pay_to: &str, sats: u64) {
        let o = NewOrder {
            order_ref: order_ref.into(),
            chain: "bitcoin".into(),
            pay_to: pay_to.into(),
            asset: "native".into(),
            amount_due: U256::from(sats),
        };
        self.app.engine.store.insert_orders(&[o]).await.unwrap();
    }

    async fn row(&self, order_ref: &str) -> payrecon_testkit::inspect::OrderSnapshot {
        let o = self.app.engine.store.order_by_ref(order_ref).await.unwrap();
        o.unwrap_or_else(|| panic!("no order {order_ref}"))
    }

    async fn run(&self) -> Report {
        self.app.engine.run(&opts()).await.expect("run")
    }

    /// A Chaingateway `bitcoin` notification: the amount in BTC (or none).
    fn notify(&self, id: &str, txid: &str, to: &str, btc: Option<&str>) {
        let mut n = notification(id, txid, "native", to, btc, minutes_ago(5));
        n["type"] = json!("BTC");
        n["blockchain"] = json!("bitcoin");
        n["from"] = json!(CHANGE);
        self.cg.add_notification("bitcoin", n);
    }
}

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

fn pays(address: &str, sats: u64) -> Vec<Out> {
    vec![
        Out {
            address: CHANGE.into(),
            sats: 2_000_000,
        },
        Out {
            address: address.into(),
            sats,
        },
    ]
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

/// Config: `esplora_url` required, the EVM and Tron keys refused, only depth finality, the
/// network named; an address of another network in a record is rejected.
#[test]
fn bitcoin_config_errors_name_their_keys() {
    let table = |keys: &str| {
        format!(
            "[database]\nurl = \"sqlite://x.db\"\n\n[chains.bitcoin]\nkind = \"bitcoin\"\n{keys}\n"
        )
    };
    let esplora = "esplora_url = \"https://blockstream.info/api\"";
    let cases = [
        (table(""), "chains.bitcoin.esplora_url"),
        (
            table(&format!("{esplora}\nrpc_url = \"https://x.example\"")),
            "chains.bitcoin.rpc_url",
        ),
        (
            table(&format!("{esplora}\nchain_id = 1")),
            "chains.bitcoin.chain_id",
        ),
        (
            table(&format!("{esplora}\nfinality = \"finalized\"")),
            "chains.bitcoin.finality",
        ),
        (
            table(&format!("{esplora}\nnetwork = \"liquid\"")),
            "chains.bitcoin.network",
        ),
        (
            table("esplora_url = \"ftp://x.example\""),
            "chains.bitcoin.esplora_url",
        ),
    ];
    for (text, key) in cases {
        let e = Config::from_toml(&text, std::iter::empty())
            .err()
            .unwrap_or_else(|| panic!("accepted:\n{text}"));
        assert!(e.to_string().contains(key), "{key}: {e}");
    }
    let ok = Config::from_toml(
        &table(&format!("{esplora}\nnetwork = \"signet\"")),
        std::iter::empty(),
    )
    .expect("a signet chain");
    let c = ok.chain("bitcoin").unwrap();
    assert_eq!(
        c.kind,
        payrecon::domain::ChainKind::Bitcoin(payrecon::domain::BtcNetwork::Testnet)
    );
    let e = Config::from_toml(
        "[database]\nurl = \"sqlite://x.db\"\n\n[chains.ethereum]\nrpc_url = \"https://x.example\"\nnetwork = \"mainnet\"\n",
        std::iter::empty(),
    )
    .err()
    .expect("network on an EVM chain");
    assert!(e.to_string().contains("chains.ethereum.network"), "{e}");
}
