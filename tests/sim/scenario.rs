//! The generator and driver: from a seed, orders, transfers, notifications, faults,
//! merchant writes, concurrent instances and dry runs, checked after every step and at the end.
//! Newer classes (`extras`, from a second RNG of the seed): webhook deliveries, provider lists
//! that change while paged, PostgreSQL connections cut mid-run, and a Qvard (`kind = "http"`)
//! provider beside Chaingateway.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use payrecon::domain::State;
use payrecon_testkit::sandbox::chaingateway::{notification, Fault};
use payrecon_testkit::sandbox::SANDBOX_TOKEN;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::world::{decimal, Backend, SimOrder, World};
use crate::{check, extras};
use payrecon_testkit::inspect::Inspect;

mod runs;

use runs::{chain_down_run, dry_run, run_engine, run_one, RUN_ERROR};

/// Fault classes, in the order of `FAULTS` (counted across the process for the summary).
pub const FAULT_NAMES: [&str; 8] = [
    "5xx",
    "503",
    "429",
    "hang",
    "malformed_json",
    "missing_data",
    "dropped_connection",
    "echo_headers",
];
pub static FAULTS: [AtomicU64; 8] = [const { AtomicU64::new(0) }; 8];
/// Sandbox-node HTTP 500s injected.
pub static RPC_FAULTS: AtomicU64 = AtomicU64::new(0);
/// What the seeds exercised, for the summary line (and a check that they did something).
pub const STAT_NAMES: [&str; 10] = [
    "transfers",
    "notifications",
    "dry_runs",
    "concurrent_runs",
    "merchant_writes",
    "transitions",
    "resends",
    "listed_before_mined",
    "at_tolerance_edge",
    "chain_down_runs",
];
pub static STATS: [AtomicU64; 10] = [const { AtomicU64::new(0) }; 10];

pub fn stat(i: usize, n: u64) {
    STATS[i].fetch_add(n, Ordering::Relaxed);
}

fn random_fault(rng: &mut StdRng) -> Fault {
    let class = rng.gen_range(0..FAULT_NAMES.len());
    FAULTS[class].fetch_add(1, Ordering::Relaxed);
    match class {
        0 => Fault::ServerError,
        1 => Fault::Unavailable,
        2 => Fault::TooManyRequests {
            retry_after_secs: 0,
        },
        3 => Fault::Hang(Duration::from_millis(rng.gen_range(5..120))),
        4 => Fault::MalformedJson,
        5 => Fault::MissingData,
        6 => Fault::CloseConnection,
        _ => Fault::EchoHeaders,
    }
}

/// A stray address no order pays to.
fn stray(rng: &mut StdRng) -> payrecon::domain::Address {
    let n: u32 = rng.gen_range(0x10_0000..0x20_0000);
    payrecon::domain::Address::parse(&format!("0x{:040x}", 0xbeef_0000_0000u64 + u64::from(n)))
        .unwrap()
}

fn order_addr(i: usize) -> payrecon::domain::Address {
    payrecon::domain::Address::parse(&format!("0x{:040x}", 0x5100_0000u64 + i as u64)).unwrap()
}

/// `w.pays[i]` as the provider lists it, under notification `id`.
pub fn record(w: &World, id: &str, i: usize) -> serde_json::Value {
    let p = &w.pays[i];
    let (asset, dec) = if p.native {
        ("native", 18)
    } else {
        (SANDBOX_TOKEN, 6)
    };
    let amount = decimal(p.amount, dec);
    let created = jiff::Timestamp::now() - jiff::SignedDuration::from_mins(30);
    notification(id, &p.tx, asset, p.to.as_str(), Some(&amount), created)
}

/// Lists `w.pays[i]` under notification `id` (and on the failed list).
fn notify(w: &World, id: &str, i: usize, failed: bool) {
    stat(1, 1);
    w.cg.add_notification("ethereum", record(w, id, i));
    if failed {
        w.cg.mark_failed("ethereum", id);
    }
}

