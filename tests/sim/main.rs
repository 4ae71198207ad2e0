//! A seeded scenario simulator (docs/reliability.md, "Scenario simulator"): each seed generates
//! orders, on-chain transfers, provider notifications, faults, merchant writes, a second instance
//! and dry runs against the in-process sandbox, and checks the invariants of ARCHITECTURE.md.
//!
//! `PAYRECON_SIM_SEED=S` runs only seed S; `PAYRECON_SIM_SEEDS=N` runs seeds 0..N (default
//! `DEFAULT_SEEDS`), split over `SHARDS` tests. With `PAYRECON_TEST_PG_URL` set, the first
//! `PG_SEEDS` seeds (`PAYRECON_SIM_PG_SEEDS`) also run on PostgreSQL, and with
//! `PAYRECON_TEST_MYSQL_URL` the first `MYSQL_SEEDS` (`PAYRECON_SIM_MYSQL_SEEDS`) on
//! MariaDB/MySQL (both required under `PAYRECON_TEST_STRICT=1`); a green seed's schema or
//! database is dropped, a red one's kept.

mod anvil;
mod balances;
mod balances_evm;
mod bitcoin;
mod check;
mod extras;
mod kill;
mod lists;
mod merchant;
mod qvard;
mod scenario;
mod slices;
mod solana;
mod tron;
mod webhooks;
mod world;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::time::Instant;

use payrecon::domain::State;

use payrecon_testkit::inspect::Inspect;
pub use slices::{report_slice, run_jobs, run_slice, slice_jobs, Job};
use world::Backend;

const SHARDS: u64 = 4;
const DEFAULT_SEEDS: u64 = 1200;
const PG_SEEDS: u64 = 40;
const MYSQL_SEEDS: u64 = 40;
/// Seeds in flight at once in one shard.
const PARALLEL_SEEDS: usize = 4;

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|v| {
        v.trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name} must be an integer, not {v:?}"))
    })
}

/// The seeds of one shard.
fn seeds(shard: u64) -> Vec<u64> {
    if let Some(seed) = env_u64("PAYRECON_SIM_SEED") {
        return if shard == 0 { vec![seed] } else { Vec::new() };
    }
    let n = env_u64("PAYRECON_SIM_SEEDS").unwrap_or(DEFAULT_SEEDS);
    (0..n).filter(|s| s % SHARDS == shard).collect()
}

fn replay(seed: u64, backend: Backend) -> String {
    let db = db_prefix(backend);
    format!("{db}PAYRECON_SIM_SEED={seed} cargo nextest run --cargo-profile bench --test sim")
}

/// Whether the seeds run on the shared server of `var` (`PostgreSQL`, `MariaDB/MySQL`): when
/// it is there and chosen (`PAYRECON_TEST_BACKENDS`); under `PAYRECON_TEST_STRICT=1` its
/// absence fails.
fn server_enabled(var: &str, backend: &str, what: &str) -> bool {
    if !payrecon_testkit::env::backend_selected(backend) {
        return false;
    }
    if std::env::var(var).is_ok() {
        return true;
    }
    if std::env::var("PAYRECON_TEST_STRICT").is_ok_and(|v| v == "1") {
        panic!("PAYRECON_TEST_STRICT=1 and {var} is not set (simulator on {what})");
    }
    false
}

fn pg_enabled() -> bool {
    server_enabled("PAYRECON_TEST_PG_URL", "postgres", "PostgreSQL")
}

fn sqlite_enabled() -> bool {
    payrecon_testkit::env::backend_selected("sqlite")
}

fn mysql_enabled() -> bool {
    server_enabled("PAYRECON_TEST_MYSQL_URL", "mysql", "MariaDB/MySQL")
}

/// What a replay line sets before its command for `backend`.
pub fn db_prefix(backend: Backend) -> &'static str {
    match backend {
        Backend::Sqlite => "",
        Backend::Postgres => "PAYRECON_TEST_PG_URL=$PAYRECON_TEST_PG_URL ",
        Backend::MySql => "PAYRECON_TEST_MYSQL_URL=$PAYRECON_TEST_MYSQL_URL ",
    }
}

/// The orders `refs` as the ledger holds them now (one lookup each: a seed has a few).
pub async fn order_rows(
    store: &payrecon::store::Store,
    refs: Vec<String>,
) -> Result<Vec<payrecon_testkit::inspect::OrderSnapshot>, String> {
    let mut out = Vec::new();
    for r in refs {
        let row = store
            .order_by_ref(&r)
            .await
            .map_err(|e| format!("reading {r}: {e}"))?
            .ok_or_else(|| format!("order {r} vanished"))?;
        out.push(row);
    }
    Ok(out)
}

/// One credited payment (`payrecon_payments`) as the checks read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credited {
    pub tx: String,
    pub log_index: i64,
    pub amount: u128,
    pub block_number: Option<i64>,
    pub block_hash: Option<String>,
    pub state: String,
}

