//! Balance-check benchmark (docs/operations.md, "Balances"): N deposit addresses, each with a
//! native and a token order (2N balances), on a real anvil node behind a counting JSON-RPC
//! proxy (`payrecon_testkit::rpc_counter`), SQLite ledger, in process. The first check records
//! the openings; after 5 empty blocks a second check has nothing new; a third finds one native
//! payment among 1,000 new blocks. For each it prints wall time, peak RSS, and the requests
//! against the floor of the EVM cost in docs/operations.md: ⌈2N/batch⌉ balance requests plus
//! ⌈blocks/log_range⌉ × ⌈N/100⌉ × 2 log reads, the native addresses' nonces at both ends
//! (⌈2N/batch⌉ more), no request per address, and the bisection's reads for the one change.
//!
//! ```text
//! ANVIL_BIN=… cargo bench --profile release --bench bench_balances -- [--addresses 10000] [--batch 500]
//! ```
//! Prints figures; asserts nothing about time. Exits 1 when a check fails or finds a gap.

use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use payrecon::app::App;
use payrecon::config::Config;
use payrecon::domain::U256;
use payrecon::engine::Trigger;
use payrecon::store::NewOrder;
use payrecon_testkit::anvil::{ledger_token_init_code, Anvil};
use payrecon_testkit::rpc_counter::RpcCounter;

#[path = "bench_backfill/procstat.rs"]
#[allow(dead_code)] // the CPU readings are bench_backfill's
mod procstat;

#[derive(Parser, Debug)]
#[command(about = "payrecon balance-check benchmark")]
struct Args {
    /// Deposit addresses (each with a native and a token order).
    #[arg(long, default_value_t = 10_000)]
    addresses: u64,
    /// JSON-RPC calls per batch (`rpc_batch_size`).
    #[arg(long, default_value_t = 500)]
    batch: u64,
}

const LOG_RANGE: u64 = 1_000;

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse_from(payrecon_testkit::bench::argv());
    let Ok(bin) = std::env::var("ANVIL_BIN") else {
        eprintln!("ANVIL_BIN is not set");
        return ExitCode::FAILURE;
    };
    let anvil = Anvil::launch(&bin, &[]).await;
    let from = anvil.accounts().await[0].clone();
    let token = anvil.deploy_code(&from, &ledger_token_init_code()).await;
    let (rpc, rpc_url) = RpcCounter::start(&anvil.url).await;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let db = format!("sqlite://{}", dir.path().join("ledger.db").display());
    let text = format!(
        "[database]\nurl = \"{db}\"\n\n[chains.ethereum]\nrpc_url = \"{rpc_url}\"\n\
         confirmations = 1\nfinality = \"depth\"\nfinal_depth = 1\nscan_unpaid = false\n\
         rpc_batch_size = {}\nlog_range = {LOG_RANGE}\ntimeout = \"60s\"\n",
        args.batch
    );
    let config = Config::from_toml(&text, std::iter::empty()).expect("a valid config");
    let (lookback, treasury) = (config.balances.lookback, config.balances.treasury.clone());
    let app = App::build(config).await.expect("App::build");
    let store = &app.engine.store;
    let n = args.addresses;
    for chunk in (0..n).collect::<Vec<_>>().chunks(10_000) {
        let orders: Vec<NewOrder> = chunk
            .iter()
            .flat_map(|i| {
                let to = format!("0x{:040x}", 0xbeef_0000_0000u64 + i);
                [
                    (format!("T{i}"), token.clone()),
                    (format!("N{i}"), "native".into()),
                ]
                .map(|(r, asset)| NewOrder {
                    order_ref: r,
                    chain: "ethereum".into(),
                    pay_to: to.clone(),
                    asset,
                    amount_due: U256::from(1u8),
                })
            })
            .collect();
        store.insert_orders(&orders).await.expect("orders");
    }
    let hour_ago = (jiff::Timestamp::now() - jiff::SignedDuration::from_hours(1))
        .strftime("%Y-%m-%d %H:%M:%S")
        .to_string();
    if let payrecon::store::Store::Sqlite(p) = store {
        sqlx::query(&format!("UPDATE orders SET created_at = '{hour_ago}'"))
            .execute(p)
            .await
            .expect("age the orders");
    }
    println!(
        "balance check: {n} addresses, {} balances, batch {}, log_range {LOG_RANGE}",
        2 * n,
        args.batch
    );
    let mut ok = true;
    // Third: one native payment to one address among 1,000 new blocks (its order is paid
    // once, no gap): the bisection's reads beside the batches.
    let paid_to = format!("0x{:040x}", 0xbeef_0000_0000u64);
    for (what, mine) in [
        ("first (openings)", 0u64),
        ("nothing new", 5),
        ("one native change", 1_000),
    ] {
        if mine == 1_000 {
            anvil
                .send(&serde_json::json!({"from": from, "to": paid_to, "value": "0x1"}))
                .await;
        }
        if mine > 0 {
            anvil.mine(mine).await;
        }
        rpc.reset();
        procstat::reset_peak_rss();
        let t0 = Instant::now();
        let report = app
            .engine
            .check_balances(lookback, &treasury, None, Trigger::Cli)
            .await
            .expect("the check starts");
        let wall = t0.elapsed();
        let e = report.providers.iter().find(|p| p.provider == "balances");
        let (status, checked, gaps) = e.map_or(("none".into(), 0, 0), |e| {
            (e.status.clone(), e.checked, e.gaps.total())
        });
        // The third check's payment pays an order found on chain: one `missing` gap.
        let want_gaps = u64::from(mine == 1_000);
        ok &= status == "ok" && gaps == want_gaps && checked == 2 * n;
        let balance_requests = rpc
            .requests_with("eth_getBalance")
            .max(rpc.requests_with("eth_call"));
        let floor = (2 * n).div_ceil(args.batch);
        // The payment's own block besides the ones mined.
        let blocks = mine.max(1) + u64::from(mine == 1_000);
        let logs_floor = blocks.div_ceil(LOG_RANGE) * n.div_ceil(100) * 2;
        println!(
            "  {what:<17} {status}, {checked} checked, {gaps} gaps; wall {:.2} s; peak RSS {:.0} MiB",
            wall.as_secs_f64(),
            procstat::peak_rss_mib()
        );
        let nonce_requests = rpc.requests_with("eth_getTransactionCount");
        println!(
            "  {:<17} requests {} (balances {balance_requests}, floor {floor}; nonces \
             {nonce_requests}; eth_getLogs {}, formula {logs_floor}; other {}); calls {} \
             eth_getBalance + {} eth_call + {} eth_getTransactionCount",
            "",
            rpc.requests(),
            rpc.calls("eth_getLogs"),
            rpc.requests() - balance_requests - nonce_requests - rpc.calls("eth_getLogs"),
            rpc.calls("eth_getBalance"),
            rpc.calls("eth_call"),
            rpc.calls("eth_getTransactionCount"),
        );
        if mine == 1_000 {
            // Single balance reads besides the batches: the bisection over 1,000 blocks.
            let bisect = rpc.calls("eth_getBalance") - n;
            println!(
                "  {:<17} bisection: {bisect} balance reads for one change in {mine} blocks \
                 (log2 {mine} = {:.1})",
                "",
                (mine as f64).log2()
            );
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        eprintln!("a check failed, found a gap, or checked fewer balances than it should");
        ExitCode::FAILURE
    }
}