/// Runs one seed on `backend`; Err carries what failed.
pub async fn run_seed(seed: u64, backend: Backend) -> Result<(), String> {
    let mut rng = StdRng::seed_from_u64(seed);
    // The newer fault classes draw from their own stream: the older ones keep their draws.
    let mut xr = StdRng::seed_from_u64(seed ^ 0x5eed_0fe7a);
    // List shapes (docs/configuration.md, "Long notification lists") from a third stream: the
    // other classes keep their draws.
    let mut lr = StdRng::seed_from_u64(seed ^ 0x1157_5a4e);
    let shape = crate::lists::ListShape::choose(&mut lr);
    let second = rng.gen_bool(0.3);
    let batch = [1usize, 3, 7, 500][rng.gen_range(0..4)];
    // The underpaid tolerance (docs/configuration.md, "Amounts") on some seeds, from a fourth
    // stream (the others keep their draws), with payments at its edge and just past it.
    let mut tr = StdRng::seed_from_u64(seed ^ 0x7017_e4a3);
    let tolerance_bp: u128 = if tr.gen_bool(0.3) {
        [50, 1_000][tr.gen_range(0..2)]
    } else {
        0
    };
    let extra = format!(
        "{}\n[reconcile]\nbatch_size = {batch}\nunderpaid_tolerance = \"{}.{:02}%\"\n",
        shape.config_keys(),
        tolerance_bp / 100,
        tolerance_bp % 100
    );
    let x = extras::choose(&mut xr, backend);
    let mut w = World::start_with(backend, &extra, second, x).await;
    w.list = shape;
    w.tolerance_bp = tolerance_bp;
    let cutting = w.db_proxy.is_some();
    if let Some(h) = w.hooks.as_mut() {
        h.allow_503 = cutting;
    }
    w.cg.set_per_page(rng.gen_range(1..=15));
    shape.apply(&w);
    // Latency on some seeds widens the window in which two instances race.
    if rng.gen_bool(0.3) {
        w.chain
            .set_latency(Duration::from_micros(rng.gen_range(200..3000)));
        w.cg.set_latency(Duration::from_micros(rng.gen_range(200..3000)));
    }

    let n = rng.gen_range(5..=40);
    for i in 0..n {
        let native = rng.gen_bool(0.25);
        let due = if native {
            u128::from(rng.gen_range(1u32..50)) * 1_000_000_000_000_000
        } else {
            u128::from(rng.gen_range(1u32..500)) * 1_000_000
        };
        w.orders.push(SimOrder {
            order_ref: format!("S{seed}-{i}"),
            pay_to: order_addr(i),
            native,
            due,
        });
    }
    w.insert_orders().await;

    let mut next_id = 0u64;
    let mut hook_seq = 0u64;
    let rounds = rng.gen_range(2..=5);
    for _ in 0..rounds {
        let first_new = w.pays.len();
        for _ in 0..rng.gen_range(0..=6) {
            let pick = rng.gen_range(0..100);
            let (to, native, base) = if pick < 8 {
                (stray(&mut rng), rng.gen_bool(0.3), 7_000_000u128)
            } else if pick < 12 {
                // The other asset to an order's address: credits nothing.
                let o = &w.orders[rng.gen_range(0..w.orders.len())];
                (o.pay_to.clone(), !o.native, 3_000_000u128)
            } else {
                let o = &w.orders[rng.gen_range(0..w.orders.len())];
                (o.pay_to.clone(), o.native, o.due)
            };
            let mut amount = match rng.gen_range(0..4) {
                0 => base / 2,             // underpaid
                1 => base + base / 10 + 1, // overpaid
                _ => base,                 // exact
            };
            if tolerance_bp > 0 && pick >= 12 && tr.gen_bool(0.3) {
                // At the tolerance's edge (paid), or one base unit past it (short).
                amount = w.due_after_tolerance(base) - u128::from(tr.gen_bool(0.5));
                stat(8, 1);
            }
            let reverted = !native && rng.gen_bool(0.08);
            w.send(&to, native, amount.max(1), reverted);
            stat(0, 1);
        }
        // The provider's lists: most notified, some failed, some duplicated, some missing,
        // some only in a later round; sometimes listed before the block is mined.
        let early = rng.gen_bool(0.15);
        if !early {
            w.mine_block();
            w.chain.mine(rng.gen_range(1..=40));
        }
        for i in 0..w.pays.len() {
            let p = if i >= first_new { 0.75 } else { 0.15 };
            if w.pays[i].notified || !rng.gen_bool(p) {
                continue;
            }
            w.pays[i].notified = true;
            let copies = if rng.gen_bool(0.1) { 2 } else { 1 };
            for _ in 0..copies {
                next_id += 1;
                let failed = rng.gen_bool(0.25);
                notify(&w, &format!("n-{next_id}"), i, failed);
            }
        }
        if early {
            stat(7, 1);
            step(&mut w, &mut rng, &mut xr, Vec::new()).await?;
            w.mine_block();
            w.chain.mine(rng.gen_range(1..=40));
        }
        extras::plan_list_changes(&mut w, &mut xr, first_new, next_id);
        crate::qvard::plan(&mut w, &mut xr);
        let during = extras::deliver(&mut w, &mut xr, first_new, &mut hook_seq).await?;

        // Faults at random points (consumed by whichever requests come next).
        if rng.gen_bool(0.5) {
            for _ in 0..rng.gen_range(1..=4) {
                let f = random_fault(&mut rng);
                w.cg.push_fault(f, 1);
            }
        }
        if rng.gen_bool(0.1) {
            let k = rng.gen_range(1..=2);
            RPC_FAULTS.fetch_add(k, Ordering::Relaxed);
            w.chain_faults += k;
            w.chain.fail_next(k);
        }

        if rng.gen_bool(0.25) {
            dry_run(&mut w).await?;
        }
        step(&mut w, &mut rng, &mut xr, during).await?;
    }

    // Faults stop; at most two fault-free runs converge.
    w.cg.clear_faults();
    w.cg.flush_changes();
    crate::qvard::clear_faults(&w).await;
    extras::bump(extras::MID_PAGING, w.cg.changes_fired());
    w.chain.fail_next(0);
    // A chain unreachable for a whole run, on some seeds (its own stream: the other draws
    // are kept): the run says so by name, fails, and applies nothing.
    let mut or = StdRng::seed_from_u64(seed ^ 0x0c4a_1d0f);
    if or.gen_bool(0.2) {
        stat(9, 1);
        chain_down_run(&mut w).await?;
    }
    // The fault-free runs log no ERROR (the guard: a store statement that failed, a chain
    // read that failed, anything a person must be told of).
    let (guard, span) = payrecon_testkit::logguard::span();
    for _ in 0..2 {
        use tracing::Instrument as _;
        let report = run_one(&mut w, false, false).instrument(span.clone()).await;
        let logged = payrecon_testkit::logguard::take(guard);
        if !logged.is_empty() {
            return Err(format!(
                "a fault-free run logged {} ERROR(s):\n{}",
                logged.len(),
                logged.join("\n")
            ));
        }
        let report = report?;
        if report.any_failed() {
            return Err(format!("a fault-free run failed:\n{}", report.to_json()));
        }
    }
    check::final_state(&w).await?;
    check::webhooks(&w).await?;
    check::effects(&w).await?;
    crate::qvard::check(&w)?;
    stat(
        5,
        w.store().count("payrecon_transitions").await.unwrap_or(0) as u64,
    );
    stat(6, w.cg.retries().len() as u64);
    if let Some(scratch) = w.scratch.take() {
        drop(w);
        crate::world::drop_scratch(scratch).await;
    }
    Ok(())
}

