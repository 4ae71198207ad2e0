//! Chain RPC benchmark: receipts per second through `ChainClient`'s batched JSON-RPC against a
//! real anvil node at several batch sizes, and the HTTP requests and JSON-RPC calls of a
//! chain sweep over N open (pending) payments against the sandbox node.
//!
//! ```text
//! cargo bench --profile release --bench bench_receipts -- [--transfers 2000] [--batch-sizes 1,10,100]
//!     [--open 10000] [--sweep-batch-sizes 50,100]     (anvil from $ANVIL_BIN)
//! ```
//! Prints figures; asserts nothing about time. Exits 1 when a lookup misses a transfer or the
//! sweep does not check every open payment.

#[path = "bench_receipts/anvil.rs"]
mod anvil;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use alloy::primitives::U256 as EvmU256;
use clap::Parser;
use payrecon::app::App;
use payrecon::chain::{ChainClient, ChainSettings, Finality, Lookup, TransferQuery};
use payrecon::config::Config;
use payrecon::domain::{
    Address, Asset, Attach, BlockRef, PaymentKey, PlannedTransition, State, TxHash,
};
use payrecon::engine::{RunOptions, Trigger};
use payrecon::store::{ApplyContext, NewOrder, Source, Store};
use payrecon_testkit::sandbox::chain::SandboxChain;
use payrecon_testkit::sandbox::chaingateway::FakeChaingateway;
use payrecon_testkit::sandbox::{config_toml, SANDBOX_API_KEY, SANDBOX_TOKEN};

#[derive(Parser)]
struct Args {
    /// Token transfers sent to anvil and looked up.
    #[arg(long, default_value_t = 2000)]
    transfers: usize,
    #[arg(long, value_delimiter = ',', default_value = "1,10,100")]
    batch_sizes: Vec<usize>,
    /// Open (pending) payments in the ledger for the sweep.
    #[arg(long, default_value_t = 10_000)]
    open: usize,
    #[arg(long, value_delimiter = ',', default_value = "50,100")]
    sweep_batch_sizes: Vec<usize>,
}

