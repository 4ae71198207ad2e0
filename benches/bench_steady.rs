//! Steady-state benchmark (docs/configuration.md, "Long notification lists"): a Chaingateway
//! account with a long history, of which a window's worth is recent, reconciled by a scheduled
//! run (the 48 h lookback) after the daily whole read has been done. Prints, in one run: the
//! pages read against the goal (`window pages + 2·log2(pages) + 4`), wall time and CPU of the
//! real `payrecon run` binary against the floor of fetching just the window's pages, its peak
//! RSS; then the time to repair: from a lost notification appearing in the list to its order
//! applied and its event delivered, under `payrecon serve` with the default schedule (every 5
//! minutes).
//!
//! ```text
//! cargo bench --profile release --no-run
//! cargo bench --profile release --bench bench_steady -- [--notifications 1000000] [--window 10000]
//!     [--latency-ms 20] [--per-page 15] [--concurrency 4] [--no-repair]
//!     [--on URL]   (a PostgreSQL or MariaDB/MySQL server: a fresh database there, not SQLite)
//! ```
//! Asserts nothing about time. Exits 1 when the run did not apply what the window needs or
//! the lost payment was never repaired.

#[path = "bench_backfill/child.rs"]
mod child;
#[path = "bench_backfill/procstat.rs"]
#[allow(dead_code)] // the peak-RSS helpers are bench_backfill's
mod procstat;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use alloy::primitives::U256 as EvmU256;
use clap::Parser;
use futures::StreamExt;
use jiff::{SignedDuration, Timestamp};
use payrecon::app::App;
use payrecon::config::Config;
use payrecon::domain::{Address, Attach, BlockRef, PaymentKey, PlannedTransition, State, U256};
use payrecon::store::{ApplyContext, ListRead, NewOrder, Source, Store};
use payrecon_testkit::sandbox::chain::SandboxChain;
use payrecon_testkit::sandbox::chaingateway::{notification, FakeChaingateway};
use payrecon_testkit::sandbox::merchant::{SandboxMerchant, SANDBOX_EVENTS_SECRET};
use payrecon_testkit::sandbox::{config_toml, SANDBOX_API_KEY, SANDBOX_PROVIDER, SANDBOX_TOKEN};
use payrecon_testkit::scratch::{self, Place};

#[path = "bench_steady/repair.rs"]
mod repair;

use repair::repair;

const CHAIN: &str = "ethereum";
/// Of the window's payments, one in this many reached the ledger by no webhook.
const LOST_EVERY: usize = 100;

#[derive(Parser, Debug)]
#[command(about = "payrecon steady-state benchmark (long provider list, scheduled window)")]
struct Args {
    /// Notifications in the account's list, the window's included.
    #[arg(long, default_value_t = 1_000_000)]
    notifications: usize,
    /// Of them, created in the last 48 hours (each a payment on the sandbox chain).
    #[arg(long, default_value_t = 10_000)]
    window: usize,
    /// Added by the fake Chaingateway before each answer.
    #[arg(long, default_value_t = 20)]
    latency_ms: u64,
    #[arg(long, default_value_t = 15)]
    per_page: usize,
    /// Provider pages in flight (`providers.*.max_concurrency`).
    #[arg(long, default_value_t = 4)]
    concurrency: usize,
    /// Skip the time-to-repair part (it waits for the next 5-minute tick).
    #[arg(long)]
    no_repair: bool,
    /// The ledger on a fresh database of this PostgreSQL or MariaDB/MySQL server (dropped at
    /// the end) instead of a SQLite file.
    #[arg(long)]
    on: Option<String>,
}

fn address(n: u64) -> Address {
    Address::parse(&format!("0x{n:040x}")).expect("40 hex digits")
}