/// The query behind [`credited`]: one row per credited payment, oldest first.
pub const CREDITED: &str = "SELECT CAST(o.order_ref AS TEXT), p.tx_hash, p.log_index, \
     CAST(p.amount AS TEXT), p.block_number, p.block_hash, p.state \
     FROM payrecon_payments p JOIN orders o ON o.id = p.order_id ORDER BY p.id";

/// A row of [`CREDITED`].
pub type CreditedRow = (
    String,
    String,
    i64,
    String,
    Option<i64>,
    Option<String>,
    String,
);

/// Every credited payment, by its order's `order_ref` (docs/reference.md §3,
/// `payrecon_payments`), oldest first.
pub async fn credited(
    store: &payrecon::store::Store,
) -> Result<HashMap<String, Vec<Credited>>, String> {
    let sql = payrecon_testkit::inspect::respell(store, CREDITED);
    let rows: Vec<CreditedRow> =
        payrecon_testkit::on_pool!(store, p => sqlx::query_as(&sql).fetch_all(p).await)
            .map_err(|e| format!("reading the payments: {e}"))?;
    by_order(rows)
}

/// [`CREDITED`]'s rows grouped by order, amounts parsed.
pub fn by_order(rows: Vec<CreditedRow>) -> Result<HashMap<String, Vec<Credited>>, String> {
    let mut out: HashMap<String, Vec<Credited>> = HashMap::new();
    for (r, tx, log_index, amount, block_number, block_hash, state) in rows {
        let amount = amount
            .parse()
            .map_err(|_| format!("{r}: payment amount {amount:?} is not a number"))?;
        out.entry(r).or_default().push(Credited {
            tx,
            log_index,
            amount,
            block_number,
            block_hash,
            state,
        });
    }
    Ok(out)
}

/// Invariant 9 for one order: each credited payment is a creditable one (on chain, to the
/// order, found), exactly once, and `amount_paid` is their sum; then the cover rule: short of
/// `due`, every creditable payment is credited and the order is unpaid with no key; covered,
/// the order holds the key of one of its payments and was covered by the last one credited.
/// `creditable` are `(tx, log index, amount)`. Returns the key payment, when covered.
pub fn check_cover(
    order_ref: &str,
    due: u128,
    row: &payrecon_testkit::inspect::OrderSnapshot,
    credited: &[Credited],
    creditable: &[(String, i64, u128)],
) -> Result<Option<Credited>, String> {
    let mut keys = HashSet::new();
    for c in credited {
        if !keys.insert((c.tx.clone(), c.log_index)) {
            return Err(format!("{order_ref}: payment {} credited twice", c.tx));
        }
        if !creditable
            .iter()
            .any(|(tx, li, a)| *tx == c.tx && *li == c.log_index && *a == c.amount)
        {
            return Err(format!(
                "{order_ref}: credited {c:?}, which is not a payment to it on chain; \
                 creditable: {creditable:?}"
            ));
        }
    }
    let paid: u128 = credited.iter().map(|c| c.amount).sum();
    let want_paid = (!credited.is_empty()).then(|| paid.to_string());
    if row.amount_paid != want_paid {
        return Err(format!(
            "{order_ref}: amount_paid {:?}, its credited payments sum to {paid}",
            row.amount_paid
        ));
    }
    let total: u128 = creditable.iter().map(|c| c.2).sum();
    if total < due {
        if row.state != State::Unpaid || row.tx_hash.is_some() {
            return Err(format!(
                "{order_ref}: paid {total} of {due} on chain, yet {row:?} (must stay unpaid)"
            ));
        }
        if credited.len() != creditable.len() {
            return Err(format!(
                "{order_ref} did not converge: short ({total} of {due}), credited \
                 {credited:?} of {creditable:?}"
            ));
        }
        return Ok(None);
    }
    let Some(tx) = row.tx_hash.as_deref() else {
        return Err(format!(
            "{order_ref} did not converge: paid {total} of {due} on chain, credited \
             {credited:?}, yet {row:?}"
        ));
    };
    let Some(key) = credited
        .iter()
        .find(|c| c.tx == tx && Some(c.log_index) == row.log_index)
    else {
        return Err(format!(
            "{order_ref}: its key {tx} is none of its credited payments {credited:?}"
        ));
    };
    let largest = credited.iter().map(|c| c.amount).max().unwrap_or(0);
    if paid < due || paid - largest >= due {
        return Err(format!(
            "{order_ref}: credited {paid} of {due} ({credited:?}): short, or more payments \
             than it took to cover it"
        ));
    }
    Ok(Some(key.clone()))
}

