//! SIGKILL and restart (docs/reliability.md, "Crash tests"): from a seed, orders, transfers and
//! notifications on the sandbox chain and the fake Chaingateway (with latency, so that a run lasts
//! a few hundred ms), then the real `payrecon` binary (`run`, sometimes `serve`) killed with
//! SIGKILL after a delay drawn from the seed, several times in a row. After every kill the ledger
//! must be consistent; after two runs to completion it must have converged (`check::audit`,
//! `check::final_state`).
//!
//! `PAYRECON_SIM_KILL_SEED=S` runs only seed S; `PAYRECON_SIM_KILL_SEEDS=N` runs seeds 0..N on
//! SQLite (default `SQLITE_SEEDS`), the first `PG_SEEDS` of them on PostgreSQL
//! (`PAYRECON_SIM_KILL_PG_SEEDS=M` for more) and the first `MYSQL_SEEDS` on MariaDB/MySQL
//! (`PAYRECON_SIM_KILL_MYSQL_SEEDS`);
//! `PAYRECON_SIM_KILL_TRACE=1` prints every kill.

mod child;
mod probe;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use payrecon::domain::Address;
use payrecon_testkit::sandbox::chaingateway::{notification, Fault};
use payrecon_testkit::sandbox::SANDBOX_TOKEN;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::world::{decimal, Backend, SimOrder, World};
use child::When;

const SQLITE_SEEDS: u64 = 60;
const PG_SEEDS: u64 = 10;
const MYSQL_SEEDS: u64 = 10;
/// Seeds in flight at once (they mostly wait on the injected latency).
const PARALLEL_SEEDS: usize = 4;

/// Counters for the summary line, in the order of `NAMES`.
const NAMES: [&str; 9] = [
    "kills",
    "mid_write",
    "before_write",
    "after_finish",
    "exited_first",
    "serve_kills",
    "applied_after",
    "rounds",
    "aimed_at_first_write",
];
static COUNTS: [AtomicU64; 9] = [const { AtomicU64::new(0) }; 9];
/// Total ms of the runs to completion and their number (the run length the delays aim at).
static RUN_MS: AtomicU64 = AtomicU64::new(0);
static RUNS: AtomicU64 = AtomicU64::new(0);

fn count(i: usize) {
    COUNTS[i].fetch_add(1, Ordering::Relaxed);
}

fn replay(seed: u64, backend: Backend) -> String {
    let pg = crate::db_prefix(backend);
    format!("{pg}PAYRECON_SIM_KILL_SEED={seed} cargo nextest run --cargo-profile bench --test sim sim_kill")
}

/// Runs this backend's slice and prints the summary; panics listing the failing seeds.
pub async fn run_slice(backend: Backend) {
    let t0 = Instant::now();
    let single = crate::env_u64("PAYRECON_SIM_KILL_SEED");
    if single.is_none() && crate::env_u64("PAYRECON_SIM_SEED").is_some() {
        eprintln!("kill slice not run: PAYRECON_SIM_SEED replays one scenario seed");
        return;
    }
    let n = crate::env_u64("PAYRECON_SIM_KILL_SEEDS");
    let seeds: Vec<u64> = match (single, backend) {
        (Some(s), _) => vec![s],
        (None, Backend::Sqlite) => (0..n.unwrap_or(SQLITE_SEEDS)).collect(),
        (None, Backend::Postgres) => {
            let pg = crate::env_u64("PAYRECON_SIM_KILL_PG_SEEDS").unwrap_or(PG_SEEDS);
            (0..n.unwrap_or(SQLITE_SEEDS).min(pg)).collect()
        }
        (None, Backend::MySql) => {
            let my = crate::env_u64("PAYRECON_SIM_KILL_MYSQL_SEEDS").unwrap_or(MYSQL_SEEDS);
            (0..n.unwrap_or(SQLITE_SEEDS).min(my)).collect()
        }
    };
    let jobs = seeds.iter().map(|&s| (s, backend)).collect();
    let failures = crate::run_jobs("kill ", jobs, PARALLEL_SEEDS, run_seed, replay).await;
    let counts: Vec<String> = NAMES
        .iter()
        .zip(&COUNTS)
        .map(|(n, c)| format!("{n}={}", c.load(Ordering::Relaxed)))
        .collect();
    let runs = RUNS.load(Ordering::Relaxed).max(1);
    eprintln!(
        "kill slice ({backend:?}): {} seeds in {:.1?}; {}; mean run to completion {} ms; \
         events received={} redelivered after a kill={}",
        seeds.len(),
        t0.elapsed(),
        counts.join(" "),
        RUN_MS.load(Ordering::Relaxed) / runs,
        crate::merchant::EVENTS_RECEIVED.load(Ordering::Relaxed),
        crate::merchant::EVENTS_REDELIVERED.load(Ordering::Relaxed),
    );
    assert!(
        failures.is_empty(),
        "{} failing seed(s); replay each with:\n{}",
        failures.len(),
        failures.join("\n")
    );
    if seeds.len() >= 10 {
        assert!(
            COUNTS[1].load(Ordering::Relaxed) > 0,
            "no kill landed mid-write: the delays miss the runs"
        );
    }
}

