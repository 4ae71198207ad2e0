//! Tron end to end (docs/configuration.md, "Tron"): `Engine::run` against the fake Tron node
//! (java-tron's JSON-RPC and HTTP API in their documented shapes, real mainnet values: the USDT
//! contract, 6 decimals, chain id 0x2b6653dc), the fake Chaingateway serving `tron` records as
//! Chaingateway writes them (base58 addresses, txids without `0x`, no log index), and real
//! SQLite and PostgreSQL ledgers whose orders hold base58 deposit addresses.

use payrecon::app::App;
use payrecon::config::Config;
use payrecon::domain::{State, TronAddress, U256};
use payrecon::report::Report;
use payrecon::store::NewOrder;
use payrecon_testkit::sandbox::chaingateway::{notification, FakeChaingateway};
use payrecon_testkit::tron::{FakeTron, TronTx, USDT_HEX};
use serde_json::json;

use crate::reconcile::{entry, found, minutes_ago, on_backends, opts, usdt, CG, KEY};
use payrecon_testkit::inspect::Inspect;

mod config;
mod gaps;

/// USDT's TRC-20 contract on mainnet.
const USDT: &str = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";
/// The node's API key (sent as TRON-PRO-API-KEY; never to be printed).
const TRON_KEY: &str = "trongrid-7f3e9a1c-5b2d-4e8f";
/// Confirmations for pending -> confirmed; the node's solidified block is 19 below its head.
const CONFS: u64 = 19;
const SOLID_LAG: u64 = 19;
const HEAD: u64 = 68_000_000;

/// A deposit address: base58 of 20 bytes derived from `n`.
fn payee(n: u8) -> TronAddress {
    let mut b = [0u8; 20];
    b[0] = 0x5e;
    b[19] = n;
    TronAddress::from_bytes(b)
}

fn txid(n: u64) -> String {
    format!("{:064x}", 0x7a0_0000u64 + n)
}

struct TronWorld {
    node: FakeTron,
    cg: FakeChaingateway,
    app: App,
}

fn config(db: &str, cg: &str, node: &FakeTron) -> String {
    config_scanning(db, cg, node, false)
}

fn config_scanning(db: &str, cg: &str, node: &FakeTron, scan: bool) -> String {
    format!(
        r#"[database]
url = "{db}"

{tables}
[providers.{CG}]
kind = "chaingateway"
base_url = "{cg}"
api_key = "{KEY}"
network = "mainnet"
chains = ["tron"]
timeout = "5s"
max_retries = 2
backoff = "20ms"
"#,
        tables = node.config_tables(
            TRON_KEY,
            &format!("confirmations = {CONFS}\nchain_id = 728126428\nscan_unpaid = {scan}")
        ),
    )
}

impl TronWorld {
    async fn start(db: &str) -> TronWorld {
        TronWorld::start_scanning(db, false).await
    }

    /// `scan`: with the deposit scan (`scan_unpaid`).
    async fn start_scanning(db: &str, scan: bool) -> TronWorld {
        let node = FakeTron::start(HEAD, SOLID_LAG).await;
        let (cg, cg_url) = FakeChaingateway::start(KEY).await;
        let text = config_scanning(db, &cg_url, &node, scan);
        let config = Config::from_toml(&text, std::iter::empty()).expect("a valid config");
        let app = App::build(config).await.expect("App::build");
        TronWorld { node, cg, app }
    }

    /// Pays `to` `amount` USDT base units in `block` (a TRC-20 log at `log_index`).
    fn pay_usdt(&self, id: &str, block: u64, to: &TronAddress, amount: u128, log_index: u64) {
        self.node.add(
            id,
            block,
            TronTx::Trc20 {
                contract: USDT_HEX.into(),
                from: "5c".repeat(20),
                to: to.evm_hex()[2..].to_string(),
                amount,
                log_index,
                success: true,
            },
        );
    }

    /// Pays `to` `amount` sun in `block` (a successful `TransferContract`).
    fn pay_trx(&self, id: &str, block: u64, to: &TronAddress, amount: u64) {
        self.node.add(
            id,
            block,
            TronTx::Trx {
                from: "5c".repeat(20),
                to: to.evm_hex()[2..].to_string(),
                amount,
                contract_ret: "SUCCESS".into(),
            },
        );
    }