fn main() -> ExitCode {
    let args = Args::parse_from(payrecon_testkit::bench::argv());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    match rt.block_on(bench(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench_receipts: {e:#}");
            ExitCode::from(1)
        }
    }
}

async fn bench(args: Args) -> anyhow::Result<()> {
    match std::env::var("ANVIL_BIN") {
        Ok(bin) => receipts_on_anvil(&bin, &args).await?,
        Err(_) => println!("ANVIL_BIN is not set: receipts/s on anvil skipped"),
    }
    sweep_requests(&args).await
}

fn settings(url: &str, batch_size: usize) -> ChainSettings {
    ChainSettings {
        kind: payrecon::domain::ChainKind::Evm,
        api_url: None,
        api_key: None,
        name: "ethereum".into(),
        rpc_urls: vec![url.to_string()],
        chain_id: None,
        max_requests_per_second: None,
        confirmations: 12,
        finality: Finality::Finalized,
        final_depth: 64,
        batch_size,
        timeout: Duration::from_secs(30),
        max_retries: 2,
        recheck_final: Duration::from_secs(3600),
        scan_unpaid: false,
        log_range: 2000,
        max_amount: None,
    }
}

async fn receipts_on_anvil(bin: &str, args: &Args) -> anyhow::Result<()> {
    let anvil = anvil::Anvil::launch(bin, &[]).await;
    let acc = anvil.accounts().await;
    let token = anvil.deploy_token(&acc[0]).await;
    let t0 = Instant::now();
    let hashes = anvil::send_transfers(&anvil, &token, &acc[0], &acc[1], args.transfers).await?;
    println!(
        "anvil: {} token transfers sent and mined in {:.1} s",
        hashes.len(),
        t0.elapsed().as_secs_f64()
    );
    let queries: Vec<TransferQuery> = hashes
        .iter()
        .map(|h| {
            Ok(TransferQuery {
                tx_hash: TxHash::parse(h)?,
                asset: Some(Asset::parse(&token)?),
                to: Some(Address::parse(&acc[1])?),
                log_index: None,
            })
        })
        .collect::<anyhow::Result<_>>()?;
    println!(
        "receipts through ChainClient::lookup (4 batch requests in flight), anvil on loopback:"
    );
    println!("  batch size | HTTP requests |  wall (s) | receipts/s");
    for &size in &args.batch_sizes {
        let chain = ChainClient::new(settings(&anvil.url, size))?;
        let head = chain.head().await?;
        // Warm-up (connections, anvil caches), then the measured pass.
        chain
            .lookup(&head, &queries[..queries.len().min(100)])
            .await?;
        let t = Instant::now();
        let answers = chain.lookup(&head, &queries).await?;
        let wall = t.elapsed().as_secs_f64();
        let found = answers
            .iter()
            .filter(|a| matches!(a, Lookup::Found(t) if t.len() == 1))
            .count();
        anyhow::ensure!(
            found == queries.len(),
            "only {found} of {} transfers found",
            queries.len()
        );
        println!(
            "  {size:>10} | {:>13} | {wall:>9.3} | {:>10.0}",
            queries.len().div_ceil(size),
            queries.len() as f64 / wall
        );
    }
    Ok(())
}

async fn sweep_requests(args: &Args) -> anyhow::Result<()> {
    let n = args.open;
    let chain = SandboxChain::new(1);
    let rpc_url = chain.serve().await?;
    let (_cg, cg_url) = FakeChaingateway::start(SANDBOX_API_KEY).await;
    let dir = tempfile::tempdir()?;
    let db_url = format!("sqlite://{}", dir.path().join("ledger.db").display());
    let store = Store::connect(&db_url, 4).await?;
    store.migrate().await?;

    let token = Address::parse(SANDBOX_TOKEN)?;
    let payer = Address::parse("0x00000000000000000000000000000000000000fe")?;
    let payee = |i: usize| Address::parse(&format!("0x{:040x}", 0x1000_0000u64 + i as u64));
    let mut planned = Vec::with_capacity(n);
    let mut orders = Vec::with_capacity(n);
    for start in (0..n).step_by(200) {
        let end = (start + 200).min(n);
        let payments: Vec<(Address, EvmU256)> = (start..end)
            .map(|i| Ok((payee(i)?, EvmU256::from(25_000_000u64))))
            .collect::<anyhow::Result<_>>()?;
        let txs = chain.add_token_transfers(&token, &payer, &payments);
        let block = chain.mine_block();
        for (i, (tx, log_index)) in (start..end).zip(txs) {
            orders.push(NewOrder {
                order_ref: format!("S-{i}"),
                chain: "ethereum".into(),
                pay_to: payee(i)?.to_string(),
                asset: SANDBOX_TOKEN.into(),
                amount_due: payrecon::domain::U256::from(25_000_000u64),
            });
            planned.push(PlannedTransition {
                order_id: i as i64 + 1,
                order_ref: format!("S-{i}"),
                from: State::Unpaid,
                to: State::Pending,
                attach: Some(Attach {
                    key: PaymentKey {
                        chain: "ethereum".into(),
                        tx_hash: tx,
                        log_index,
                    },
                    amount: payrecon::domain::U256::from(25_000_000u64),
                    block: BlockRef {
                        number: block,
                        hash: String::new(),
                    },
                }),
                credit: None,
            });
        }
    }
    chain.mine(100);
    store.insert_orders(&orders).await?;
    let ctx = ApplyContext {
        source: Source::Webhook,
        provider: "bench".into(),
        run_id: String::new(),
        events: false,
        retries: Default::default(),
    };
    for chunk in planned.chunks(5_000) {
        store.apply(chunk, &ctx).await?;
    }
    drop(store);

    println!("chain sweep over {n} open (pending) payments, sandbox node, SQLite, --dry-run:");
    println!("  rpc_batch_size | swept | HTTP requests | JSON-RPC calls |  wall (s)");
    for &size in &args.sweep_batch_sizes {
        let extra = "[reconcile]\napply = false\nresend = false\n";
        let toml = config_toml(&db_url, &cg_url, &rpc_url, extra).replace(
            "confirmations = 12",
            &format!("confirmations = 12\nrpc_batch_size = {size}"),
        );
        let config = Config::from_toml(&toml, std::iter::empty())?;
        let app = App::build(config).await?;
        let opts = RunOptions {
            since: jiff::Timestamp::now() - jiff::SignedDuration::from_hours(1),
            until: jiff::Timestamp::now(),
            providers: Vec::new(),
            dry_run: true,
            no_resend: true,
            trigger: Trigger::Cli,
            progress: false,
            backfill: false,
        };
        let (r0, c0) = (chain.requests(), chain.calls());
        let t = Instant::now();
        let report = app.engine.run(&opts).await?;
        let wall = t.elapsed().as_secs_f64();
        let swept = report
            .providers
            .iter()
            .find(|p| p.provider == "chain")
            .map_or(0, |p| p.checked);
        anyhow::ensure!(swept as usize == n, "the sweep checked {swept} of {n}");
        println!(
            "  {size:>14} | {swept:>5} | {:>13} | {:>14} | {wall:>9.3}",
            chain.requests() - r0,
            chain.calls() - c0
        );
    }
    Ok(())
}
