//! The simulator's slices: a slice's seeds and backends (`slice_jobs`), its jobs run a few at
//! a time with a replay command for each failure (`run_jobs`), its summary and verdict
//! (`report_slice`), and all three for a slice with counters by name (`run_slice`).

use std::sync::atomic::Ordering;
use std::time::Instant;

use futures::StreamExt;

use crate::world::Backend;
use crate::{db_prefix, env_u64, mysql_enabled, pg_enabled, sqlite_enabled};

/// A seed on a backend.
pub type Job = (u64, Backend);

/// The seeds and jobs of a slice named `what` (`PAYRECON_SIM_<WHAT>_SEED` replays one,
/// `PAYRECON_SIM_<WHAT>_SEEDS` counts them, `default` otherwise): every seed on SQLite, the
/// first `server_seeds` (or the replayed one) on PostgreSQL and on MariaDB/MySQL too when they
/// are there. `None` (with a line on stderr) when `PAYRECON_SIM_SEED` replays a scenario seed
/// instead.
pub fn slice_jobs(what: &str, default: u64, server_seeds: u64) -> Option<(Vec<u64>, Vec<Job>)> {
    let upper = what.to_uppercase();
    let single = env_u64(&format!("PAYRECON_SIM_{upper}_SEED"));
    if single.is_none() && env_u64("PAYRECON_SIM_SEED").is_some() {
        eprintln!("{what} slice not run: PAYRECON_SIM_SEED replays one scenario seed");
        return None;
    }
    let seeds: Vec<u64> = match single {
        Some(s) => vec![s],
        None => (0..env_u64(&format!("PAYRECON_SIM_{upper}_SEEDS")).unwrap_or(default)).collect(),
    };
    let (pg, my) = (pg_enabled(), mysql_enabled());
    let mut jobs = Vec::new();
    for &s in &seeds {
        if sqlite_enabled() {
            jobs.push((s, Backend::Sqlite));
        }
        let shared = single.is_some() || s < server_seeds;
        if pg && shared {
            jobs.push((s, Backend::Postgres));
        }
        if my && shared {
            jobs.push((s, Backend::MySql));
        }
    }
    Some((seeds, jobs))
}

/// A slice's summary line (its counters by name), then its verdict: panics listing the
/// failing seeds' replay commands, or when a slice of 8 seeds or more (8 runs or more) left a
/// counter at 0.
pub fn report_slice(
    what: &str,
    t0: Instant,
    (n_jobs, n_seeds): (usize, usize),
    names: &[&str],
    counts: &[std::sync::atomic::AtomicU64],
    failures: &[String],
) {
    let shown: Vec<String> = names
        .iter()
        .zip(counts)
        .map(|(n, c)| format!("{n}={}", c.load(Ordering::Relaxed)))
        .collect();
    eprintln!(
        "{what} slice: {n_jobs} seed runs ({n_seeds} seeds) in {:.1?}; {}",
        t0.elapsed(),
        shown.join(" ")
    );
    assert!(
        failures.is_empty(),
        "{} failing seed(s); replay each with:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // Coverage is asserted where the slice ran 8 seeds or more (a pass that chose one backend,
    // `PAYRECON_TEST_BACKENDS`, runs a few: its first pass asserted it).
    if n_seeds >= 8 && n_jobs >= 8 {
        for (n, c) in names.iter().zip(counts) {
            assert!(c.load(Ordering::Relaxed) > 0, "no seed exercised {n}");
        }
    }
}

/// Runs the slice named `what` (test `sim_<what>`): its seeds (`slice_jobs`: `seeds` by
/// default, the first `server_seeds` on the servers too), `parallel` at a time, then its
/// summary and verdict (`report_slice`, the counters `names`/`counts`). A failing seed prints
/// the command that replays it.
pub async fn run_slice<F, Fut>(
    what: &str,
    (seeds, server_seeds, parallel): (u64, u64, usize),
    (names, counts): (&[&str], &[std::sync::atomic::AtomicU64]),
    run: F,
) where
    F: Fn(u64, Backend) -> Fut,
    Fut: std::future::Future<Output = Result<(), String>> + Send + 'static,
{
    let t0 = Instant::now();
    let Some((seeds, jobs)) = slice_jobs(what, seeds, server_seeds) else {
        return;
    };
    let upper = what.to_uppercase();
    let replay = |seed, backend| {
        format!(
            "{}PAYRECON_SIM_{upper}_SEED={seed} cargo nextest run --cargo-profile bench --test sim \
             sim_{what}",
            db_prefix(backend)
        )
    };
    let n_jobs = jobs.len();
    let failures = run_jobs(&format!("{what} "), jobs, parallel, run, replay).await;
    report_slice(what, t0, (n_jobs, seeds.len()), names, counts, &failures);
}

/// Runs `(seed, backend)` jobs, `parallel` at a time, each on its own task (a panic is a
/// finding, not a crash of the simulator). Every failure is printed with the command that
/// replays it (`replay`); returns those commands. `what` names the slice ("kill ", ...).
pub async fn run_jobs<F, Fut>(
    what: &str,
    jobs: Vec<(u64, Backend)>,
    parallel: usize,
    run: F,
    replay: impl Fn(u64, Backend) -> String,
) -> Vec<String>
where
    F: Fn(u64, Backend) -> Fut,
    Fut: std::future::Future<Output = Result<(), String>> + Send + 'static,
{
    let replay = &replay;
    futures::stream::iter(jobs)
        .map(|(seed, backend)| {
            let task = tokio::spawn(run(seed, backend));
            async move {
                let err = match task.await {
                    Ok(Ok(())) => return None,
                    Ok(Err(e)) => e,
                    Err(e) => format!("the simulator panicked: {e}"),
                };
                eprintln!(
                    "{what}seed {seed} ({backend:?}) FAILED: {err}\nreplay: {}",
                    replay(seed, backend)
                );
                Some(replay(seed, backend))
            }
        })
        .buffer_unordered(parallel)
        .filter_map(|f| async move { f })
        .collect()
        .await
}
