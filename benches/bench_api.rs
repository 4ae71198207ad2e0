//! API benchmark (docs/api.md): `POST /v1/orders` against the real release binary's `serve`, on
//! SQLite and PostgreSQL, first from one client (one request at a time) and then from
//! `--clients` concurrent clients (one keep-alive connection each). Every request registers a
//! new order; each answer must be 201. Prints requests per second and latency percentiles
//! (p50, p99, max) as the client measures them; asserts nothing about time.
//!
//! ```text
//! cargo bench --profile release --bench bench_api -- \
//!     [--sequential 2000] [--concurrent 20000] [--clients 32] [--db sqlite|postgres|both]
//! ```

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Parser, ValueEnum};
use payrecon_testkit::bench;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Db {
    Sqlite,
    Postgres,
    Both,
}

#[derive(Parser, Debug)]
#[command(about = "payrecon API benchmark")]
struct Args {
    /// Requests from one client, one at a time.
    #[arg(long, default_value_t = 2_000)]
    sequential: usize,
    /// Requests from `--clients` clients at once.
    #[arg(long, default_value_t = 20_000)]
    concurrent: usize,
    #[arg(long, default_value_t = 32)]
    clients: usize,
    #[arg(long, value_enum, default_value = "both")]
    db: Db,
    #[arg(long, default_value = "postgres://postgres@127.0.0.1:5432/postgres")]
    pg_url: String,
}

const TOKEN: &str = "bench-token-0123456789abcdef";

/// `n` registrations from `from` on, by `clients` clients; latencies in microseconds.
async fn load(
    base: &str,
    from: usize,
    n: usize,
    clients: usize,
) -> Result<(f64, Vec<u64>), String> {
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(from));
    let end = from + n;
    let t0 = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let next = next.clone();
        let url = format!("{base}/v1/orders");
        tasks.push(tokio::spawn(async move {
            let client = reqwest::Client::builder()
                .pool_max_idle_per_host(1)
                .build()
                .map_err(|e| e.to_string())?;
            let mut lat = Vec::new();
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= end {
                    return Ok::<_, String>(lat);
                }
                let body = format!(
                    "{{\"order_ref\":\"B-{i}\",\"chain\":\"ethereum\",\"pay_to\":\"0x{:040x}\",\
                     \"asset\":\"native\",\"amount_due\":\"{}\"}}",
                    0x1000_0000u64 + i as u64,
                    1_000_000 + i
                );
                let t = Instant::now();
                let r = client
                    .post(&url)
                    .bearer_auth(TOKEN)
                    .header("content-type", "application/json")
                    .body(body)
                    .send()
                    .await
                    .map_err(|e| e.to_string())?;
                let status = r.status().as_u16();
                let _ = r.bytes().await;
                lat.push(t.elapsed().as_micros() as u64);
                if status != 201 {
                    return Err(format!("order B-{i}: status {status}"));
                }
            }
        }));
    }
    let mut all = Vec::with_capacity(n);
    for t in tasks {
        all.extend(t.await.map_err(|e| e.to_string())??);
    }
    Ok((t0.elapsed().as_secs_f64(), all))
}

async fn bench(name: &str, url: &str, args: &Args, dir: &Path) -> Result<(), String> {
    let extra = format!("[schedule]\ncron = \"0 0 0 1 1 *\"\n[api]\ntoken = \"{TOKEN}\"\n");
    let serve = bench::serve(url, dir, name, &extra, Duration::from_secs(30)).await?;
    let base = &serve.base;
    let runs = [
        ("sequential", 0, args.sequential, 1),
        ("concurrent", args.sequential, args.concurrent, args.clients),
    ];
    for (what, from, n, clients) in runs {
        let (secs, mut lat) = load(base, from, n, clients).await?;
        lat.sort_unstable();
        println!(
            "{name:<8} {what:<10} {clients:>3} client(s) {n:>6} requests {secs:>6.2} s \
             {:>7.0} req/s  p50 {:>6.2} ms  p99 {:>6.2} ms  max {:>7.2} ms",
            n as f64 / secs,
            bench::pct(&lat, 0.50),
            bench::pct(&lat, 0.99),
            bench::pct(&lat, 1.0)
        );
    }
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse_from(payrecon_testkit::bench::argv());
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut runs: Vec<(&str, String)> = Vec::new();
    if args.db != Db::Postgres {
        let url = format!("sqlite://{}?mode=rwc", dir.path().join("api.db").display());
        runs.push(("sqlite", url));
    }
    if args.db != Db::Sqlite {
        // A schema of its own, dropped first: the bench never touches other tables.
        match bench::pg_schema(&args.pg_url, "payrecon_bench_api").await {
            Ok(url) => runs.push(("postgres", url)),
            Err(e) => {
                eprintln!("bench_api: {e}");
                return ExitCode::from(1);
            }
        }
    }
    println!(
        "POST /v1/orders: {} sequential, then {} from {} clients",
        args.sequential, args.concurrent, args.clients
    );
    for (name, url) in &runs {
        if let Err(e) = bench(name, url, &args, dir.path()).await {
            eprintln!("bench_api: {e}");
            return ExitCode::from(1);
        }
    }
    ExitCode::SUCCESS
}