fn main() -> ExitCode {
    let args = Args::parse_from(payrecon_testkit::bench::argv());
    let sandbox_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("sandbox")
        .enable_all()
        .build()
        .expect("sandbox runtime");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (chain, rpc_url, cg, merchant, events_url) = sandbox_rt.block_on(async {
        let chain = SandboxChain::new(1);
        let rpc_url = chain.serve().await.expect("sandbox node");
        let (cg, _) = FakeChaingateway::start(SANDBOX_API_KEY).await;
        let (merchant, url) = SandboxMerchant::start().await.expect("merchant endpoint");
        (chain, rpc_url, cg, merchant, url)
    });
    let made = match &args.on {
        Some(server) => {
            match rt.block_on(scratch::create(server, "payrecon_bench", Place::Database)) {
                Ok(made) => Some(made),
                Err(e) => {
                    eprintln!("bench_steady: a database on {server}: {e:#}");
                    return ExitCode::FAILURE;
                }
            }
        }
        None => None,
    };
    let on = made.as_ref().map(|m| m.url.as_str());
    let outcome = rt.block_on(bench(
        &args,
        on,
        &chain,
        &rpc_url,
        &cg,
        &merchant,
        &events_url,
    ));
    if let Some(made) = &made {
        if let Err(e) = rt.block_on(made.drop()) {
            eprintln!("bench_steady: could not drop database {}: {e:#}", made.name);
        }
    }
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("bench_steady: {e:#}");
            ExitCode::FAILURE
        }
    }
}

