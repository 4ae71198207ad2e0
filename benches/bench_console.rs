//! Console benchmark (docs/benchmarks.md, "Operator console"): every page of the operator
//! console (docs/operations.md, "The operator console") against the real release binary's
//! `serve`, on SQLite and PostgreSQL, with a ledger seeded by SQL to `--orders` orders (nine in
//! ten paid, each with its payment and transition), `--exceptions` exceptions (one in five
//! open), `--events` events (one in 500 dead, one in 1,000 pending), `--findings` findings over
//! 30 days, `--runs` runs a minute apart and `--balances` deposit addresses (one in 100 with a
//! difference). Each page is asked `--samples` times, one request at a time, with ids, searches
//! and keyset bounds that vary; prints p50, p99 and max as the client measures them on loopback
//! (server time plus about 0.1 ms of HTTP). Asserts nothing about time; exits 1 when a page
//! does not answer 200.
//!
//! ```text
//! cargo bench --profile release --bench bench_console -- \
//!     [--orders 1000000] [--exceptions 100000] [--events 1000000] [--samples 200] \
//!     [--db sqlite|postgres|both]
//! ```

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Parser, ValueEnum};
use payrecon::store::Store;
use payrecon_testkit::bench;

#[path = "bench_console/seed.rs"]
mod seed;

use seed::seed_sql;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Db {
    Sqlite,
    Postgres,
    Both,
}

#[derive(Parser, Debug)]
#[command(about = "payrecon console benchmark")]
struct Args {
    #[arg(long, default_value_t = 1_000_000)]
    orders: u64,
    #[arg(long, default_value_t = 100_000)]
    exceptions: u64,
    #[arg(long, default_value_t = 1_000_000)]
    events: u64,
    #[arg(long, default_value_t = 300_000)]
    findings: u64,
    #[arg(long, default_value_t = 50_000)]
    runs: u64,
    #[arg(long, default_value_t = 100_000)]
    balances: u64,
    /// Requests per page.
    #[arg(long, default_value_t = 200)]
    samples: u64,
    #[arg(long, value_enum, default_value = "both")]
    db: Db,
    #[arg(long, default_value = "postgres://postgres@127.0.0.1:5432/postgres")]
    pg_url: String,
    /// Keep the SQLite database and the configurations here (default: a temporary directory).
    #[arg(long)]
    dir: Option<PathBuf>,
}

const TOKEN: &str = "0xdac17f958d2ee523a2206206994597c13d831ec7";
const KINDS: &str = "CASE i % 4 WHEN 0 THEN 'amount_mismatch' WHEN 1 THEN 'late_payment' \
                     WHEN 2 THEN 'unknown_payment' ELSE 'reorged' END";

/// The SQL that differs between the two backends.
#[derive(Clone, Copy, PartialEq)]
enum B {
    Sqlite,
    Pg,
}

impl B {
    /// A row source of `i` = 1..=n.
    fn series(self, n: u64) -> String {
        match self {
            B::Sqlite => format!(
                "(WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < {n}) \
                 SELECT i FROM s) AS g"
            ),
            B::Pg => format!("generate_series(1, {n}::bigint) AS g(i)"),
        }
    }
    /// `e` as `0x` and `width` hex digits.
    fn hex(self, e: &str, width: u32) -> String {
        match self {
            B::Sqlite => format!("printf('0x%0{width}x', {e})"),
            B::Pg => format!("'0x' || lpad(to_hex({e}), {width}, '0')"),
        }
    }
    /// The time `secs` seconds ago.
    fn ago(self, secs: &str) -> String {
        match self {
            B::Sqlite => {
                format!("strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-' || ({secs}) || ' seconds')")
            }
            B::Pg => format!("(now() - ({secs}) * interval '1 second')"),
        }
    }
    /// An integer as the backend keeps amounts.
    fn amount(self, e: &str) -> String {
        match self {
            B::Sqlite => format!("CAST({e} AS TEXT)"),
            B::Pg => format!("({e})"),
        }
    }
}

