//! Backfill benchmark: one real `engine.run` over N provider records against the sandbox
//! Chaingateway and sandbox EVM node on loopback, on SQLite, PostgreSQL and/or MariaDB/MySQL.
//!
//! ```text
//! cargo bench --profile release --bench bench_backfill -- --records 100000
//!     [--db sqlite|postgres|mysql|both|all]   (both: SQLite and PostgreSQL)
//!     [--latency-ms 20] [--rpc-latency-ms 20] [--per-page 15] [--concurrency 4]
//!     [--batch-size 500] [--pg-url URL]   (default $PAYRECON_BENCH_PG_URL)
//!     [--mysql-url URL]   (default $PAYRECON_BENCH_MYSQL_URL)
//!     [--log FILTER]   (e.g. `info` as `payrecon run` logs, or `sqlx::query=debug`)
//!     [--no-log-times]   (a node whose logs carry no `blockTimestamp`: headers read)
//! ```
//! Prints figures; asserts nothing about time. Exits 1 when the run's counts differ from the
//! seeded mix (applied = missing + lagging + failed notifications, and the gaps by kind).
//! The sandbox servers run in this process on their own runtime (threads `sandbox*`): the
//! engine's CPU is the process's minus theirs. For an outside view of memory and CPU:
//! `/usr/bin/time -v cargo bench --profile release --bench bench_backfill -- --records 100000`.

#[path = "bench_backfill/child.rs"]
mod child;
#[path = "bench_backfill/floor.rs"]
mod floor;
#[path = "bench_backfill/procstat.rs"]
mod procstat;
#[path = "bench_backfill/seed.rs"]
mod seed;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Parser, ValueEnum};
use payrecon::app::App;
use payrecon::config::Config;
use payrecon::engine::RunOptions;
use payrecon::report::Report;
use payrecon::stats::statements_issued;
use payrecon::store::Store;
use payrecon_testkit::sandbox::chain::SandboxChain;
use payrecon_testkit::sandbox::chaingateway::FakeChaingateway;
use payrecon_testkit::sandbox::{config_toml, SANDBOX_API_KEY, SANDBOX_TOKEN};
use payrecon_testkit::scratch::{self, Place};

use payrecon_testkit::inspect::Inspect;

#[path = "bench_backfill/report.rs"]
mod report;

use report::{print_figures, verify};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Db {
    Sqlite,
    Postgres,
    Mysql,
    /// SQLite and PostgreSQL.
    Both,
    /// SQLite, PostgreSQL and MariaDB/MySQL.
    All,
}

