//! What the benchmarks (`benches/bench_*.rs`, run by `cargo bench --profile release --bench
//! <name>`) share: their command line, the release binary beside the running benchmark, a
//! `payrecon serve` of it on a free port, waited for and killed when dropped, a PostgreSQL
//! schema of a benchmark's own, and percentiles of latencies.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// The benchmark's arguments for its parser: `cargo bench` adds `--bench` to a benchmark
/// without the test harness, which the benchmarks' own options leave out. A benchmark built in
/// the tests' profile (`bench`, payrecon unoptimised: Cargo.toml) measures nothing worth
/// printing: it stops here and says how to build it.
pub fn argv() -> impl Iterator<Item = std::ffi::OsString> {
    if cfg!(debug_assertions) {
        eprintln!(
            "this benchmark was built unoptimised (the tests' profile, `bench`): run it with \
             `cargo bench --profile release --bench <name> -- <options>`"
        );
        std::process::exit(2);
    }
    std::env::args_os().filter(|a| a != "--bench")
}

/// The release binary beside the running benchmark (`target/release/deps/bench_*` →
/// `target/release/payrecon`).
pub fn binary() -> PathBuf {
    let exe = std::env::current_exe().expect("the benchmark's path");
    exe.parent()
        .and_then(Path::parent)
        .map(|d| d.join("payrecon"))
        .expect("target/<profile>/payrecon")
}

/// A running `payrecon serve`, killed when dropped.
pub struct Serve {
    child: std::process::Child,
    /// `http://127.0.0.1:<port>`.
    pub base: String,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `payrecon serve` on a free loopback port with the sandbox's configuration
/// (`sandbox::config_toml`) on the ledger at `url`, its providers and node unreachable, and
/// `extra` sections; written to `dir/<name>.toml`. Waits up to `wait` for `/healthz`.
pub async fn serve(
    url: &str,
    dir: &Path,
    name: &str,
    extra: &str,
    wait: Duration,
) -> Result<Serve, String> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("a free port: {e}"))?;
    let unreachable = "http://127.0.0.1:9";
    let toml = crate::sandbox::config_toml(url, unreachable, unreachable, extra)
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
    let serve = Serve {
        child,
        base: format!("http://127.0.0.1:{port}"),
    };
    let client = reqwest::Client::new();
    let step = Duration::from_millis(100);
    let deadline = std::time::Instant::now() + wait;
    while std::time::Instant::now() < deadline {
        if client
            .get(format!("{}/healthz", serve.base))
            .send()
            .await
            .is_ok()
        {
            return Ok(serve);
        }
        tokio::time::sleep(step).await;
    }
    Err(format!(
        "serve did not answer /healthz within {} s",
        wait.as_secs()
    ))
}

/// A schema of its own on the PostgreSQL server at `pg_url`, dropped first (a benchmark never
/// touches other tables); the URL whose connections use it.
pub async fn pg_schema(pg_url: &str, schema: &str) -> Result<String, String> {
    let p = sqlx::PgPool::connect(pg_url)
        .await
        .map_err(|e| format!("PostgreSQL at {pg_url}: {e}"))?;
    let _ = sqlx::query(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        .execute(&p)
        .await;
    let _ = sqlx::query(&format!("CREATE SCHEMA {schema}"))
        .execute(&p)
        .await;
    let sep = if pg_url.contains('?') { '&' } else { '?' };
    Ok(format!("{pg_url}{sep}options=-c%20search_path%3D{schema}"))
}

/// The `p` quantile (0 to 1) of `sorted` latencies in microseconds, in milliseconds.
pub fn pct(sorted: &[u64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i] as f64 / 1000.0
}
