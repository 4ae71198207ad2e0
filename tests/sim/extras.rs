//! The generator's newer fault classes, drawn from a second RNG of the seed (so the older
//! classes keep their draws): webhook deliveries, lists that change while they are paged,
//! and the PostgreSQL connection cut mid-run.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use payrecon_testkit::sandbox::chaingateway::ListChange;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::Rng;

use crate::webhooks::{self, count, Delivery};
use crate::world::{Backend, Extras, World};
use payrecon_testkit::inspect::Inspect;

/// Counted across the process for the summary line.
pub const NAMES: [&str; 9] = [
    "list_changes",
    "head_inserts",
    "failed_marks",
    "failed_unmarks",
    "changes_mid_paging",
    "db_cuts",
    "db_conns_cut",
    "db_refusals",
    "runs_failed_by_cut",
];
pub static COUNTS: [AtomicU64; 9] = [const { AtomicU64::new(0) }; 9];
const LIST_CHANGES: usize = 0;
const HEAD_INSERTS: usize = 1;
const FAILED_MARKS: usize = 2;
const FAILED_UNMARKS: usize = 3;
pub const MID_PAGING: usize = 4;
const DB_CUTS: usize = 5;
const DB_CONNS_CUT: usize = 6;
const DB_REFUSALS: usize = 7;
pub const RUNS_FAILED_BY_CUT: usize = 8;

pub fn bump(i: usize, n: u64) {
    COUNTS[i].fetch_add(n, Ordering::Relaxed);
}

/// Which newer classes this seed uses.
pub fn choose(xr: &mut StdRng, backend: Backend) -> Extras {
    Extras {
        webhooks: xr.gen_bool(0.4),
        db_proxy: backend == Backend::Postgres && xr.gen_bool(0.7),
        qvard: xr.gen_bool(0.25),
    }
}

/// A made-up transaction hash (no transfer has it).
fn fake_tx(xr: &mut StdRng) -> String {
    format!("0x{:032x}{:032x}", xr.gen::<u128>(), xr.gen::<u128>())
}

/// Schedules changes of the provider's lists after a few more pages are served: records
/// inserted at the head (new ids for new or already listed transfers), ids marked or
/// unmarked failed. Changes still waiting when faults stop are made then.
pub fn plan_list_changes(w: &mut World, xr: &mut StdRng, first_new: usize, next_id: u64) {
    if !xr.gen_bool(0.35) {
        return;
    }
    let base = w.cg.pages_served();
    for _ in 0..xr.gen_range(1..=3) {
        let after = base + xr.gen_range(1..=4);
        let change = match xr.gen_range(0..3) {
            0 if !w.pays.is_empty() => {
                let mut recs = Vec::new();
                for _ in 0..xr.gen_range(1..=4) {
                    // Mostly this round's transfers (listed only through the insert).
                    let i = if first_new < w.pays.len() && xr.gen_bool(0.7) {
                        xr.gen_range(first_new..w.pays.len())
                    } else {
                        xr.gen_range(0..w.pays.len())
                    };
                    let id = format!("h-{}-{}", base, xr.gen::<u32>());
                    recs.push(crate::scenario::record(w, &id, i));
                    w.pays[i].notified = true;
                }
                bump(HEAD_INSERTS, recs.len() as u64);
                if w.list.newest_first {
                    // Served newest first, the end of the list is the head of page 1.
                    ListChange::Append(recs)
                } else {
                    ListChange::InsertAtHead(recs)
                }
            }
            1 if next_id > 0 => {
                let ids: Vec<String> = (0..xr.gen_range(1..=3))
                    .map(|_| format!("n-{}", xr.gen_range(1..=next_id)))
                    .collect();
                bump(FAILED_MARKS, ids.len() as u64);
                ListChange::MarkFailed(ids)
            }
            2 if next_id > 0 => {
                let ids: Vec<String> = (0..xr.gen_range(1..=3))
                    .map(|_| format!("n-{}", xr.gen_range(1..=next_id)))
                    .collect();
                bump(FAILED_UNMARKS, ids.len() as u64);
                ListChange::UnmarkFailed(ids)
            }
            _ => continue,
        };
        bump(LIST_CHANGES, 1);
        w.cg.change_after_pages(after, "ethereum", change);
    }
}