    async fn order(&self, order_ref: &str, pay_to: &TronAddress, asset: &str, due: U256) {
        let o = NewOrder {
            order_ref: order_ref.into(),
            chain: "tron".into(),
            pay_to: pay_to.as_str().into(),
            asset: asset.into(),
            amount_due: due,
        };
        self.app.engine.store.insert_orders(&[o]).await.unwrap();
    }

    async fn state(&self, order_ref: &str) -> State {
        let o = self.app.engine.store.order_by_ref(order_ref).await.unwrap();
        o.unwrap_or_else(|| panic!("no order {order_ref}")).state
    }

    async fn run(&self) -> Report {
        self.app.engine.run(&opts()).await.expect("run")
    }

    /// A Chaingateway `tron` notification as Chaingateway writes it.
    fn notify(&self, id: &str, txid: &str, contract: Option<&str>, to: &str, amount: &str) {
        let mut n = notification(
            id,
            txid,
            contract.unwrap_or("native"),
            to,
            Some(amount),
            minutes_ago(5),
        );
        n["type"] = json!(if contract.is_some() { "TRC20" } else { "TRX" });
        n["blockchain"] = json!("tron");
        n["from"] = json!("TJRabPrwbZy45sbavfcjinPJC18kjpRTv8");
        self.cg.add_notification("tron", n);
    }
}

/// A TRC-20 USDT payment to a base58 deposit address: pending with too few blocks on top,
/// confirmed at 19, final once the node's solidified block reaches it; every request carried
/// the API key, which no report shows.
#[tokio::test]
async fn a_trc20_payment_goes_pending_confirmed_final_by_solidification() {
    on_backends(|db| async move {
        let w = TronWorld::start(&db).await;
        let to = payee(1);
        w.order("T-1", &to, USDT, usdt(25)).await;
        let id = txid(1);
        let block = HEAD - 5;
        w.node.add(
            &id,
            block,
            TronTx::Trc20 {
                contract: USDT_HEX.into(),
                from: "5c".repeat(20),
                to: to.evm_hex()[2..].to_string(),
                amount: 25_000_000,
                log_index: 7,
                success: true,
            },
        );
        w.notify("901", &id, Some(USDT), to.as_str(), "25.000000");

        let report = w.run().await;
        assert_eq!(
            w.state("T-1").await,
            State::Pending,
            "{db}: {}",
            report.to_json()
        );
        let cg = entry(&report, CG);
        assert_eq!((cg.checked, cg.rejected), (1, 0), "{db}");

        w.node.mine(CONFS - 6);
        w.run().await;
        assert_eq!(w.state("T-1").await, State::Confirmed, "{db}");
        assert!(w.node.solidified() < block);

        w.node.mine(block - w.node.solidified());
        let report = w.run().await;
        assert_eq!(w.state("T-1").await, State::Final, "{db}");

        let order = w
            .app
            .engine
            .store
            .order_by_ref("T-1")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            order.tx_hash.as_deref(),
            Some(id.as_str()),
            "{db}: the txid without 0x"
        );
        assert_eq!(order.log_index, Some(7), "{db}: the block-level logIndex");
        let keys = w.node.api_keys();
        assert!(
            !keys.is_empty() && keys.iter().all(|k| k.as_deref() == Some(TRON_KEY)),
            "{keys:?}"
        );
        assert!(
            !report.to_json().contains(TRON_KEY),
            "the key is in the report"
        );
    })
    .await;
}