async fn run_shard(shard: u64) {
    let t0 = Instant::now();
    let seeds = seeds(shard);
    let (pg, my) = (pg_enabled(), mysql_enabled());
    let single = env_u64("PAYRECON_SIM_SEED").is_some();
    let pg_seeds = env_u64("PAYRECON_SIM_PG_SEEDS").unwrap_or(PG_SEEDS);
    let my_seeds = env_u64("PAYRECON_SIM_MYSQL_SEEDS").unwrap_or(MYSQL_SEEDS);
    let mut jobs = Vec::new();
    for &seed in &seeds {
        if sqlite_enabled() {
            jobs.push((seed, Backend::Sqlite));
        }
        if pg && (single || seed < pg_seeds) {
            jobs.push((seed, Backend::Postgres));
        }
        if my && (single || seed < my_seeds) {
            jobs.push((seed, Backend::MySql));
        }
    }
    let on = |b: Backend| jobs.iter().filter(|(_, x)| *x == b).count();
    let per_backend = format!(
        "SQLite {}, PostgreSQL {}, MariaDB/MySQL {}",
        on(Backend::Sqlite),
        on(Backend::Postgres),
        on(Backend::MySql)
    );
    // Seeds mostly wait on loopback HTTP and fsync: a few at once keep the cores busy.
    let failures = run_jobs("", jobs, PARALLEL_SEEDS, scenario::run_seed, replay).await;
    let faults: Vec<String> = scenario::FAULT_NAMES
        .iter()
        .zip(&scenario::FAULTS)
        .map(|(n, c)| format!("{n}={}", c.load(Ordering::Relaxed)))
        .collect();
    let stats: Vec<String> = scenario::STAT_NAMES
        .iter()
        .zip(&scenario::STATS)
        .map(|(n, c)| format!("{n}={}", c.load(Ordering::Relaxed)))
        .collect();
    let counted = |names: &[&str], counts: &[std::sync::atomic::AtomicU64]| -> String {
        let pairs = names.iter().zip(counts);
        let pairs = pairs.map(|(n, c)| format!("{n}={}", c.load(Ordering::Relaxed)));
        pairs.collect::<Vec<_>>().join(" ")
    };
    eprintln!(
        "shard {shard}: {} seeds ({per_backend}) in {:.1?}; provider faults injected: {}; rpc 500s: {}; {}; \
         webhooks: {}; lists and database: {}; list shapes: {}; qvard: {}; events: received={} refused={} \
         redelivered={} handler_fulfilments={}",
        seeds.len(),
        t0.elapsed(),
        faults.join(" "),
        scenario::RPC_FAULTS.load(Ordering::Relaxed),
        stats.join(" "),
        counted(&webhooks::NAMES, &webhooks::COUNTS),
        counted(&extras::NAMES, &extras::COUNTS),
        counted(&lists::NAMES, &lists::COUNTS),
        counted(&qvard::NAMES, &qvard::COUNTS),
        merchant::EVENTS_RECEIVED.load(Ordering::Relaxed),
        merchant::EVENTS_REFUSED.load(Ordering::Relaxed),
        merchant::EVENTS_REDELIVERED.load(Ordering::Relaxed),
        merchant::HANDLER_FULFILMENTS.load(Ordering::Relaxed),
    );
    if seeds.len() >= 100 {
        let bounded = lists::COUNTS[3].load(Ordering::Relaxed);
        assert!(bounded > 0, "no searching run was held to the pages bound");
        assert!(
            merchant::EVENTS_RECEIVED.load(Ordering::Relaxed) > 0
                && merchant::EVENTS_REFUSED.load(Ordering::Relaxed) > 0
                && merchant::HANDLER_FULFILMENTS.load(Ordering::Relaxed) > 0,
            "the merchant slice did nothing: no event, no refusal or no handler fulfilment"
        );
    }
    assert!(
        failures.is_empty(),
        "{} failing seed(s); replay each with:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_shard_0() {
    run_shard(0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_shard_1() {
    run_shard(1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_shard_2() {
    run_shard(2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_shard_3() {
    run_shard(3).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_kill_sqlite() {
    if sqlite_enabled() {
        kill::run_slice(Backend::Sqlite).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_kill_postgres() {
    if pg_enabled() {
        kill::run_slice(Backend::Postgres).await;
    } else {
        eprintln!("kill slice on PostgreSQL not run: PAYRECON_TEST_PG_URL is not set, or PAYRECON_TEST_BACKENDS leaves it out");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_kill_mysql() {
    if mysql_enabled() {
        kill::run_slice(Backend::MySql).await;
    } else {
        eprintln!("kill slice on MariaDB/MySQL not run: PAYRECON_TEST_MYSQL_URL is not set, or PAYRECON_TEST_BACKENDS leaves it out");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_anvil() {
    anvil::run_slice().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_tron() {
    tron::run_slice().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_bitcoin() {
    bitcoin::run_slice().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_solana() {
    solana::run_slice().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_balances() {
    balances::run_slice().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_balances_evm() {
    balances_evm::run_slice().await;
}