#[derive(Parser, Debug)]
#[command(about = "payrecon backfill benchmark (sandbox provider + chain on loopback)")]
struct Args {
    /// Provider records (and orders).
    #[arg(long, default_value_t = 100_000)]
    records: usize,
    #[arg(long, value_enum, default_value = "sqlite")]
    db: Db,
    /// Added by the fake Chaingateway before each answer.
    #[arg(long, default_value_t = 20)]
    latency_ms: u64,
    /// Added by the sandbox node before each JSON-RPC answer (default: --latency-ms).
    #[arg(long)]
    rpc_latency_ms: Option<u64>,
    #[arg(long, default_value_t = 15)]
    per_page: usize,
    /// Provider pages in flight (`providers.*.max_concurrency`).
    #[arg(long, default_value_t = 4)]
    concurrency: usize,
    /// `reconcile.batch_size` (default: payrecon's own, 500).
    #[arg(long)]
    batch_size: Option<usize>,
    /// PostgreSQL server to create a fresh database on (dropped at the end).
    #[arg(
        long,
        env = "PAYRECON_BENCH_PG_URL",
        default_value = "postgres://postgres@127.0.0.1:5432/postgres"
    )]
    pg_url: String,
    /// MariaDB/MySQL server to create a fresh database on (dropped at the end).
    #[arg(
        long,
        env = "PAYRECON_BENCH_MYSQL_URL",
        default_value = "mysql://root@127.0.0.1:3306/test"
    )]
    mysql_url: String,
    /// Log to stderr with this filter (e.g. `info`, `sqlx::query=debug`); default: no logs.
    #[arg(long)]
    log: Option<String>,
    /// Run the engine in this process instead of the real `payrecon run` binary (whose CPU
    /// and peak RSS are then mixed with the sandbox's).
    #[arg(long)]
    in_process: bool,
    /// The `payrecon` binary for the child run (default: beside this benchmark, as built by
    /// `cargo bench --profile release --no-run`).
    #[arg(long)]
    payrecon_bin: Option<std::path::PathBuf>,
    /// Events on (`[events] url`): every transition also writes its outbox row. The run's
    /// delivery is left out of the figures (`flush_timeout = "0s"`, an endpoint that refuses
    /// at once), so the apply path is what differs from a run without.
    #[arg(long)]
    events: bool,
    /// Then a second run over the same window, with nothing new (in-process only): its wall
    /// time, CPU, JSON-RPC requests and SQL statements are printed after the first's.
    #[arg(long)]
    second_run: bool,
    /// `chains.ethereum.recheck_final` (default payrecon's, 1h); with `0s` the second run's
    /// payments, final since before it, are settled: no receipt is read for them.
    #[arg(long)]
    recheck_final: Option<String>,
    /// A node whose logs carry no `blockTimestamp` (older than execution-apis #639): every
    /// crediting batch reads its blocks' headers, as payrecon did before it read the logs'.
    #[arg(long)]
    no_log_times: bool,
}

/// What one run measured.
struct Figures {
    db: &'static str,
    /// The run was the real binary in its own process.
    child: bool,
    insert_orders: Duration,
    webhook_seed: Duration,
    wall: Duration,
    cpu_total: Duration,
    cpu_sandbox: Duration,
    rss_before: f64,
    rss_peak: f64,
    provider_requests: u64,
    rpc_requests: u64,
    rpc_calls: u64,
    statements: u64,
    floor: floor::Floor,
    floor_b: floor::FloorB,
    floor_requests: u64,
    report: Report,
    /// Rows in `payrecon_events` after the run (`--events`).
    events_written: Option<i64>,
}

