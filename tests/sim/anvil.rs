//! The real node in the loop (docs/reliability.md, "Reorgs on a real node"): from a seed, orders,
//! token and native payments from anvil's accounts, the fake Chaingateway listing most of them,
//! runs of the real library in between, and reorgs (`anvil_reorg`, `anvil_rollback`): dropped
//! payments re-included elsewhere (same hash, other block and log index), gone, or replaced by
//! another transaction with the same nonce; sometimes while a run is in flight. Checked after every
//! run (audit, nothing backwards, no payment swapped) and after two final runs against the
//! canonical chain (`verify::converged`).
//!
//! `PAYRECON_SIM_ANVIL_SEED=S` runs only seed S; `PAYRECON_SIM_ANVIL_SEEDS=N` runs 0..N
//! (default `SEEDS`; the first `SERVER_SEEDS` also on PostgreSQL and on MariaDB/MySQL). Needs `ANVIL_BIN`.

mod node;
mod reorg;
mod verify;
mod world;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use payrecon::report::Report;
use payrecon::store::NewOrder;
use payrecon_testkit::sandbox::SANDBOX_API_KEY;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::world::{opts, Backend};
use world::{pay, pay_stray, start, top_up, AWorld, Order};

const SEEDS: u64 = 24;
const SERVER_SEEDS: u64 = 4;
const PARALLEL_SEEDS: usize = 3;

/// A counter of the summary line.
pub struct Tally(AtomicU64);

impl Tally {
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }
    fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

const fn tally() -> Tally {
    Tally(AtomicU64::new(0))
}

/// What the seeds did, for the summary line.
pub struct Count {
    pub reorgs: Tally,
    pub rollbacks: Tally,
    pub dropped: Tally,
    pub replaced: Tally,
    pub reincluded: Tally,
    pub rekeyed: Tally,
    pub flagged_gone: Tally,
    pub runs: Tally,
    pub during_run: Tally,
    pub failed_during_reorg: Tally,
    /// Top-ups sent (an order paid in two transfers).
    pub top_ups: Tally,
    /// Orders paid in two transfers with one of them moved or gone at the end.
    pub split_reorged: Tally,
}

static COUNT: Count = Count {
    reorgs: tally(),
    rollbacks: tally(),
    dropped: tally(),
    replaced: tally(),
    reincluded: tally(),
    rekeyed: tally(),
    flagged_gone: tally(),
    runs: tally(),
    during_run: tally(),
    failed_during_reorg: tally(),
    top_ups: tally(),
    split_reorged: tally(),
};

fn replay(seed: u64, backend: Backend) -> String {
    let pg = crate::db_prefix(backend);
    format!("{pg}ANVIL_BIN=$ANVIL_BIN PAYRECON_SIM_ANVIL_SEED={seed} cargo nextest run --cargo-profile bench --test sim sim_anvil")
}