/// This round's deliveries: most mined transfers of the round, a few older ones (late when a
/// run applied them already), under their listed id or a delivery-only id; some tampered.
/// Posts part of them now (in order, reordered, all at once, each several times at once,
/// duplicated) and returns the rest, to be posted while the next step runs.
pub async fn deliver(
    w: &mut World,
    xr: &mut StdRng,
    first_new: usize,
    seq: &mut u64,
) -> Result<Vec<Delivery>, String> {
    if w.hooks.is_none() {
        return Ok(Vec::new());
    }
    let mut ds = Vec::new();
    for i in 0..w.pays.len() {
        let p = &w.pays[i];
        let chance = if i >= first_new { 0.6 } else { 0.1 };
        if p.block == 0 || !xr.gen_bool(chance) {
            continue;
        }
        *seq += 1;
        let id = format!("w-{seq}");
        ds.push(webhooks::delivery(
            i,
            &id,
            &p.tx,
            p.to.as_str(),
            p.native,
            p.amount,
        ));
        if i < first_new && paid_by(w, i).await {
            count(webhooks::LATE, 1);
        }
    }
    if ds.is_empty() {
        return Ok(ds);
    }
    for _ in 0..xr.gen_range(0..=2) {
        let d = ds[xr.gen_range(0..ds.len())].clone();
        *seq += 1;
        let other = fake_tx(xr);
        let how = xr.gen_range(0..3);
        ds.push(webhooks::tamper(&d, how, &format!("t-{seq}"), &other));
    }
    count(webhooks::DELIVERIES, ds.len() as u64);
    if xr.gen_bool(0.3) {
        count(webhooks::DURING_RUN, ds.len() as u64);
        return Ok(ds);
    }
    let hooks = w.hooks.as_mut().expect("hooks");
    match xr.gen_range(0..4) {
        0 => webhooks::post_all(hooks, &ds, false).await?,
        1 => {
            ds.shuffle(xr);
            count(webhooks::REORDERED, 1);
            webhooks::post_all(hooks, &ds, false).await?;
        }
        2 => {
            count(webhooks::CONCURRENT, ds.len() as u64);
            webhooks::post_all(hooks, &ds, true).await?;
        }
        _ => {
            // The same delivery several times at once, one after another.
            for d in &ds {
                let n = xr.gen_range(2..=5);
                let copies = vec![d.clone(); n];
                count(webhooks::CONCURRENT, n as u64);
                webhooks::post_all(hooks, &copies, true).await?;
            }
        }
    }
    if xr.gen_bool(0.4) {
        // Duplicates, later and out of order.
        let mut again: Vec<Delivery> = ds.iter().filter(|_| xr.gen_bool(0.5)).cloned().collect();
        again.shuffle(xr);
        count(webhooks::DUP, again.len() as u64);
        webhooks::post_all(hooks, &again, false).await?;
    }
    webhooks::accept(hooks, &ds);
    Ok(Vec::new())
}

/// True when the ledger shows `pays[i]` applied to its order already.
async fn paid_by(w: &World, i: usize) -> bool {
    let p = &w.pays[i];
    for o in w.orders.iter().filter(|o| o.pay_to == p.to) {
        if let Ok(Some(snap)) = w.store().order_by_ref(&o.order_ref).await {
            if snap.tx_hash.as_deref() == Some(p.tx.as_str()) {
                return true;
            }
        }
    }
    false
}

/// A cut of the database connections planned for one step: after `delay`, refusing new
/// connections for `refuse` when set.
pub struct Cut {
    pub delay: Duration,
    pub refuse: Option<Duration>,
}

pub fn plan_cut(w: &World, xr: &mut StdRng) -> Option<Cut> {
    if w.db_proxy.is_none() || !xr.gen_bool(0.5) {
        return None;
    }
    Some(Cut {
        delay: Duration::from_micros(xr.gen_range(0..40_000)),
        refuse: xr
            .gen_bool(0.4)
            .then(|| Duration::from_millis(xr.gen_range(5..150))),
    })
}

/// Makes the cut on `w`'s proxy; `fired` is set at the instant of the cut.
pub async fn cut(w: &World, c: &Cut, fired: &Arc<AtomicBool>) {
    let Some(proxy) = &w.db_proxy else {
        return;
    };
    tokio::time::sleep(c.delay).await;
    fired.store(true, Ordering::SeqCst);
    bump(DB_CUTS, 1);
    bump(DB_REFUSALS, u64::from(c.refuse.is_some()));
    let n = proxy.cut(c.refuse).await;
    bump(DB_CONNS_CUT, n as u64);
}
