//! The balance check on Tron, against the fake Tron node (balances at `latest` only, as
//! java-tron answers) and every backend: the openings derived and recorded; an unreported
//! TRC-20 payment and an unreported TRX payment credited; a TRC-20 sweep to the treasury
//! recorded; a TRX drain opening `unexpected_outflow`; a payment above the final block taken
//! back off the head's balance; TRX no transaction shows opening `balance_mismatch`; and what
//! a check with nothing new costs.

use payrecon::app::App;
use payrecon::config::Config;
use payrecon::domain::{State, TronAddress, U256};
use payrecon::engine::Trigger;
use payrecon::store::NewOrder;
use payrecon_testkit::inspect::Inspect;
use payrecon_testkit::sandbox::chaingateway::FakeChaingateway;
use payrecon_testkit::tron::{FakeTron, TronTx, TX_FEE, USDT, USDT_HEX};

use super::{age_orders, open_of};
use crate::reconcile::{entry, on_backends, CG, KEY};

const HEAD: u64 = 70_000_000;
const SOLID_LAG: u64 = 19;
const TRX: u64 = 1_000_000;

/// An address of 20 bytes derived from `n`: base58, and the fake node's bare hex.
fn party(n: u8) -> (String, String) {
    let mut b = [0u8; 20];
    b[0] = 0x7b;
    b[19] = n;
    let t = TronAddress::from_bytes(b);
    (t.as_str().to_string(), t.evm_hex()[2..].to_string())
}

fn txid(n: u64) -> String {
    format!("{:064x}", 0xba1_7000u64 + n)
}

fn trx(from: &str, to: &str, sun: u64) -> TronTx {
    TronTx::Trx {
        from: from.into(),
        to: to.into(),
        amount: sun,
        contract_ret: "SUCCESS".into(),
    }
}

fn usdt(from: &str, to: &str, units: u128, log_index: u64) -> TronTx {
    TronTx::Trc20 {
        contract: USDT_HEX.into(),
        from: from.into(),
        to: to.into(),
        amount: units,
        log_index,
        success: true,
    }
}

fn order(r: &str, to: &str, asset: &str, due: u64) -> NewOrder {
    NewOrder {
        order_ref: r.into(),
        chain: "tron".into(),
        pay_to: to.into(),
        asset: asset.into(),
        amount_due: U256::from(due),
    }
}