/// Runs the slice and prints the summary; panics listing the failing seeds.
pub async fn run_slice() {
    let Ok(bin) = std::env::var("ANVIL_BIN") else {
        if std::env::var("PAYRECON_TEST_STRICT").is_ok_and(|v| v == "1") {
            panic!("PAYRECON_TEST_STRICT=1 and ANVIL_BIN is not set (simulator on anvil)");
        }
        eprintln!("SKIPPED: ANVIL_BIN is not set (simulator on anvil)");
        return;
    };
    let t0 = Instant::now();
    let Some((seeds, jobs)) = crate::slice_jobs("anvil", SEEDS, SERVER_SEEDS) else {
        return;
    };
    let n_jobs = jobs.len();
    let run = |seed, backend| run_seed(seed, backend, bin.clone());
    let failures = crate::run_jobs("anvil ", jobs, PARALLEL_SEEDS, run, replay).await;
    let c = &COUNT;
    eprintln!(
        "anvil slice: {n_jobs} seed runs ({} seeds) in {:.1?}; runs={} reorgs={} (rollbacks={}, \
         during a run={}) txs dropped={} re-included={} replaced={}; reorged findings: \
         re-keyed={} flagged gone={}; runs failed during a reorg={}; top-ups={} (one of the two \
         payments re-included elsewhere or gone: {})",
        seeds.len(),
        t0.elapsed(),
        c.runs.get(),
        c.reorgs.get(),
        c.rollbacks.get(),
        c.during_run.get(),
        c.dropped.get(),
        c.reincluded.get(),
        c.replaced.get(),
        c.rekeyed.get(),
        c.flagged_gone.get(),
        c.failed_during_reorg.get(),
        c.top_ups.get(),
        c.split_reorged.get(),
    );
    assert!(
        failures.is_empty(),
        "{} failing seed(s); replay each with:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // Coverage where the slice ran 8 seeds or more (a pass that chose one backend runs a few).
    if seeds.len() >= 8 && n_jobs >= 8 {
        assert!(
            c.reincluded.get() > 0 && c.rekeyed.get() > 0,
            "no payment was re-keyed"
        );
        assert!(c.flagged_gone.get() > 0, "no held payment left the chain");
        assert!(
            c.split_reorged.get() > 0,
            "no order paid in two transfers saw one of them reorged"
        );
    }
}

/// One reorg; counts the payments it re-included elsewhere.
async fn do_reorg(w: &AWorld, rng: &mut StdRng) {
    let mut before = Vec::new();
    for p in &w.pays {
        before.push(w.anvil.placed(&p.tx).await);
    }
    let (floor, max_depth) = (1, 6);
    let r = reorg::reorg(
        &w.anvil,
        rng,
        &w.token,
        &w.accounts,
        floor,
        max_depth,
        &COUNT,
    );
    if r.await.is_none() {
        return;
    }
    COUNT.reorgs.add(1);
    for (p, b) in w.pays.iter().zip(before) {
        if let (Some(b), Some(a)) = (b, w.anvil.placed(&p.tx).await) {
            COUNT.reincluded.add(u64::from(a.1 != b.1));
        }
    }
}

type RunTask = tokio::task::JoinHandle<Result<Report, payrecon::engine::EngineError>>;

fn spawn_run(w: &AWorld) -> RunTask {
    let engine = w.app.engine.clone();
    tokio::spawn(async move { engine.run(&opts(false)).await })
}

/// Awaits a run and checks it: no panic, no error, nothing failed (unless a reorg ran
/// during it), no API key; then the ledger between runs.
async fn finish(w: &mut AWorld, task: RunTask, during_reorg: bool) -> Result<Report, String> {
    let r = match task.await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => return Err(format!("Engine::run returned an error: {e}")),
        Err(e) => return Err(format!("Engine::run panicked: {e}")),
    };
    COUNT.runs.add(1);
    let json = r.to_json();
    if r.any_failed() {
        if !during_reorg {
            return Err(format!("a run failed:\n{json}"));
        }
        COUNT.failed_during_reorg.add(1);
    }
    if json.contains(SANDBOX_API_KEY) {
        return Err(format!("the API key is in a report:\n{json}"));
    }
    let rekeyed = r
        .findings
        .iter()
        .filter(|f| f.kind == "reorged" && f.provider == "chain" && f.action == "applied");
    COUNT.rekeyed.add(rekeyed.count() as u64);
    verify::monotone(w).await?;
    crate::check::audit(&w.app.engine.store).await?;
    Ok(r)
}

async fn run(w: &mut AWorld) -> Result<Report, String> {
    let task = spawn_run(w);
    finish(w, task, false).await
}

