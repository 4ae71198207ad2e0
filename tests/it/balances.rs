//! The balance check end to end on a real EVM node (anvil) and every backend: the opening
//! balances recorded, not flagged; an unreported token payment and an unreported native
//! payment found by the check and credited through the amounts' rules; a sweep to the
//! treasury recorded; a drain opening `unexpected_outflow`; money no transfer explains opening
//! `balance_mismatch`; a check with nothing new writing nothing and costing the balance
//! batches and the log reads only; a pruned node failing the check by chain and block.

mod bitcoin;
mod nonce;
mod tron;

use payrecon::app::App;
use payrecon::config::Config;
use payrecon::domain::{State, U256};
use payrecon::engine::Trigger;
use payrecon::store::{ExceptionFilter, NewOrder};
use payrecon_testkit::inspect::Inspect;
use payrecon_testkit::rpc_counter::RpcCounter;
use payrecon_testkit::sandbox::chaingateway::FakeChaingateway;
use serde_json::json;

use crate::evm::{deploy_ledger_token, send_native, send_token};
use crate::reconcile::{entry, on_backends, toml_with_chain, KEY};
use crate::support::Anvil;

fn eth(milli: u64) -> U256 {
    U256::from(milli) * U256::from(10u64).pow(U256::from(15u8))
}

fn order(r: &str, to: &str, asset: &str, due: U256) -> NewOrder {
    NewOrder {
        order_ref: r.into(),
        chain: "ethereum".into(),
        pay_to: to.to_lowercase(),
        asset: asset.into(),
        amount_due: due,
    }
}

/// Makes every order an hour old: their addresses' opening is before anvil's first block.
pub(crate) async fn age_orders(app: &App) {
    let hour_ago = (jiff::Timestamp::now() - jiff::SignedDuration::from_hours(1))
        .strftime("%Y-%m-%d %H:%M:%S")
        .to_string();
    let sql = format!("UPDATE orders SET created_at = '{hour_ago}'");
    let store = &app.engine.store;
    payrecon_testkit::on_pool!(store, p => sqlx::query(&sql).execute(p).await.map(|_| ())).unwrap();
}

/// The sample of `metric{chain="ethereum"}` in `app`'s metrics.
fn sample(app: &App, metric: &str) -> String {
    let text = app.engine.metrics.encode();
    let prefix = format!("{metric}{{chain=\"ethereum\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no {prefix} in\n{text}"))
        .to_string()
}

pub(crate) async fn open_of(app: &App, kind: &str) -> Vec<payrecon::store::ExceptionRow> {
    let filter = ExceptionFilter {
        status: Some("open".into()),
        kind: Some(kind.into()),
        limit: 100,
        ..Default::default()
    };
    app.engine.store.list_exceptions(&filter).await.unwrap()
}