fn addr(base: u64, i: u64) -> Address {
    Address::parse(&format!("0x{:040x}", base + i)).unwrap()
}

/// Lists `w.pays[i]` under notification `id` (and on the failed list).
fn notify(w: &World, id: u64, i: usize, failed: bool) {
    let p = &w.pays[i];
    let (asset, dec) = if p.native {
        ("native", 18)
    } else {
        (SANDBOX_TOKEN, 6)
    };
    let created = jiff::Timestamp::now() - jiff::SignedDuration::from_mins(30);
    let amount = decimal(p.amount, dec);
    let id = format!("k-{id}");
    let rec = notification(&id, &p.tx, asset, p.to.as_str(), Some(&amount), created);
    w.cg.add_notification("ethereum", rec);
    if failed {
        w.cg.mark_failed("ethereum", &id);
    }
}

/// One round of transfers (exact, under- and overpaid, stray, other asset, reverted), mined,
/// and the provider's lists (most listed, some failed, some only later).
fn transfers(w: &mut World, rng: &mut StdRng, next_id: &mut u64) {
    let first_new = w.pays.len();
    for _ in 0..rng.gen_range(3..=12) {
        let pick = rng.gen_range(0..100);
        let (to, native, base) = if pick < 8 {
            (
                addr(0xbeef_0000_0000, rng.gen_range(0..1000)),
                rng.gen_bool(0.3),
                7_000_000u128,
            )
        } else if pick < 12 {
            let o = &w.orders[rng.gen_range(0..w.orders.len())];
            (o.pay_to.clone(), !o.native, 3_000_000u128)
        } else {
            let o = &w.orders[rng.gen_range(0..w.orders.len())];
            (o.pay_to.clone(), o.native, o.due)
        };
        let amount = match rng.gen_range(0..4) {
            0 => base / 2,
            1 => base + base / 10 + 1,
            _ => base,
        };
        let reverted = !native && rng.gen_bool(0.08);
        w.send(&to, native, amount.max(1), reverted);
    }
    w.mine_block();
    w.chain.mine(rng.gen_range(1..=40));
    for i in 0..w.pays.len() {
        let p = if i >= first_new { 0.8 } else { 0.3 };
        if w.pays[i].notified || !rng.gen_bool(p) {
            continue;
        }
        w.pays[i].notified = true;
        *next_id += 1;
        notify(w, *next_id, i, rng.gen_bool(0.25));
    }
}

/// A `serve` configuration: any free port, a tick every second.
fn serve_config(w: &World) -> String {
    let text = w.config_text.replace("127.0.0.1:9187", "127.0.0.1:0");
    format!("{text}\n[schedule]\ncron = \"* * * * * *\"\n")
}

/// One child started and SIGKILLed: `run` after a delay drawn from the seed (up to a bit
/// more than a whole run), `run` a few ms after its first audit row, or `serve` during or
/// after its first scheduled run. Then the ledger must be consistent.
async fn attempt(
    w: &World,
    rng: &mut StdRng,
    no: u32,
    est: &mut Duration,
    (run_cfg, serve_cfg): &(PathBuf, PathBuf),
) -> Result<(), String> {
    let serve = rng.gen_bool(0.15);
    let on_write = rng.gen_bool(0.4);
    let frac = rng.gen_range(0.0..1.1f64);
    let jitter = Duration::from_millis(rng.gen_range(0..40));
    let tick = Duration::from_millis(rng.gen_range(0..1000));
    let before = probe::snap(w).await?;
    let log = w.dir.path().join(format!("attempt-{no}.stderr"));
    let when = if on_write {
        When::FirstWrite {
            store: w.store(),
            audit: before.audit.len() as i64,
            jitter,
            // (`serve` runs at its first tick, within a second.)
            cap: *est * 2
                + if serve {
                    Duration::from_secs(1)
                } else {
                    Duration::ZERO
                },
        }
    } else if serve {
        // The first tick comes within a second of the start.
        When::After(tick + est.mul_f64(frac))
    } else {
        When::After(est.mul_f64(frac))
    };
    let shown = match &when {
        When::After(d) => format!("{d:?} after the start"),
        When::FirstWrite { jitter, cap, .. } => {
            format!("{jitter:?} after its first write (or after {cap:?})")
        }
    };
    let a = if serve {
        std::fs::write(serve_cfg, serve_config(w)).map_err(|e| e.to_string())?;
        child::kill_at(serve_cfg, &["serve"], when, &log).await?
    } else {
        let args = ["run", "--since", "48h", "--format", "json"];
        child::kill_at(run_cfg, &args, when, &log).await?
    };
    let after = probe::snap(w).await?;
    if std::env::var("PAYRECON_SIM_KILL_TRACE").is_ok() {
        eprintln!(
            "no {no} serve={serve} {shown} exited={:?} lived={:?} changed={} cut={}",
            a.exited,
            a.lived,
            after.ledger_differs(&before),
            after.unfinished > before.unfinished
        );
    }
    probe::consistent(w, &before, &after)
        .await
        .map_err(|e| format!("after attempt {no} (killed {shown}): {e}"))?;
    if let (Some(code), true) = (a.exited, serve) {
        let log = std::fs::read_to_string(&log).unwrap_or_default();
        return Err(format!("payrecon serve exited by itself ({code}):\n{log}"));
    }
    if let Some(code) = a.exited {
        count(4);
        *est = a.lived;
        return match code {
            0 | 1 => Ok(()),
            _ => Err(format!("payrecon run exited {code}")),
        };
    }
    count(0);
    if serve {
        count(5);
    }
    if on_write {
        count(8);
    }
    let changed = after.ledger_differs(&before);
    let cut = after.unfinished > before.unfinished;
    count(match (changed, cut) {
        (true, true) => 1,
        (false, _) => 2,
        (true, false) => 3,
    });
    Ok(())
}