fn main() -> ExitCode {
    let args = Args::parse_from(payrecon_testkit::bench::argv());
    if let Some(filter) = &args.log {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_writer(std::io::stderr)
            .init();
    }
    let sandbox_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("sandbox")
        .enable_all()
        .build()
        .expect("sandbox runtime");
    let engine_rt = tokio::runtime::Builder::new_multi_thread()
        .thread_name("engine")
        .enable_all()
        .build()
        .expect("engine runtime");

    let t0 = Instant::now();
    let (chain, rpc_url, cg) = sandbox_rt.block_on(async {
        let chain = SandboxChain::new(1);
        let rpc_url = chain.serve().await.expect("sandbox node");
        let (cg, _) = FakeChaingateway::start(SANDBOX_API_KEY).await;
        (chain, rpc_url, cg)
    });
    cg.set_per_page(args.per_page);
    cg.set_latency(Duration::from_millis(args.latency_ms));
    let rpc_latency = args.rpc_latency_ms.unwrap_or(args.latency_ms);
    chain.set_latency(Duration::from_millis(rpc_latency));
    chain.set_log_times(!args.no_log_times);
    let ds = seed::build_sandbox(&chain, &cg, args.records);
    println!(
        "payrecon bench_backfill: {} records ({} done by the webhook handler, {} missing, {} lagging, \
         {} failed notifications, {} stray); provider latency {} ms, {} per page, concurrency {}; \
         RPC latency {} ms; sandbox built in {:.1?}",
        ds.n, ds.mix.done, ds.mix.missing, ds.mix.lagging, ds.mix.failed, ds.mix.stray,
        args.latency_ms, args.per_page, args.concurrency, rpc_latency, t0.elapsed()
    );

    let dbs: &[&'static str] = match args.db {
        Db::Sqlite => &["sqlite"],
        Db::Postgres => &["postgres"],
        Db::Mysql => &["mysql"],
        Db::Both => &["sqlite", "postgres"],
        Db::All => &["sqlite", "postgres", "mysql"],
    };
    let mut ok = true;
    for db in dbs {
        match engine_rt.block_on(bench_one(&args, db, &chain, &rpc_url, &cg, &ds)) {
            Ok(f) => {
                print_figures(&args, &ds, &f);
                ok &= verify(&ds.mix, &f.report, &f.floor_b);
            }
            Err(e) => {
                eprintln!("bench_backfill ({db}): {e:#}");
                ok = false;
            }
        }
    }
    drop(cg);
    drop(chain);
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

async fn bench_one(
    args: &Args,
    db: &'static str,
    chain: &SandboxChain,
    rpc_url: &str,
    cg: &FakeChaingateway,
    ds: &seed::Dataset,
) -> anyhow::Result<Figures> {
    let tmp = tempfile::Builder::new()
        .prefix("payrecon-bench-")
        .tempdir()?;
    let admin = match db {
        "postgres" => Some(args.pg_url.as_str()),
        "mysql" => Some(args.mysql_url.as_str()),
        _ => None,
    };
    let (db_url, made) = match admin {
        None => (
            format!("sqlite://{}", tmp.path().join("bench.db").display()),
            None,
        ),
        Some(admin) => {
            let made = scratch::create(admin, "payrecon_bench", Place::Database).await?;
            (made.url.clone(), Some(made))
        }
    };
    let result = bench_on(args, db, &db_url, chain, rpc_url, cg, ds).await;
    if let Some(made) = made {
        if let Err(e) = made.drop().await {
            eprintln!(
                "bench_backfill: could not drop database {}: {e:#}",
                made.name
            );
        }
    }
    result
}

#[allow(clippy::too_many_arguments)]
async fn bench_on(
    args: &Args,
    db: &'static str,
    db_url: &str,
    chain: &SandboxChain,
    rpc_url: &str,
    cg: &FakeChaingateway,
    ds: &seed::Dataset,
) -> anyhow::Result<Figures> {
    let mut extra = match args.batch_size {
        Some(n) => format!("[reconcile]\nbatch_size = {n}\n"),
        None => String::new(),
    };
    if args.events {
        extra.push_str(
            "[events]\nurl = \"http://127.0.0.1:9/refused\"\n\
             secret = \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"\nflush_timeout = \"0s\"\n",
        );
    }
    let toml = config_toml(db_url, cg.base_url(), rpc_url, &extra);
    let mut env = vec![(
        "PAYRECON_PROVIDERS__SANDBOX__MAX_CONCURRENCY".to_string(),
        args.concurrency.to_string(),
    )];
    if let Some(r) = &args.recheck_final {
        let key = format!(
            "PAYRECON_CHAINS__{}__RECHECK_FINAL",
            seed::CHAIN.to_uppercase()
        );
        env.push((key, r.clone()));
    }
    let config = Config::from_toml(&toml, env.clone().into_iter())?;
    let app = App::build(config).await?;
    let seeded = seed::seed_ledger(&app.engine.store, ds).await?;
    // Floor B on the seeded ledger, before the run changes it (it only reads `orders`).
    let floor_b = {
        let rows = ds.rows();
        floor::floor_b(&app.engine.store, seed::CHAIN, SANDBOX_TOKEN, &rows).await?
    };

    cg.reset_counters();
    let (rpc_req0, rpc_calls0) = (chain.requests(), chain.calls());
    let child = !args.in_process;
    // The first run's request counts, taken before a second run adds its own.
    let mut first_counts: Option<(u64, u64, u64)> = None;
    let (report, wall, cpu_total, cpu_sandbox, rss_before, rss_peak, statements) = if child {
        // The child is the only client of the ledger while it runs.
        app.engine.store.close().await;
        drop(app);
        let bin = match &args.payrecon_bin {
            Some(b) => b.clone(),
            None => child::default_binary().ok_or_else(|| {
                anyhow::anyhow!(
                    "no payrecon binary beside this benchmark: `cargo bench --profile release --no-run` first, \
                     or pass --payrecon-bin (or --in-process)"
                )
            })?,
        };
        let dir = tempfile::Builder::new()
            .prefix("payrecon-bench-run-")
            .tempdir()?;
        let r = child::run(&bin, dir.path(), &toml, &env).await?;
        let cpu = r.cpu;
        (
            r.report,
            r.wall,
            cpu,
            Duration::ZERO,
            0.0,
            r.peak_rss_mib,
            r.statements,
        )
    } else {
        let stmts0 = statements_issued();
        let (cpu0, sandbox0) = (procstat::process_cpu(), procstat::threads_cpu("sandbox"));
        let rss_before = procstat::rss_mib();
        procstat::reset_peak_rss();
        let now = jiff::Timestamp::now();
        let opts = RunOptions::window("2000-01-01T00:00:00Z".parse()?, now);
        let t0 = Instant::now();
        let report = app.engine.run(&opts).await?;
        let wall = t0.elapsed();
        let cpu_total = procstat::process_cpu().saturating_sub(cpu0);
        let cpu_sandbox = procstat::threads_cpu("sandbox").saturating_sub(sandbox0);
        let rss_peak = procstat::peak_rss_mib();
        let statements = statements_issued() - stmts0;
        if args.second_run {
            first_counts = Some((cg.requests(), chain.requests(), chain.calls()));
            second_run(&app, chain, &opts).await?;
        }
        app.engine.store.close().await;
        drop(app);
        (
            report,
            wall,
            cpu_total,
            cpu_sandbox,
            rss_before,
            rss_peak,
            statements,
        )
    };
    let (cg_now, rpc_now, calls_now) =
        first_counts.unwrap_or_else(|| (cg.requests(), chain.requests(), chain.calls()));
    let provider_requests = cg_now;
    let rpc_requests = rpc_now - rpc_req0;
    let rpc_calls = calls_now - rpc_calls0;

    cg.reset_counters();
    let floor = floor::floor_a(
        cg.base_url(),
        SANDBOX_API_KEY,
        seed::CHAIN,
        args.concurrency,
    )
    .await?;
    let floor_requests = cg.requests();
    let events_written = if args.events {
        let store = Store::connect(db_url, 1).await?;
        let n = store.count("payrecon_events").await?;
        store.close().await;
        Some(n)
    } else {
        None
    };
    Ok(Figures {
        events_written,
        db,
        child,
        insert_orders: seeded.insert_orders,
        webhook_seed: seeded.webhook_apply,
        wall,
        cpu_total,
        cpu_sandbox,
        rss_before,
        rss_peak,
        provider_requests,
        rpc_requests,
        rpc_calls,
        statements,
        floor,
        floor_b,
        floor_requests,
        report,
    })
}

/// A second run over the same window, nothing new since the first: what it costs.
async fn second_run(app: &App, chain: &SandboxChain, opts: &RunOptions) -> anyhow::Result<()> {
    let (req0, calls0, stmts0) = (chain.requests(), chain.calls(), statements_issued());
    let (cpu0, sandbox0) = (procstat::process_cpu(), procstat::threads_cpu("sandbox"));
    let t0 = Instant::now();
    let report = app.engine.run(opts).await?;
    let wall = t0.elapsed();
    let cpu = procstat::process_cpu().saturating_sub(cpu0);
    let cpu = cpu.saturating_sub(procstat::threads_cpu("sandbox").saturating_sub(sandbox0));
    println!(
        "second run      wall {:.2} s, CPU {:.2} s (payrecon), {} JSON-RPC requests / {} calls, \
         {} SQL statements, applied {}, gaps {}",
        wall.as_secs_f64(),
        cpu.as_secs_f64(),
        chain.requests() - req0,
        chain.calls() - calls0,
        statements_issued() - stmts0,
        report.totals.applied,
        report.totals.gaps,
    );
    Ok(())
}