/// TRX comes from the HTTP API: a `TransferContract` to the order's address is a payment; a
/// freeze with a value, a TRC-10 transfer and a failed TRX transfer are never payments.
#[tokio::test]
async fn trx_is_read_from_the_http_api_and_only_a_transfer_contract_pays() {
    on_backends(|db| async move {
        let w = TronWorld::start(&db).await;
        let trx = |n: u64| U256::from(n) * U256::from(1_000_000u64);
        let cases: [(&str, u8, TronTx); 5] = [
            ("X-PAID", 11, TronTx::Trx {
                from: "5c".repeat(20),
                to: payee(11).evm_hex()[2..].to_string(),
                amount: 40_000_000,
                contract_ret: "SUCCESS".into(),
            }),
            ("X-FREEZE", 12, TronTx::Other {
                contract_type: "FreezeBalanceV2Contract".into(),
                value: json!({"frozen_balance": 40_000_000, "owner_address": format!("41{}", "5c".repeat(20))}),
                call_value: 40_000_000,
            }),
            ("X-TRC10", 13, TronTx::Other {
                contract_type: "TransferAssetContract".into(),
                value: json!({"amount": 40_000_000, "asset_name": "31303032303030",
                    "owner_address": format!("41{}", "5c".repeat(20)),
                    "to_address": format!("41{}", &payee(13).evm_hex()[2..])}),
                call_value: 0,
            }),
            // A failed TRC-20 call (REVERT): receipt status 0, no log; the order is a USDT one.
            ("X-REVERTED", 15, TronTx::Trc20 {
                contract: USDT_HEX.into(),
                from: "5c".repeat(20),
                to: payee(15).evm_hex()[2..].to_string(),
                amount: 40_000_000,
                log_index: 0,
                success: false,
            }),
            ("X-FAILED", 14, TronTx::Trx {
                from: "5c".repeat(20),
                to: payee(14).evm_hex()[2..].to_string(),
                amount: 40_000_000,
                contract_ret: "OUT_OF_ENERGY".into(),
            }),
        ];
        for (i, (order_ref, n, tx)) in cases.into_iter().enumerate() {
            let token = matches!(tx, TronTx::Trc20 { .. });
            let (asset, contract) = if token { (USDT, Some(USDT)) } else { ("native", None) };
            w.order(order_ref, &payee(n), asset, trx(40)).await;
            let id = txid(100 + i as u64);
            w.node.add(&id, HEAD - 40, tx);
            w.notify(&format!("95{i}"), &id, contract, payee(n).as_str(), "40.000000");
        }
        let report = w.run().await;
        assert_eq!(w.state("X-PAID").await, State::Final, "{db}: {}", report.to_json());
        for r in ["X-FREEZE", "X-TRC10", "X-REVERTED", "X-FAILED"] {
            assert_eq!(w.state(r).await, State::Unpaid, "{db}: {r}");
        }
        let unknown = found(&report, "unknown_payment");
        let details: Vec<&str> = unknown.iter().map(|f| f.detail.as_str()).collect();
        assert!(details.iter().any(|d| d.contains("FreezeBalanceV2Contract")), "{details:?}");
        assert!(details.iter().any(|d| d.contains("TransferAssetContract")), "{details:?}");
        let requests = w.node.requests();
        assert!(requests.iter().any(|r| r == "/wallet/gettransactionbyid"), "{requests:?}");
        assert!(!requests.iter().any(|r| r == "eth_getTransactionByHash"), "TRX never from JSON-RPC's value");
    })
    .await;
}

/// Chaingateway's tron records in every accepted spelling of one address (base58, `41…`,
/// `0x…`, a txid with `0x`) reach the same order; a base58 address with a wrong checksum is
/// a rejected record naming the field.
#[tokio::test]
async fn every_spelling_of_an_address_is_one_address_and_a_bad_checksum_is_rejected() {
    on_backends(|db| async move {
        let w = TronWorld::start(&db).await;
        let to = payee(21);
        w.order("S-1", &to, USDT, usdt(7)).await;
        let id = txid(21);
        w.node.add(
            &id,
            HEAD - 30,
            TronTx::Trc20 {
                contract: USDT_HEX.into(),
                from: "5c".repeat(20),
                to: to.evm_hex()[2..].to_string(),
                amount: 7_000_000,
                log_index: 0,
                success: true,
            },
        );
        let usdt_41 = format!("41{USDT_HEX}");
        w.notify(
            "961",
            &format!("0x{id}"),
            Some(&usdt_41),
            &to.tron_hex(),
            "7.000000",
        );
        let bad = format!("{}X", &to.as_str()[..to.as_str().len() - 1]);
        w.notify("962", &txid(22), Some(USDT), &bad, "1.000000");
        let report = w.run().await;
        assert_eq!(
            w.state("S-1").await,
            State::Final,
            "{db}: {}",
            report.to_json()
        );
        let cg = entry(&report, CG);
        assert_eq!(cg.rejected, 1, "{db}: {}", report.to_json());
    })
    .await;
}