#[allow(clippy::too_many_arguments)]
async fn bench(
    args: &Args,
    on: Option<&str>,
    chain: &SandboxChain,
    rpc_url: &str,
    cg: &FakeChaingateway,
    merchant: &SandboxMerchant,
    events_url: &str,
) -> anyhow::Result<bool> {
    let (n, w) = (args.notifications, args.window.min(args.notifications));
    let t0 = Instant::now();
    cg.set_per_page(args.per_page);
    let token = Address::parse(SANDBOX_TOKEN)?;
    let payer = address(0xfe);
    // The window's payments on chain, 200 a block, all final.
    let mut pays = Vec::with_capacity(w);
    for start in (0..w).step_by(200) {
        let batch: Vec<(Address, EvmU256)> = (start..(start + 200).min(w))
            .map(|i| {
                (
                    address(0x1_0000_0000 + i as u64),
                    EvmU256::from(1_000_000u64),
                )
            })
            .collect();
        let added = chain.add_token_transfers(&token, &payer, &batch);
        let block = chain.mine_block();
        pays.extend(added.into_iter().map(|(tx, li)| (tx, li, block)));
    }
    chain.mine(70);
    // The history: 200 days up to 49 hours ago, oldest first, as Chaingateway lists it.
    let now = Timestamp::now();
    let old = n - w;
    let span = SignedDuration::from_hours(200 * 24 - 49).as_secs();
    for k in 0..old {
        let at = now - SignedDuration::from_hours(200 * 24)
            + SignedDuration::from_secs(span * k as i64 / old.max(1) as i64);
        let to = format!("0x{:040x}", 0x2_0000_0000u64 + k as u64);
        let tx = format!("0x{:064x}", 0xdead_0000_0000u64 + k as u64);
        let id = format!("o-{k}");
        cg.add_notification(
            CHAIN,
            notification(&id, &tx, SANDBOX_TOKEN, &to, Some("1"), at),
        );
    }
    // The window: the last 47 hours.
    for (i, (tx, _, _)) in pays.iter().enumerate() {
        let at = now - SignedDuration::from_hours(47)
            + SignedDuration::from_secs(47 * 3600 * i as i64 / w.max(1) as i64);
        let to = address(0x1_0000_0000 + i as u64).to_string();
        let id = format!("w-{i}");
        cg.add_notification(
            CHAIN,
            notification(&id, tx.as_str(), SANDBOX_TOKEN, &to, Some("1"), at),
        );
    }
    let per = args.per_page as u64;
    let pages = (n as u64).div_ceil(per);
    let window_pages = (w as u64).div_ceil(per);
    let goal = window_pages + 2 * (pages as f64).log2().ceil() as u64 + 4;
    println!(
        "payrecon bench_steady: {n} notifications ({pages} pages of {per}), {w} in the 48 h \
         window ({window_pages} pages), 1 in {LOST_EVERY} of them lost; provider latency {} ms, \
         concurrency {}; sandbox built in {:.1?}",
        args.latency_ms,
        args.concurrency,
        t0.elapsed()
    );

    let tmp = tempfile::Builder::new()
        .prefix("payrecon-steady-")
        .tempdir()?;
    let db_url = match on {
        Some(url) => url.to_string(),
        None => format!("sqlite://{}", tmp.path().join("steady.db").display()),
    };
    let port = free_port()?;
    let extra = format!("[events]\nurl = \"{events_url}\"\nsecret = \"{SANDBOX_EVENTS_SECRET}\"\n");
    let toml = config_toml(&db_url, cg.base_url(), rpc_url, &extra).replace(
        "listen = \"127.0.0.1:9187\"",
        &format!("listen = \"127.0.0.1:{port}\""),
    );
    let env = [(
        "PAYRECON_PROVIDERS__SANDBOX__MAX_CONCURRENCY".to_string(),
        args.concurrency.to_string(),
    )];
    seed_ledger(&toml, &env, &pays, pages).await?;

    // The scheduled run, as the real binary (its own CPU and RSS).
    cg.set_latency(Duration::from_millis(args.latency_ms));
    cg.reset_counters();
    let bin = child::default_binary()
        .ok_or_else(|| anyhow::anyhow!("`cargo bench --profile release --no-run` first"))?;
    let dir = tempfile::Builder::new()
        .prefix("payrecon-steady-run-")
        .tempdir()?;
    let r = child::run_with(&bin, dir.path(), &toml, &env, &["run", "--format", "json"]).await?;
    let requests = cg.requests();
    let entry = r
        .report
        .providers
        .iter()
        .find(|p| p.provider == SANDBOX_PROVIDER)
        .cloned()
        .ok_or_else(|| anyhow::anyhow!("no provider entry in the report"))?;
    let lost = w.div_ceil(LOST_EVERY) as u64;
    println!(
        "  scheduled run: {} pages read of {} (goal <= {goal}; {requests} provider requests), \
         checked {}, applied {} (lost: {lost}); wall {:.2?}, CPU {:.2?}, peak RSS {:.1} MiB, \
         {} SQL statements",
        entry.pages_read,
        entry.pages_total,
        entry.checked,
        entry.applied,
        r.wall,
        r.cpu,
        r.peak_rss_mib,
        r.statements
    );

    // The floor: the window's pages (from one before the first) fetched and parsed, nothing else.
    let first = (old as u64 / per + 1).saturating_sub(1).max(1);
    let (floor_wall, floor_cpu) = floor(cg.base_url(), first..=pages, args.concurrency).await?;
    println!(
        "  floor: pages {first}..={pages} ({} pages) fetched and parsed at concurrency {}: wall \
         {floor_wall:.2?}, CPU {floor_cpu:.2?}; the run: {:.1}x the wall, {:.1}x the CPU",
        pages - first + 1,
        args.concurrency,
        r.wall.as_secs_f64() / floor_wall.as_secs_f64().max(1e-9),
        r.cpu.as_secs_f64() / floor_cpu.as_secs_f64().max(1e-9),
    );
    let mut ok = entry.applied == lost && entry.status == "ok" && entry.pages_read <= goal + 1;
    if !ok {
        eprintln!(
            "bench_steady: the run did not do what the window needs:\n{}",
            r.report.to_json()
        );
    }
    if !args.no_repair {
        ok &= repair(&bin, &toml, &env, chain, cg, merchant, port, w).await?;
    }
    Ok(ok)
}