/// One writing step: a run by the first instance, or both at once; the merchant's handler
/// writes forward during it in some steps; `during` webhook deliveries arrive meanwhile; on
/// some PostgreSQL seeds the database connections are cut at a random instant (a run that
/// fails after the cut is accepted, as long as it fails cleanly).
async fn step(
    w: &mut World,
    rng: &mut StdRng,
    xr: &mut StdRng,
    during: Vec<crate::webhooks::Delivery>,
) -> Result<(), String> {
    let merchant: Vec<(String, State)> = if rng.gen_bool(0.35) {
        (0..rng.gen_range(1..=3))
            .map(|_| {
                let o = &w.orders[rng.gen_range(0..w.orders.len())];
                let to = [State::Pending, State::Confirmed, State::Final][rng.gen_range(0..3)];
                (o.order_ref.clone(), to)
            })
            .collect()
    } else {
        Vec::new()
    };
    let both = w.other.is_some() && rng.gen_bool(0.7);
    stat(3, u64::from(both));
    stat(4, merchant.len() as u64);
    let cut = extras::plan_cut(w, xr);
    let store = w.store().clone();
    let tolerant = cut.is_some();
    let shop = w.merchant.clone();
    let writer = async move {
        for (r, to) in merchant {
            match World::try_merchant_write(&store, &r, to).await {
                // The guide's handler: its conditional update changed the row to final.
                Ok(true) if to == State::Final => shop.fulfil_by_handler(&r),
                Ok(_) => {}
                Err(e) if !tolerant => return Err(format!("the merchant's write failed: {e}")),
                // Cut mid-flight: the update may have committed without its reply.
                Err(_) if to == State::Final => shop.commit_unknown(&r),
                Err(_) => {}
            }
        }
        Ok(())
    };
    let engine = w.app.engine.clone();
    let list_before = (w.cg.changes_fired(), crate::lists::fallbacks(w));
    let fired = Arc::new(AtomicBool::new(false));
    let world = &*w;
    let timed = |engine| {
        let fired = fired.clone();
        async move {
            let r = run_engine(engine, false).await;
            (r, fired.load(Ordering::SeqCst))
        }
    };
    let (first, second, written, posted, ()) = tokio::join!(
        timed(engine),
        async {
            match (&world.other, both) {
                (Some(o), true) => Some(timed(o.engine.clone()).await),
                _ => None,
            }
        },
        writer,
        async {
            match &world.hooks {
                Some(h) if !during.is_empty() => crate::webhooks::post_all(h, &during, true).await,
                _ => Ok(()),
            }
        },
        async {
            if let Some(c) = &cut {
                extras::cut(world, c, &fired).await;
            }
        }
    );
    written?;
    posted?;
    if let Some(h) = w.hooks.as_mut() {
        crate::webhooks::accept(h, &during);
    }
    for (r, cut_before) in std::iter::once(first).chain(second) {
        let r = match r {
            Ok(r) => r,
            Err(e) if cut_before && e.starts_with(RUN_ERROR) => {
                if check::SECRETS.iter().any(|s| e.contains(s)) {
                    return Err(format!("a secret in a run's error: {e}"));
                }
                extras::bump(extras::RUNS_FAILED_BY_CUT, 1);
                continue;
            }
            Err(e) => return Err(e),
        };
        check::report_clean(w, &r).await?;
        let still = list_before == (w.cg.changes_fired(), crate::lists::fallbacks(w));
        crate::lists::check_pages(w, &r, still)?;
        w.run_ids.push(r.run_id.clone());
    }
    // The merchant hears of what this step applied (both instances deliver at once).
    w.deliver_events().await;
    check::monotone(w).await
}
