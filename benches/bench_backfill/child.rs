//! The run as a separate process: the real `payrecon run --since …` binary against the
//! sandbox servers of this process, so that its CPU and peak RSS are its own (the sandbox
//! holding N records stays here). Its figures come from `PAYRECON_RUN_STATS`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use payrecon::report::Report;

pub struct ChildRun {
    pub wall: Duration,
    pub report: Report,
    pub cpu: Duration,
    pub peak_rss_mib: f64,
    pub statements: u64,
}

/// `target/<profile>/payrecon` beside `target/<profile>/deps/bench_backfill-<hash>`.
pub fn default_binary() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let bin = exe.parent()?.parent()?.join("payrecon");
    bin.is_file().then_some(bin)
}

/// `payrecon run --since 2000-01-01T00:00:00Z --format json` (a backfill of everything).
#[allow(dead_code)] // not every benchmark that includes this file backfills
pub async fn run(
    bin: &Path,
    dir: &Path,
    toml: &str,
    env: &[(String, String)],
) -> anyhow::Result<ChildRun> {
    let args = ["run", "--since", "2000-01-01T00:00:00Z", "--format", "json"];
    run_with(bin, dir, toml, env, &args).await
}

/// `payrecon <args>` (a `run … --format json`), with its figures.
pub async fn run_with(
    bin: &Path,
    dir: &Path,
    toml: &str,
    env: &[(String, String)],
    args: &[&str],
) -> anyhow::Result<ChildRun> {
    let config = dir.join("bench.toml");
    std::fs::write(&config, toml)?;
    let stats = dir.join("run-stats.json");
    let mut cmd = Command::new(bin);
    cmd.arg("--config")
        .arg(&config)
        .args(args)
        .env("PAYRECON_RUN_STATS", &stats)
        .env("PAYRECON_LOG", "error")
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let t0 = Instant::now();
    // The sandbox servers answer on this runtime's other threads while the child runs.
    let out = tokio::task::spawn_blocking(move || cmd.output()).await??;
    let wall = t0.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report = Report::from_json(&stdout).map_err(|e| {
        anyhow::anyhow!(
            "payrecon run exited with {} and no readable report ({e}): {}",
            out.status,
            stdout.chars().take(500).collect::<String>()
        )
    })?;
    let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&stats)?)?;
    let secs = s["cpu_user_s"].as_f64().unwrap_or(0.0) + s["cpu_system_s"].as_f64().unwrap_or(0.0);
    Ok(ChildRun {
        wall,
        report,
        cpu: Duration::from_secs_f64(secs),
        peak_rss_mib: s["peak_rss_kib"].as_f64().unwrap_or(0.0) / 1024.0,
        statements: s["sql_statements"].as_u64().unwrap_or(0),
    })
}