#[tokio::test]
async fn a_tron_check_explains_trc20_and_trx_from_balances_at_the_head() {
    on_backends(|db| async move {
        let node = FakeTron::start(HEAD, SOLID_LAG).await;
        let (_cg, cg_url) = FakeChaingateway::start(KEY).await;
        let ((a, a_hex), (b, b_hex)) = (party(1), party(2));
        let ((treasury, treasury_hex), (_, thief_hex)) = (party(3), party(4));
        let tables = node.config_tables(
            "tron-key-4b1d",
            &format!("confirmations = 19\nmax_retries = 1\ntreasury = [\"{treasury}\"]"),
        );
        let text = format!(
            "[database]\nurl = \"{db}\"\n\n{tables}\n[providers.{CG}]\nkind = \"chaingateway\"\n\
             base_url = \"{cg_url}\"\napi_key = \"{KEY}\"\nnetwork = \"mainnet\"\n\
             chains = [\"tron\"]\ntimeout = \"5s\"\nmax_retries = 1\n"
        );
        let config = Config::from_toml(&text, std::iter::empty()).unwrap();
        let (lookback, treasuries) = (config.balances.lookback, config.balances.treasury.clone());
        let app = App::build(config).await.unwrap();
        let store = &app.engine.store;
        let orders = [
            order("TRC-1", &a, USDT, 25 * TRX),
            order("TRX-1", &b, "native", 50 * TRX),
        ];
        store.insert_orders(&orders).await.unwrap();
        age_orders(&app).await;
        let check = || {
            app.engine
                .check_balances(lookback, &treasuries, None, Trigger::Cli)
        };
        // What the addresses held before their orders: the openings, not exceptions.
        node.fund(&a_hex, USDT_HEX, 5 * u128::from(TRX));
        node.fund(&b_hex, "native", 100 * u128::from(TRX));
        let r = check().await.unwrap();
        let e = entry(&r, "balances");
        let shown = r.to_json();
        assert_eq!(
            (e.status.as_str(), e.checked, e.gaps.total()),
            ("ok", 2, 0),
            "{db}: {shown}"
        );
        let rows = store.balances(None, false).await.unwrap();
        let opening = |addr: &str| {
            rows.iter()
                .find(|r| r.address == addr)
                .unwrap()
                .opening_balance
        };
        assert_eq!(opening(&a), U256::from(5 * TRX), "{db}");
        assert_eq!(opening(&b), U256::from(100 * TRX), "{db}");
        assert!(
            rows.iter().all(|r| r.checked_block == HEAD - SOLID_LAG),
            "{db}: {rows:?}"
        );

        // Unreported payments of both kinds, a USDT sweep (its fee burned in TRX), a TRX drain,
        // and a TRX payment above the next final block (taken back off the head's balance).
        node.add(
            &txid(1),
            HEAD + 1,
            usdt("99".repeat(20).as_str(), &a_hex, 25 * 1_000_000, 3),
        );
        node.add(&txid(2), HEAD + 2, trx(&"98".repeat(20), &b_hex, 50 * TRX));
        node.add(
            &txid(3),
            HEAD + 3,
            usdt(&a_hex, &treasury_hex, 30 * 1_000_000, 0),
        );
        node.add(&txid(4), HEAD + 4, trx(&b_hex, &thief_hex, 120 * TRX));
        node.mine(30);
        node.add(
            &txid(5),
            node.head() - 2,
            trx(&"98".repeat(20), &b_hex, TRX),
        );
        let r = check().await.unwrap();
        let e = entry(&r, "balances");
        let shown = r.to_json();
        assert_eq!(e.status, "ok", "{db}: {shown}");
        assert_eq!(
            (e.checked, e.applied, e.gaps.missing),
            (2, 2, 2),
            "{db}: {shown}"
        );
        assert_eq!(
            (e.gaps.unexpected_outflow, e.gaps.balance_mismatch),
            (1, 0),
            "{db}: {shown}"
        );
        for r in ["TRC-1", "TRX-1"] {
            let o = store.order_by_ref(r).await.unwrap().unwrap();
            assert_eq!(o.state, State::Final, "{db}: {r}");
        }
        let drains = open_of(&app, "unexpected_outflow").await;
        assert_eq!(drains.len(), 1, "{db}");
        assert_eq!(drains[0].tx_hash.as_deref(), Some(txid(4).as_str()), "{db}");
        assert_eq!(drains[0].amount.as_deref(), Some("120000000"), "{db}");
        let findings = Inspect::findings(store).await.unwrap();
        let swept = findings
            .iter()
            .find(|f| f.kind == "sweep")
            .expect("the sweep");
        assert_eq!(swept.tx_hash.as_deref(), Some(txid(3).as_str()), "{db}");
        let row = |rows: &[payrecon::store::BalanceRow], addr: &str| {
            rows.iter().find(|r| r.address == addr).cloned().unwrap()
        };
        let rows = store.balances(None, false).await.unwrap();
        // 100 + 50 − 120 − the drain's fee, at the final block (the later 1 TRX not yet).
        assert_eq!(
            row(&rows, &b).balance,
            U256::from(30 * TRX - TX_FEE),
            "{db}"
        );
        assert!(store.balances(None, true).await.unwrap().is_empty(), "{db}");

        // TRX that no transaction shows (sent from inside a contract, which is not read).
        node.fund(&b_hex, "native", 7 * u128::from(TRX));
        node.mine(30);
        let r = check().await.unwrap();
        let shown = r.to_json();
        assert_eq!(
            entry(&r, "balances").gaps.balance_mismatch,
            1,
            "{db}: {shown}"
        );
        let open = open_of(&app, "balance_mismatch").await;
        assert_eq!(open.len(), 1, "{db}");
        assert_eq!(open[0].amount.as_deref(), Some("7000000"), "{db}");

        // Nothing new at the final block: no request; new empty blocks: one batch of balances
        // (bracketed by the head), two log filters, and one read of the new blocks (a payment
        // in and a sweep out would leave the TRX balance where it was).
        let count = |what: &str| node.requests().iter().filter(|p| *p == what).count();
        let before: Vec<usize> = [
            "eth_getBalance",
            "eth_call",
            "eth_getLogs",
            "/wallet/getblockbylimitnext",
        ]
        .iter()
        .map(|w| count(w))
        .collect();
        check().await.unwrap();
        node.mine(2);
        check().await.unwrap();
        let after: Vec<usize> = [
            "eth_getBalance",
            "eth_call",
            "eth_getLogs",
            "/wallet/getblockbylimitnext",
        ]
        .iter()
        .map(|w| count(w))
        .collect();
        let spent: Vec<usize> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
        assert_eq!(spent, vec![1, 1, 2, 1], "{db}: {:?}", node.requests());
    })
    .await;
}