#[tokio::test]
async fn a_check_explains_payments_sweeps_and_drains_and_flags_what_nothing_explains() {
    on_backends(|db| async move {
        let Some(anvil) = Anvil::start().await else {
            return;
        };
        let acc = anvil.accounts().await;
        let (payer, deposit_t, deposit_n, treasury, thief) =
            (&acc[0], &acc[5], &acc[6], &acc[7], &acc[8]);
        let token = deploy_ledger_token(&anvil).await;
        let (_cg, cg_url) = FakeChaingateway::start(KEY).await;
        let chain = format!(
            "confirmations = 1\nfinality = \"depth\"\nfinal_depth = 1\nscan_unpaid = false\n\
             treasury = [\"{treasury}\"]"
        );
        let text = toml_with_chain(&db, &cg_url, &anvil.url, &token, &chain, "", "");
        let config = Config::from_toml(&text, std::iter::empty()).unwrap();
        let (lookback, treasuries) = (config.balances.lookback, config.balances.treasury.clone());
        let app = App::build(config.clone()).await.unwrap();
        let store = &app.engine.store;
        store
            .insert_orders(&[
                order("B-T", deposit_t, &token, U256::from(500u32)),
                order("B-N", deposit_n, "native", eth(1000)),
            ])
            .await
            .unwrap();
        age_orders(&app).await;
        let check = || {
            app.engine
                .check_balances(lookback, &treasuries, None, Trigger::Cli)
        };

        // First check: the opening balances (the native deposit address holds anvil's 10,000
        // ETH), recorded, nothing flagged.
        let r = check().await.unwrap();
        let e = entry(&r, "balances");
        assert_eq!(
            (e.status.as_str(), e.checked, e.gaps.total()),
            ("ok", 2, 0),
            "{db}: {}",
            r.to_json()
        );
        let rows = store.balances(None, false).await.unwrap();
        assert_eq!(rows.len(), 2, "{db}");
        assert!(
            rows.iter().all(|r| r.difference.is_zero()),
            "{db}: {rows:?}"
        );
        let native = rows.iter().find(|r| r.asset == "native").unwrap();
        assert_eq!(native.opening_balance, eth(10_000_000), "{db}");

        // Unreported payments in, a sweep to the treasury, a drain elsewhere.
        send_token(&anvil, &token, payer, deposit_t, U256::from(500u32)).await;
        let swept = send_token(&anvil, &token, deposit_t, treasury, U256::from(200u32)).await;
        send_native(&anvil, &acc[1], deposit_n, eth(1000)).await;
        let drained = send_native(&anvil, deposit_n, thief, eth(500)).await;
        anvil.mine(1).await;
        let r = check().await.unwrap();
        let e = entry(&r, "balances");
        assert_eq!(e.status, "ok", "{db}: {}", r.to_json());
        assert_eq!(
            (e.checked, e.applied),
            (2, 2),
            "{db}: both payments credited"
        );
        assert_eq!(
            (e.gaps.unexpected_outflow, e.gaps.balance_mismatch),
            (1, 0),
            "{db}"
        );
        assert_eq!(e.gaps.missing, 2, "{db}: two payments no one reported");
        for r in ["B-T", "B-N"] {
            assert_eq!(
                store.order_by_ref(r).await.unwrap().unwrap().state,
                State::Final,
                "{db}: {r}"
            );
        }
        let drains = open_of(&app, "unexpected_outflow").await;
        assert_eq!(drains.len(), 1, "{db}");
        assert_eq!(drains[0].tx_hash.as_deref(), Some(drained.as_str()), "{db}");
        assert!(open_of(&app, "balance_mismatch").await.is_empty(), "{db}");
        let findings = store.findings().await.unwrap();
        let sweep = findings
            .iter()
            .find(|f| f.kind == "sweep")
            .expect("the sweep is recorded");
        assert_eq!(sweep.tx_hash.as_deref(), Some(swept.as_str()), "{db}");
        assert!(
            store.balances(None, true).await.unwrap().is_empty(),
            "{db}: every difference explained"
        );

        // Nothing new: nothing written, nothing found.
        let before = store.balances(None, false).await.unwrap();
        let r = check().await.unwrap();
        assert_eq!(entry(&r, "balances").gaps.total(), 0, "{db}");
        assert_eq!(store.balances(None, false).await.unwrap(), before, "{db}");

        // Money no transfer explains (set by the node, no transaction): balance_mismatch.
        let now = anvil
            .rpc("eth_getBalance", json!([deposit_n, "latest"]))
            .await;
        let now = U256::from_str_radix(now.as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
        anvil
            .rpc(
                "anvil_setBalance",
                json!([deposit_n, format!("{:#x}", now + U256::from(7u8))]),
            )
            .await;
        anvil.mine(2).await;
        let r = check().await.unwrap();
        assert_eq!(
            entry(&r, "balances").gaps.balance_mismatch,
            1,
            "{db}: {}",
            r.to_json()
        );
        let open = open_of(&app, "balance_mismatch").await;
        assert_eq!(open.len(), 1, "{db}");
        assert_eq!(open[0].amount.as_deref(), Some("7"), "{db}");
        let mismatched = store.balances(None, true).await.unwrap();
        assert_eq!(mismatched.len(), 1, "{db}");
        assert_eq!(mismatched[0].difference.to_string(), "7", "{db}");

        // The metrics: 2 + 2 + 0 + 2 addresses checked, one mismatched; the gauges read back
        // from the database by a new process.
        assert_eq!(sample(&app, "payrecon_balances_checked_total"), "6", "{db}");
        assert_eq!(
            sample(&app, "payrecon_balance_mismatched_addresses"),
            "1",
            "{db}"
        );
        let last: f64 = sample(&app, "payrecon_last_balance_check_timestamp_seconds")
            .parse()
            .unwrap();
        let now = jiff::Timestamp::now().as_second() as f64;
        assert!((now - 60.0..=now + 1.0).contains(&last), "{db}: {last}");
        let restarted = App::build(config).await.unwrap();
        assert_eq!(
            sample(&restarted, "payrecon_balance_mismatched_addresses"),
            "0",
            "{db}: nothing read yet"
        );
        restarted.engine.refresh_gauges().await.unwrap();
        assert_eq!(
            sample(&restarted, "payrecon_balance_mismatched_addresses"),
            "1",
            "{db}"
        );
        assert_ne!(
            sample(&restarted, "payrecon_last_balance_check_timestamp_seconds"),
            "0.0",
            "{db}"
        );
    })
    .await;
}

#[tokio::test]
async fn a_node_without_the_past_state_fails_the_check_by_chain_and_block() {
    // anvil keeping the state of the last 2 blocks only: a pruned node.
    let Some(anvil) = Anvil::start_with(&["--prune-history", "2"]).await else {
        return;
    };
    let (_dir, db) = crate::support::sqlite_url();
    let acc = anvil.accounts().await;
    let token = deploy_ledger_token(&anvil).await;
    let (_cg, cg_url) = FakeChaingateway::start(KEY).await;
    let chain = "confirmations = 1\nfinality = \"depth\"\nfinal_depth = 1\nscan_unpaid = false";
    let text = toml_with_chain(&db, &cg_url, &anvil.url, &token, chain, "", "");
    let config = Config::from_toml(&text, std::iter::empty()).unwrap();
    let (lookback, treasuries) = (config.balances.lookback, config.balances.treasury.clone());
    let app = App::build(config).await.unwrap();
    let store = &app.engine.store;
    store
        .insert_orders(&[order("P-1", &acc[6], "native", eth(1))])
        .await
        .unwrap();
    age_orders(&app).await;
    anvil.mine(10).await;
    let r = app
        .engine
        .check_balances(lookback, &treasuries, None, Trigger::Cli)
        .await
        .unwrap();
    let e = entry(&r, "balances");
    assert_eq!(e.status, "failed", "{}", r.to_json());
    let err = e.error.as_deref().unwrap_or_default();
    assert!(err.starts_with("chain ethereum: "), "{err}");
    assert!(err.contains("at block 0"), "the block is named: {err}");
    assert!(err.contains("archive node"), "what the check needs: {err}");
    assert_eq!(err.matches("chain ethereum").count(), 1, "{err}");
    assert!(
        store.balances(None, false).await.unwrap().is_empty(),
        "no guess saved"
    );
    assert_eq!(
        sample(&app, "payrecon_last_balance_check_timestamp_seconds"),
        "0.0",
        "a failed check is not a check"
    );
}

#[tokio::test]
async fn a_check_with_nothing_new_costs_the_balance_batches_and_the_log_reads_only() {
    // 150 deposit addresses, each with a token and a native order: 300 balances to read.
    let Some(anvil) = Anvil::start().await else {
        return;
    };
    let (rpc, rpc_url) = RpcCounter::start(&anvil.url).await;
    let (_dir, db) = crate::support::sqlite_url();
    let token = deploy_ledger_token(&anvil).await;
    let (_cg, cg_url) = FakeChaingateway::start(KEY).await;
    let chain = "confirmations = 1\nfinality = \"depth\"\nfinal_depth = 1\nscan_unpaid = false\n\
                 rpc_batch_size = 100\nlog_range = 1000";
    let text = toml_with_chain(&db, &cg_url, &rpc_url, &token, chain, "", "");
    let config = Config::from_toml(&text, std::iter::empty()).unwrap();
    let (lookback, treasuries) = (config.balances.lookback, config.balances.treasury.clone());
    let app = App::build(config).await.unwrap();
    let orders: Vec<NewOrder> = (0..150u32)
        .flat_map(|i| {
            let to = format!("0x{:040x}", 0xdead_0000u64 + u64::from(i));
            [
                order(&format!("C-T{i}"), &to, &token, U256::from(1u8)),
                order(&format!("C-N{i}"), &to, "native", U256::from(1u8)),
            ]
        })
        .collect();
    app.engine.store.insert_orders(&orders).await.unwrap();
    age_orders(&app).await;
    let check = || {
        app.engine
            .check_balances(lookback, &treasuries, None, Trigger::Cli)
    };
    let r = check().await.unwrap();
    assert_eq!(entry(&r, "balances").checked, 300, "{}", r.to_json());

    // Five new blocks, no transfer to or from any deposit address.
    anvil.mine(5).await;
    rpc.reset();
    let r = check().await.unwrap();
    let e = entry(&r, "balances");
    assert_eq!(
        (e.status.as_str(), e.checked, e.gaps.total()),
        ("ok", 300, 0),
        "{}",
        r.to_json()
    );
    let counts = rpc.summary();
    // ⌈300/100⌉ balance batches, each mixing eth_getBalance and balanceOf (eth_call).
    assert_eq!(rpc.calls("eth_getBalance"), 150, "{counts}");
    assert_eq!(rpc.calls("eth_call"), 150, "{counts}");
    let balance_requests = rpc
        .requests_with("eth_getBalance")
        .max(rpc.requests_with("eth_call"));
    assert_eq!(balance_requests, 3, "{counts}");
    // ⌈blocks/log_range⌉ × ⌈150/100⌉ × 2 (sender, recipient) log reads.
    assert_eq!(rpc.calls("eth_getLogs"), 2 * 2, "{counts}");
    // The native addresses' nonces at the last check's block and at the final block, in
    // ⌈300/100⌉ batches: none sent anything, so no bisection, no block or receipt read.
    assert_eq!(rpc.calls("eth_getTransactionCount"), 300, "{counts}");
    let nonce_requests = rpc.requests_with("eth_getTransactionCount");
    assert_eq!(nonce_requests, 3, "{counts}");
    for m in ["eth_getTransactionReceipt", "eth_getBlockReceipts"] {
        assert_eq!(rpc.calls(m), 0, "{m}: {counts}");
    }
    let heads = rpc.requests() - balance_requests - nonce_requests - 4;
    assert!(heads <= 2, "only the head besides: {counts}");
}