/// Orders for the window's payments; all but one in `LOST_EVERY` applied by the merchant's
/// handler (made final long ago: the sweep does not re-read them); the list's last whole read
/// an hour ago (the steady state: the daily one is done).
async fn seed_ledger(
    toml: &str,
    env: &[(String, String)],
    pays: &[(payrecon::domain::TxHash, i64, u64)],
    pages: u64,
) -> anyhow::Result<()> {
    let config = Config::from_toml(toml, env.iter().cloned())?;
    let app = App::build(config).await?;
    let store = &app.engine.store;
    let orders: Vec<NewOrder> = (0..pays.len())
        .map(|i| NewOrder {
            order_ref: format!("S-{i:07}"),
            chain: CHAIN.into(),
            pay_to: address(0x1_0000_0000 + i as u64).to_string(),
            asset: SANDBOX_TOKEN.into(),
            amount_due: U256::from(1_000_000u64),
        })
        .collect();
    store.insert_orders(&orders).await?;
    let ctx = ApplyContext {
        source: Source::Webhook,
        provider: "bench-handler".into(),
        run_id: String::new(),
        events: false,
        retries: Default::default(),
    };
    let batch: Vec<PlannedTransition> = pays
        .iter()
        .enumerate()
        .filter(|(i, _)| i % LOST_EVERY != 0)
        .map(|(i, (tx, li, block))| PlannedTransition {
            order_id: i as i64 + 1,
            order_ref: format!("S-{i:07}"),
            from: State::Unpaid,
            to: State::Final,
            attach: Some(Attach {
                key: PaymentKey {
                    chain: CHAIN.into(),
                    tx_hash: tx.clone(),
                    log_index: *li,
                },
                amount: U256::from(1_000_000u64),
                block: BlockRef {
                    number: *block,
                    hash: String::new(),
                },
            }),
            credit: None,
        })
        .collect();
    for chunk in batch.chunks(5_000) {
        store.apply(chunk, &ctx).await?;
    }
    let backdate =
        "UPDATE orders SET state_changed_at = '2000-01-01T00:00:00Z' WHERE state = 'final'";
    if let Store::Sqlite(p) = store {
        sqlx::query(backdate).execute(p).await?;
    }
    let read = ListRead {
        provider: SANDBOX_PROVIDER,
        chain: CHAIN,
        list: "all",
        pages_read: pages,
        pages_total: pages,
        at: Timestamp::now() - SignedDuration::from_hours(1),
        whole: true,
    };
    store.record_list_read(&read).await?;
    if let Store::Sqlite(p) = store {
        p.close().await;
    }
    Ok(())
}

/// Fetches `pages` with `concurrency` in flight and parses each body: wall and this
/// process's CPU outside the sandbox's threads.
async fn floor(
    base: &str,
    pages: std::ops::RangeInclusive<u64>,
    concurrency: usize,
) -> anyhow::Result<(Duration, Duration)> {
    let http = reqwest::Client::new();
    let cpu0 = own_cpu();
    let t0 = Instant::now();
    let mut bodies = futures::stream::iter(pages)
        .map(|p| {
            let req = http
                .get(format!("{base}/{CHAIN}/webhooks/notifications?page={p}"))
                .bearer_auth(SANDBOX_API_KEY)
                .header("X-Network", "mainnet");
            async move { req.send().await?.bytes().await }
        })
        .buffer_unordered(concurrency);
    while let Some(body) = bodies.next().await {
        let v: serde_json::Value = serde_json::from_slice(&body?)?;
        anyhow::ensure!(v["data"].is_array(), "a page without data");
    }
    Ok((t0.elapsed(), own_cpu().saturating_sub(cpu0)))
}

fn toml_db_url(toml: &str) -> anyhow::Result<String> {
    let v: toml::Table = toml.parse()?;
    v.get("database")
        .and_then(|d| d.get("url"))
        .and_then(|u| u.as_str())
        .map(str::to_string)
        .ok_or_else(|| anyhow::anyhow!("no database.url"))
}

/// CPU of this process's threads outside the sandbox runtime.
fn own_cpu() -> Duration {
    procstat::process_cpu().saturating_sub(procstat::threads_cpu("sandbox"))
}

fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}