async fn run_seed(seed: u64, backend: Backend, bin: String) -> Result<(), String> {
    let mut rng = StdRng::seed_from_u64(seed ^ 0x616e_7669_6c00_0000);
    let mut w = start(&mut rng, backend, &bin).await;
    for i in 0..rng.gen_range(6..=16u64) {
        let native = rng.gen_bool(0.25);
        let due = if native {
            u128::from(rng.gen_range(1u32..50)) * 1_000_000_000_000_000
        } else {
            u128::from(rng.gen_range(1u32..500)) * 1_000_000
        };
        w.orders.push(Order {
            order_ref: format!("A{seed}-{i}"),
            pay_to: format!("0x{:040x}", 0x000a_11ce_0000_0000_u64 + i),
            native,
            due,
            pay: None,
            top_up: None,
        });
    }
    let rows: Vec<NewOrder> = w
        .orders
        .iter()
        .map(|o| NewOrder {
            order_ref: o.order_ref.clone(),
            chain: "ethereum".into(),
            pay_to: o.pay_to.clone(),
            asset: if o.native {
                "native".into()
            } else {
                w.token.clone()
            },
            amount_due: payrecon::domain::U256::from(o.due),
        })
        .collect();
    w.app
        .engine
        .store
        .insert_orders(&rows)
        .await
        .map_err(|e| e.to_string())?;

    let mut next_id = 0;
    for _ in 0..rng.gen_range(3..=6) {
        for _ in 0..rng.gen_range(1..=4) {
            let unpaid: Vec<usize> = (0..w.orders.len())
                .filter(|&i| w.orders[i].pay.is_none())
                .collect();
            let short: Vec<usize> = (0..w.orders.len())
                .filter(|&i| {
                    let o = &w.orders[i];
                    o.top_up.is_none() && o.pay.is_some_and(|p| w.pays[p].amount < o.due)
                })
                .collect();
            if !short.is_empty() && rng.gen_bool(0.3) {
                // A top-up: two payments to one order, either of which a reorg may move.
                let o = short[rng.gen_range(0..short.len())];
                top_up(&mut w, &mut rng, o, &mut next_id).await;
                COUNT.top_ups.add(1);
            } else if rng.gen_bool(0.15) || unpaid.is_empty() {
                pay_stray(&mut w, &mut rng, &mut next_id).await;
            } else {
                let o = unpaid[rng.gen_range(0..unpaid.len())];
                pay(&mut w, &mut rng, o, &mut next_id).await;
            }
        }
        w.anvil.mine(rng.gen_range(0..=3)).await;
        match rng.gen_range(0..100) {
            0..=24 => {
                run(&mut w).await?;
            }
            25..=54 => {
                run(&mut w).await?;
                do_reorg(&w, &mut rng).await;
            }
            55..=69 => {
                // The chain changes between the sweep's reads and its writes.
                COUNT.during_run.add(1);
                let task = spawn_run(&w);
                tokio::time::sleep(Duration::from_millis(rng.gen_range(0..40))).await;
                do_reorg(&w, &mut rng).await;
                finish(&mut w, task, true).await?;
            }
            _ => {
                do_reorg(&w, &mut rng).await;
                run(&mut w).await?;
            }
        }
        w.anvil.mine(rng.gen_range(0..=4)).await;
    }
    // No more reorgs: two runs, then the promises against the canonical chain.
    run(&mut w).await?;
    let last = run(&mut w).await?;
    let gone = verify::converged(&w, &last).await?;
    // Reorgs re-key payments without a transition (no event); every final order, whatever
    // the chain did on the way, was fulfilled once.
    let refs: Vec<&str> = w.orders.iter().map(|o| o.order_ref.as_str()).collect();
    let events = w.app.events.clone();
    crate::check::effects_of(&w.app.engine.store, &w.merchant, &refs, || {
        let events = events.clone();
        async move {
            if let Some(d) = events {
                d.flush(std::time::Duration::from_secs(5)).await;
            }
        }
    })
    .await?;
    COUNT.flagged_gone.add(gone);
    if let Some(scratch) = w.scratch.take() {
        drop(w);
        crate::world::drop_scratch(scratch).await;
    }
    Ok(())
}
