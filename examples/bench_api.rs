//! API benchmark (docs/api.md): `POST /v1/orders` against the real release binary's `serve`, on
//! SQLite and PostgreSQL, first from one client (one request at a time) and then from
//! `--clients` concurrent clients (one keep-alive connection each). Every request registers a
//! new order; each answer must be 201. Prints requests per second and latency percentiles
//! (p50, p99, max) as the client measures them; asserts nothing about time.
//!
//! ```text
//! cargo build --release && cargo run --release --example bench_api -- \
//!     [--sequential 2000] [--concurrent 20000] [--clients 32] [--db sqlite|postgres|both]
//! ```

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Parser, ValueEnum};

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

/// The release binary beside this example (`target/release/payrecon`).
fn binary() -> PathBuf {
    let exe = std::env::current_exe().expect("the example's path");
    exe.parent()
        .and_then(Path::parent)
        .map(|d| d.join("payrecon"))
        .expect("target/<profile>/payrecon")
}

struct Serve(std::process::Child);
impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

async fn start(url: &str, dir: &Path, name: &str) -> Result<(Serve, String), String> {
    let port = free_port();
    let extra = format!("[schedule]\ncron = \"0 0 0 1 1 *\"\n[api]\ntoken = \"{TOKEN}\"\n");
    let toml = payrecon_testkit::sandbox::config_toml(
        url,
        "http://127.0.0.1:9",
        "http://127.0.0.1:9",
        &extra,
    )
    .replace("127.0.0.1:9187", &format!("127.0.0.1:{port}"));
    let config = dir.join(format!("{name}.toml"));
    std::fs::write(&config, toml).map_err(|e| e.to_string())?;
    let child = std::process::Command::new(binary())
        .arg("--config")
        .arg(&config)
        .arg("serve")
        .env("PAYRECON_LOG", "error")
        .stdout(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("start serve: {e}"))?;
    let serve = Serve(child);
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    for _ in 0..300 {
        if client.get(format!("{base}/healthz")).send().await.is_ok() {
            return Ok((serve, base));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err("serve did not answer /healthz within 30 s".into())
}

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

fn pct(sorted: &[u64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i] as f64 / 1000.0
}

async fn bench(name: &str, url: &str, args: &Args, dir: &Path) -> Result<(), String> {
    let (_serve, base) = start(url, dir, name).await?;
    let runs = [
        ("sequential", 0, args.sequential, 1),
        ("concurrent", args.sequential, args.concurrent, args.clients),
    ];
    for (what, from, n, clients) in runs {
        let (secs, mut lat) = load(&base, from, n, clients).await?;
        lat.sort_unstable();
        println!(
            "{name:<8} {what:<10} {clients:>3} client(s) {n:>6} requests {secs:>6.2} s \
             {:>7.0} req/s  p50 {:>6.2} ms  p99 {:>6.2} ms  max {:>7.2} ms",
            n as f64 / secs,
            pct(&lat, 0.50),
            pct(&lat, 0.99),
            pct(&lat, 1.0)
        );
    }
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut runs: Vec<(&str, String)> = Vec::new();
    if args.db != Db::Postgres {
        let url = format!("sqlite://{}?mode=rwc", dir.path().join("api.db").display());
        runs.push(("sqlite", url));
    }
    if args.db != Db::Sqlite {
        // A schema of its own, dropped first: the bench never touches other tables.
        let schema = "payrecon_bench_api";
        match sqlx::PgPool::connect(&args.pg_url).await {
            Ok(p) => {
                let _ = sqlx::query(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
                    .execute(&p)
                    .await;
                let _ = sqlx::query(&format!("CREATE SCHEMA {schema}"))
                    .execute(&p)
                    .await;
                let sep = if args.pg_url.contains('?') { '&' } else { '?' };
                runs.push((
                    "postgres",
                    format!("{}{sep}options=-c%20search_path%3D{schema}", args.pg_url),
                ));
            }
            Err(e) => {
                eprintln!("bench_api: PostgreSQL at {}: {e}", args.pg_url);
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