/// Runs one seed on `backend`; Err carries what failed.
pub async fn run_seed(seed: u64, backend: Backend) -> Result<(), String> {
    let mut rng = StdRng::seed_from_u64(seed ^ 0x6b69_6c6c_0000_0000);
    let batch = [1usize, 2, 3, 5][rng.gen_range(0..4)];
    let extra = format!("\n[reconcile]\nbatch_size = {batch}\nlease_ttl = \"1s\"\n");
    let mut w = World::start(backend, &extra, false).await;
    w.cg.set_per_page(rng.gen_range(2..=6));
    w.chain
        .set_latency(Duration::from_millis(rng.gen_range(6..=16)));
    w.cg.set_latency(Duration::from_millis(rng.gen_range(6..=16)));
    let run_cfg = w.dir.path().join("run.toml");
    std::fs::write(&run_cfg, &w.config_text).map_err(|e| e.to_string())?;
    let serve_cfg = w.dir.path().join("serve.toml");

    for i in 0..rng.gen_range(8..=30u64) {
        let native = rng.gen_bool(0.25);
        let due = if native {
            u128::from(rng.gen_range(1u32..50)) * 1_000_000_000_000_000
        } else {
            u128::from(rng.gen_range(1u32..500)) * 1_000_000
        };
        w.orders.push(SimOrder {
            order_ref: format!("K{seed}-{i}"),
            pay_to: addr(0x5200_0000, i),
            native,
            due,
        });
    }
    w.insert_orders().await;

    let mut next_id = 0;
    let mut attempt_no = 0;
    // How long an unkilled run of this seed lasts (updated when one exits by itself).
    let mut est = Duration::from_millis(match backend {
        Backend::Sqlite => 350,
        Backend::Postgres | Backend::MySql => 700,
    });
    let cfgs = (run_cfg.clone(), serve_cfg);
    for _ in 0..rng.gen_range(1..=3) {
        count(7);
        transfers(&mut w, &mut rng, &mut next_id);
        if rng.gen_bool(0.3) {
            let f = [
                Fault::ServerError,
                Fault::Unavailable,
                Fault::CloseConnection,
            ];
            w.cg.push_fault(f[rng.gen_range(0..3)].clone(), rng.gen_range(1..=2));
        }
        for _ in 0..rng.gen_range(1..=3) {
            attempt_no += 1;
            attempt(&w, &mut rng, attempt_no, &mut est, &cfgs).await?;
            if rng.gen_bool(0.3) {
                w.chain.mine(rng.gen_range(1..=20));
            }
        }
    }

    // Faults stop; two runs to completion converge.
    w.cg.clear_faults();
    w.chain.fail_next(0);
    let before = probe::snap(&w).await?;
    for n in 0..2 {
        let (report, took) = child::run_to_end(&run_cfg).await?;
        RUN_MS.fetch_add(took.as_millis() as u64, Ordering::Relaxed);
        RUNS.fetch_add(1, Ordering::Relaxed);
        if n == 0 && report["totals"]["applied"].as_u64().unwrap_or(0) > 0 {
            count(6);
        }
        if let Some(id) = report["run_id"].as_str() {
            w.run_ids.push(id.to_string());
        }
    }
    let after = probe::snap(&w).await?;
    probe::consistent(&w, &before, &after).await?;
    crate::check::final_state(&w).await?;
    // Kills between an event's 2xx and its record send it again (same webhook-id): the
    // merchant still fulfils each final order once.
    crate::check::effects(&w).await?;
    if let Some(scratch) = w.scratch.take() {
        drop(w);
        crate::world::drop_scratch(scratch).await;
    }
    Ok(())
}
