//! Bitcoin end to end (SPEC §13): `Engine::run` against the fake Esplora API, the fake
//! Chaingateway serving `bitcoin` records as Chaingateway writes them (a txid, the address,
//! the amount in BTC, no output index), and real SQLite and PostgreSQL ledgers.

use payrecon::app::App;
use payrecon::config::Config;
use payrecon::domain::{State, U256};
use payrecon::report::Report;
use payrecon::sandbox::chaingateway::{notification, FakeChaingateway};
use payrecon::store::NewOrder;
use payrecon_testkit::esplora::{FakeEsplora, Out};
use serde_json::json;

use crate::reconcile::{entry, found, minutes_ago, on_backends, opts, CG, KEY};

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

[chains.bitcoin]
kind = "bitcoin"
esplora_url = "{esplora}"
confirmations = 2
final_depth = 6
max_retries = 2

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
            esplora = esplora.url(),
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

    async fn row(&self, order_ref: &str) -> payrecon::store::OrderSnapshot {
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