/// The order (its id and number) exception `i` is about: a paid one (never a multiple of 10).
fn order_of_exception(orders: u64, exceptions: u64, i: &str) -> String {
    let step = (orders / exceptions.max(1)).max(1);
    format!("((({i}) * {step} - 1) % {orders} + 1)")
}

/// `serve` with the console on, the operator named by a header from loopback.
async fn start(url: &str, dir: &Path, name: &str) -> Result<bench::Serve, String> {
    let extra = format!(
        "[schedule]\ncron = \"0 0 0 1 1 *\"\n[console]\nenabled = true\n\
         operators_file = \"{}\"\ntrusted_header = \"X-Operator\"\n\
         trusted_proxies = [\"127.0.0.1\"]\n",
        dir.join("no-operators").display()
    );
    bench::serve(url, dir, name, &extra, Duration::from_secs(60)).await
}

/// A page's name and the path of its `k`th sample.
type Page = (&'static str, Box<dyn Fn(u64) -> String>);

/// The pages and the path of their `k`th sample.
fn pages(a: &Args) -> Vec<Page> {
    let (n, x, e, r) = (a.orders, a.exceptions, a.events, a.runs);
    let spread = move |k: u64, m: u64| (k * 7919) % m.max(1) + 1;
    let exc_order = move |k: u64| {
        let i = spread(k, x);
        let step = (n / x.max(1)).max(1);
        (i * step - 1) % n + 1
    };
    vec![
        ("overview", Box::new(|_| "/console".into())),
        (
            "exceptions (open)",
            Box::new(|_| "/console/exceptions".into()),
        ),
        (
            "exceptions by kind",
            Box::new(|k| {
                let kind = [
                    "amount_mismatch",
                    "late_payment",
                    "unknown_payment",
                    "reorged",
                ];
                format!("/console/exceptions?kind={}", kind[(k % 4) as usize])
            }),
        ),
        (
            "exceptions, a later page",
            Box::new(move |k| format!("/console/exceptions?status=all&before={}", spread(k, x))),
        ),
        (
            "search: order ref",
            Box::new(move |k| format!("/console/exceptions?status=all&q=C-{}", exc_order(k))),
        ),
        (
            "search: tx hash",
            Box::new(move |k| format!("/console/exceptions?status=all&q=0x{:064X}", exc_order(k))),
        ),
        (
            "search: address",
            Box::new(move |k| format!("/console/exceptions?status=all&q=0x{:040x}", exc_order(k))),
        ),
        (
            "an exception",
            Box::new(move |k| format!("/console/exceptions/{}", spread(k, x))),
        ),
        (
            "an order's story",
            Box::new(move |k| format!("/console/orders/C-{}", exc_order(k))),
        ),
        ("events (dead)", Box::new(|_| "/console/events".into())),
        (
            "events (pending)",
            Box::new(|_| "/console/events?status=pending".into()),
        ),
        (
            "events, a later page",
            Box::new(move |k| format!("/console/events?status=delivered&before={}", spread(k, e))),
        ),
        ("runs", Box::new(|_| "/console/runs".into())),
        (
            "runs, a later page",
            Box::new(move |k| {
                let i = spread(k, r);
                format!("/console/runs?at={}&id=run-{i}", at_of_run(r, i))
            }),
        ),
        ("balances", Box::new(|_| "/console/balances".into())),
    ]
}

/// Roughly when run `i` started (a keyset bound only needs to be a time).
fn at_of_run(runs: u64, i: u64) -> String {
    let t = jiff::Timestamp::now() - jiff::SignedDuration::from_secs(((runs - i) * 60 + 5) as i64);
    t.to_string()
}

async fn bench(name: &str, url: &str, b: B, args: &Args, dir: &Path) -> Result<(), String> {
    let store = Store::connect(url, 4).await.map_err(|e| e.to_string())?;
    store.migrate().await.map_err(|e| e.to_string())?;
    let t0 = Instant::now();
    for (what, sql) in seed_sql(b, args) {
        let t = Instant::now();
        let done = match &store {
            Store::Sqlite(p) => sqlx::query(&sql)
                .execute(p)
                .await
                .map(|r| r.rows_affected()),
            Store::Postgres(p) => sqlx::query(&sql)
                .execute(p)
                .await
                .map(|r| r.rows_affected()),
            Store::MySql(_) => return Err("SQLite and PostgreSQL only".into()),
        };
        let rows = done.map_err(|e| format!("seed {what}: {e}"))?;
        println!(
            "{name:<8} seeded {rows:>8} {what} in {:.1} s",
            t.elapsed().as_secs_f64()
        );
    }
    if let Store::Postgres(p) = &store {
        // As autovacuum leaves it: statistics and the visibility map.
        sqlx::query("VACUUM ANALYZE")
            .execute(p)
            .await
            .map_err(|e| e.to_string())?;
    }
    println!("{name:<8} seeded in {:.1} s", t0.elapsed().as_secs_f64());
    drop(store);
    let serve = start(url, dir, name).await?;
    let base = &serve.base;
    let client = reqwest::Client::new();
    println!(
        "{name:<8} {:<26} {:>8} {:>8} {:>8} {:>9}",
        "page", "p50 ms", "p99 ms", "max ms", "KiB"
    );
    for (page, path) in pages(args) {
        let mut lat = Vec::new();
        let mut size = 0;
        for k in 0..=args.samples {
            let p = path(k);
            let t = Instant::now();
            let resp = client
                .get(format!("{base}{p}"))
                .header("X-Operator", "bench")
                .send()
                .await
                .map_err(|e| format!("{p}: {e}"))?;
            let status = resp.status();
            let body = resp.bytes().await.map_err(|e| format!("{p}: {e}"))?;
            let us = t.elapsed().as_micros() as u64;
            if status != 200 {
                return Err(format!(
                    "{p} answered {status}: {}",
                    String::from_utf8_lossy(&body)
                ));
            }
            // The first request warms the connection and the caches.
            if k > 0 {
                lat.push(us);
                size = size.max(body.len());
            }
        }
        lat.sort_unstable();
        println!(
            "{name:<8} {page:<26} {:>8.2} {:>8.2} {:>8.2} {:>9.1}",
            bench::pct(&lat, 0.5),
            bench::pct(&lat, 0.99),
            bench::pct(&lat, 1.0),
            size as f64 / 1024.0
        );
    }
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse_from(payrecon_testkit::bench::argv());
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let dir = args.dir.clone().unwrap_or_else(|| tmp.path().to_path_buf());
    let mut runs: Vec<(&str, String, B)> = Vec::new();
    if args.db != Db::Postgres {
        let url = format!("sqlite://{}?mode=rwc", dir.join("console.db").display());
        runs.push(("sqlite", url, B::Sqlite));
    }
    if args.db != Db::Sqlite {
        // A database of its own, dropped first: the bench never touches other tables.
        let db = "payrecon_bench_console";
        match sqlx::PgPool::connect(&args.pg_url).await {
            Ok(p) => {
                let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"))
                    .execute(&p)
                    .await;
                if let Err(e) = sqlx::query(&format!("CREATE DATABASE {db}"))
                    .execute(&p)
                    .await
                {
                    eprintln!("postgres: cannot create {db}: {e}");
                    return ExitCode::FAILURE;
                }
                let base = args.pg_url.rsplit_once('/').map(|(b, _)| b).unwrap_or("");
                runs.push(("postgres", format!("{base}/{db}"), B::Pg));
            }
            Err(e) => println!("postgres: skipped ({e})"),
        }
    }
    for (name, url, b) in runs {
        if let Err(e) = bench(name, &url, b, &args, &dir).await {
            eprintln!("{name}: {e}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
