//! Balance-check seeds (docs/operations.md, "Balances") on Bitcoin, against the fake Esplora:
//! from a seed, deposit addresses with an opening balance, payments reported by Chaingateway or
//! by no one, second payments to addresses already paid, sweeps to the treasury (with change
//! and a fee), drains elsewhere, money the address history does not show (an index that lost a
//! transaction), and reorgs above the final block (a payment moved to a later block); runs and
//! balance checks in random order. After every check (and after the chain settles): nothing
//! failed or moved back; every address is checked to the final block with a difference equal to
//! the money its history hides (at least what is at or below the final block, at most all of
//! it; all of it once the chain settles), open as `balance_mismatch` exactly when it is not
//! zero; every drain at or below the final block is open as `unexpected_outflow`; no exception
//! names a sweep; no payment is credited twice (by a run and by a check); and every payment at
//! or below the final block is credited or open as an exception.
//!
//! `PAYRECON_SIM_BALANCES_SEED=S` runs only seed S; `PAYRECON_SIM_BALANCES_SEEDS=N` runs 0..N
//! (default `SEEDS`; the first `SERVER_SEEDS` also on PostgreSQL and on MariaDB/MySQL).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};

use payrecon::app::App;
use payrecon::config::Config;
use payrecon::domain::{State, U256};
use payrecon::engine::Trigger;
use payrecon::store::{ExceptionFilter, NewOrder};
use payrecon_testkit::esplora::{FakeEsplora, Out};
use payrecon_testkit::sandbox::chaingateway::{notification, FakeChaingateway};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;

use crate::world::{opts, Backend};

const SEEDS: u64 = 24;
const SERVER_SEEDS: u64 = 4;
const PARALLEL_SEEDS: usize = 4;
const TIP: u64 = 925_000;
const FINAL_DEPTH: u64 = 6;
const CG_KEY: &str = "cg_sim_bal_7e21";
const PAYER: &str = "bc1qxy2kgdygjrsqtzq2n0yrf2493p83kkfjhx0wlh";
const TREASURY: &str = "bc1p5d7rjq7g6rdk2yhzks9smlaqtedr4dekq08ge8ztwac72sfr9rusxg3297";
const THIEF: &str = "1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2";
const FEE: u64 = 1_000;

pub const NAMES: [&str; 9] = [
    "bal_payments",
    "bal_unreported",
    "bal_double",
    "bal_sweeps",
    "bal_drains",
    "bal_hidden",
    "bal_reorgs",
    "bal_checks",
    "bal_runs",
];
static COUNTS: [AtomicU64; 9] = [const { AtomicU64::new(0) }; 9];

fn bump(i: usize) {
    COUNTS[i].fetch_add(1, Ordering::Relaxed);
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    Opening,
    Payment,
    Sweep,
    Drain,
    Hidden,
}

/// A transaction the generator made, for one deposit address.
pub(crate) struct Tx {
    pub id: String,
    pub at: usize,
    pub kind: Kind,
    pub block: u64,
    /// What it did to the address's balance.
    pub net: i128,
}

pub(crate) struct Addr {
    pub address: String,
    pub order_ref: String,
    pub due: u64,
}

struct BWorld {
    ledger: crate::world::Ledger,
    esplora: FakeEsplora,
    cg: FakeChaingateway,
    app: App,
    addrs: Vec<Addr>,
    txs: Vec<Tx>,
    last: HashMap<String, State>,
    next: u64,
    lookback: std::time::Duration,
    treasury: std::collections::BTreeMap<String, Vec<String>>,
}

/// Runs the slice and prints the summary; panics listing the failing seeds.
pub async fn run_slice() {
    let sizes = (SEEDS, SERVER_SEEDS, PARALLEL_SEEDS);
    crate::run_slice("balances", sizes, (&NAMES, &COUNTS), run_seed).await;
}

/// A P2WPKH deposit address of the seed.
fn address(seed: u64, i: u64) -> String {
    let mut program = [0u8; 20];
    program[..8].copy_from_slice(&seed.to_be_bytes());
    program[8..16].copy_from_slice(&i.to_be_bytes());
    program[16] = 0xba;
    bech32::segwit::encode_v0(bech32::hrp::BC, &program).expect("a P2WPKH address")
}

async fn start(backend: Backend) -> Result<BWorld, String> {
    let esplora = FakeEsplora::start(TIP).await;
    let (cg, cg_url) = FakeChaingateway::start(CG_KEY).await;
    let ledger = crate::world::ledger(backend).await?;
    let text = format!(
        "[database]\nurl = \"{db}\"\n\n{chain}\n[providers.cg]\nkind = \"chaingateway\"\n\
         base_url = \"{cg_url}\"\napi_key = \"{CG_KEY}\"\nnetwork = \"mainnet\"\n\
         chains = [\"bitcoin\"]\ntimeout = \"5s\"\nmax_retries = 3\nbackoff = \"10ms\"\n",
        db = ledger.url,
        chain = esplora.config_table(&format!(
            "confirmations = 2\nfinal_depth = {FINAL_DEPTH}\nmax_retries = 3\n\
             scan_unpaid = false\ntreasury = [\"{TREASURY}\"]"
        )),
    );
    let config = Config::from_toml(&text, std::iter::empty()).map_err(|e| e.to_string())?;
    let (lookback, treasury) = (config.balances.lookback, config.balances.treasury.clone());
    let app = App::build(config).await.map_err(|e| e.0)?;
    Ok(BWorld {
        ledger,
        esplora,
        cg,
        app,
        addrs: Vec::new(),
        txs: Vec::new(),
        last: HashMap::new(),
        next: 0,
        lookback,
        treasury,
    })
}

fn final_block(w: &BWorld) -> u64 {
    w.esplora.tip() - (FINAL_DEPTH - 1)
}

fn new_id(w: &mut BWorld, rng: &mut StdRng) -> String {
    w.next += 1;
    format!("{:016x}{:048x}", w.next, rng.gen::<u128>())
}

fn out(address: &str, sats: u64) -> Out {
    Out {
        address: address.into(),
        sats,
    }
}

/// What an address may spend at the tip: every spend made, and what came in at or below the
/// final block (a spend never relies on a payment a reorg may still move).
fn spendable(w: &BWorld, at: usize) -> u64 {
    let f = final_block(w);
    let sum: i128 = w
        .txs
        .iter()
        .filter(|t| t.at == at && (t.block <= f || t.net < 0))
        .map(|t| t.net)
        .sum();
    u64::try_from(sum).unwrap_or(0)
}

/// A payment to address `at`, in one of the last blocks; reported by Chaingateway or not.
fn pay(w: &mut BWorld, rng: &mut StdRng, at: usize, sats: u64, reported: bool) -> String {
    let id = new_id(w, rng);
    let block = w.esplora.tip() - rng.gen_range(0..3u64);
    let to = w.addrs[at].address.clone();
    w.esplora
        .add(&id, Some(block), vec![out(PAYER, 900_000), out(&to, sats)]);
    if reported {
        w.next += 1;
        let when = jiff::Timestamp::now() - jiff::SignedDuration::from_mins(5);
        let btc = format!("{}.{:08}", sats / 100_000_000, sats % 100_000_000);
        let mut n = notification(
            &format!("s{}", w.next),
            &id,
            "native",
            &to,
            Some(&btc),
            when,
        );
        n["type"] = json!("BTC");
        n["blockchain"] = json!("bitcoin");
        n["from"] = json!(PAYER);
        w.cg.add_notification("bitcoin", n);
    }
    w.txs.push(Tx {
        id: id.clone(),
        at,
        kind: Kind::Payment,
        block,
        net: i128::from(sats),
    });
    id
}

/// Spends what address `at` may spend to `to` (change back, the fee paid), at the tip.
fn spend(w: &mut BWorld, rng: &mut StdRng, at: usize, to: &str, kind: Kind) -> bool {
    let have = spendable(w, at);
    if have < 4 * FEE {
        return false;
    }
    let change = if rng.gen_bool(0.5) { have / 4 } else { 0 };
    let id = new_id(w, rng);
    let me = w.addrs[at].address.clone();
    let mut outputs = vec![out(to, have - change - FEE)];
    if change > 0 {
        outputs.push(out(&me, change));
    }
    let block = w.esplora.tip();
    w.esplora.add_spend_of(&id, Some(block), &me, have, outputs);
    w.txs.push(Tx {
        id,
        at,
        kind,
        block,
        net: -i128::from(have - change),
    });
    true
}

fn event(w: &mut BWorld, rng: &mut StdRng) {
    let at = rng.gen_range(0..w.addrs.len());
    let paid = w.txs.iter().any(|t| t.at == at && t.kind == Kind::Payment);
    match rng.gen_range(0..100) {
        0..=39 if !paid => {
            let reported = rng.gen_bool(0.5);
            let due = w.addrs[at].due;
            pay(w, rng, at, due, reported);
            bump(if reported { 0 } else { 1 });
        }
        0..=49 => {
            // Paid twice, or an old address reused: no one reports it.
            let sats = rng.gen_range(5..50u64) * 1_000;
            pay(w, rng, at, sats, false);
            bump(2);
        }
        50..=61 => {
            if spend(w, rng, at, TREASURY, Kind::Sweep) {
                bump(3);
            }
        }
        62..=69 => {
            if spend(w, rng, at, THIEF, Kind::Drain) {
                bump(4);
            }
        }
        70..=75 => {
            let id = new_id(w, rng);
            let block = w.esplora.tip() - rng.gen_range(0..3u64);
            let to = w.addrs[at].address.clone();
            w.esplora.add(&id, Some(block), vec![out(&to, 10_000)]);
            w.esplora.unlist(&id);
            w.txs.push(Tx {
                id,
                at,
                kind: Kind::Hidden,
                block,
                net: 10_000,
            });
            bump(5);
        }
        _ => reorg(w, rng),
    }
}

/// A payment above the final block moves to a later block (never below the final block: a
/// check must count it once, wherever it ends).
fn reorg(w: &mut BWorld, rng: &mut StdRng) {
    let (f, tip) = (final_block(w), w.esplora.tip());
    let recent: Vec<usize> = (0..w.txs.len())
        .filter(|&k| w.txs[k].kind == Kind::Payment && w.txs[k].block > f && w.txs[k].block < tip)
        .collect();
    let Some(&k) = recent.get(rng.gen_range(0..recent.len().max(1))) else {
        return;
    };
    let to = rng.gen_range(w.txs[k].block + 1..=tip);
    w.esplora.confirm(&w.txs[k].id, to);
    w.txs[k].block = to;
    bump(6);
}

impl Slice for BWorld {
    const CHAIN: &'static str = "bitcoin";
    const CG_KEY: &'static str = CG_KEY;
    const FINAL_DEPTH: u64 = FINAL_DEPTH;
    const MIN_MINE: u64 = 0;

    fn counted(&self, check: bool) {
        bump(if check { 7 } else { 8 });
    }
    fn parts(&mut self) -> Parts<'_> {
        Parts {
            app: &self.app,
            addrs: &self.addrs,
            txs: &self.txs,
            last: &mut self.last,
            lookback: self.lookback,
            treasury: &self.treasury,
        }
    }
    fn final_block(&self) -> u64 {
        final_block(self)
    }
    fn mine(&mut self, n: u64) {
        self.esplora.mine(n);
    }
    fn event(&mut self, rng: &mut StdRng) {
        event(self, rng);
    }
}

/// A balance slice's world, as the shared driver (`drive`) sees it.
pub(crate) trait Slice: Send {
    const CHAIN: &'static str;
    const CG_KEY: &'static str;
    const FINAL_DEPTH: u64;
    /// The fewest blocks mined after a round's events (1 where they wait in a pending block).
    const MIN_MINE: u64;
    /// Counts a run (`false`) or a check (`true`).
    fn counted(&self, check: bool);
    fn parts(&mut self) -> Parts<'_>;
    fn final_block(&self) -> u64;
    fn mine(&mut self, n: u64);
    fn event(&mut self, rng: &mut StdRng);
}

/// What a run and a check read and write of a slice's world.
pub(crate) struct Parts<'a> {
    pub app: &'a App,
    pub addrs: &'a [Addr],
    pub txs: &'a [Tx],
    pub last: &'a mut HashMap<String, State>,
    pub lookback: std::time::Duration,
    pub treasury: &'a std::collections::BTreeMap<String, Vec<String>>,
}

async fn run<S: Slice>(w: &mut S) -> Result<(), String> {
    let p = w.parts();
    let report = p
        .app
        .engine
        .run(&opts(false))
        .await
        .map_err(|e| format!("run: {e}"))?;
    let refs = p.addrs.iter().map(|a| a.order_ref.clone()).collect();
    let store = &p.app.engine.store;
    crate::check::after_run(&report, &[S::CG_KEY], store, refs, p.last).await?;
    w.counted(false);
    Ok(())
}

async fn check<S: Slice>(w: &mut S) -> Result<(), String> {
    let f = w.final_block();
    let p = w.parts();
    let report = p
        .app
        .engine
        .check_balances(p.lookback, p.treasury, None, Trigger::Cli)
        .await
        .map_err(|e| format!("balance check: {e}"))?;
    let refs = p.addrs.iter().map(|a| a.order_ref.clone()).collect();
    let store = &p.app.engine.store;
    crate::check::after_run(&report, &[S::CG_KEY], store, refs, p.last).await?;
    invariants(store, S::CHAIN, f, p.addrs, p.txs).await?;
    w.counted(true);
    Ok(())
}

/// Inserts the slice's orders, a day old (older than the blocks a first check reads back
/// to), then checks; rounds of events, blocks, runs and checks in random order; and once the
/// chain settles (every block final), a run and a check.
pub(crate) async fn drive<S: Slice>(
    w: &mut S,
    rng: &mut StdRng,
    orders: &[NewOrder],
) -> Result<(), String> {
    let store = &w.parts().app.engine.store;
    store
        .insert_orders(orders)
        .await
        .map_err(|e| e.to_string())?;
    let day_ago = jiff::Timestamp::now() - jiff::SignedDuration::from_hours(24);
    let sql = format!(
        "UPDATE orders SET created_at = {}",
        payrecon_testkit::inspect::time_literal(store, day_ago)
    );
    payrecon_testkit::on_pool!(store, p => sqlx::query(&sql).execute(p).await.map(|_| ()))
        .map_err(|e| format!("age the orders: {e}"))?;
    w.mine(S::MIN_MINE * (S::FINAL_DEPTH + 2));
    check(w).await?;
    for _ in 0..rng.gen_range(3..=6) {
        for _ in 0..rng.gen_range(1..=4) {
            w.event(rng);
        }
        w.mine(rng.gen_range(S::MIN_MINE..=4));
        match rng.gen_range(0..3) {
            0 => run(w).await?,
            1 => check(w).await?,
            _ => {
                run(w).await?;
                check(w).await?;
            }
        }
    }
    w.mine(S::FINAL_DEPTH + 2);
    run(w).await?;
    check(w).await
}

/// After a check, on any chain: every address checked to `f`, its difference the money its
/// history hides (`Kind::Hidden`), open as `balance_mismatch` exactly when not zero; every
/// drain at or below `f` open as `unexpected_outflow`; no exception naming a sweep; no
/// payment credited twice; every payment at or below `f` credited or an exception.
pub(crate) async fn invariants(
    store: &payrecon::store::Store,
    chain: &str,
    f: u64,
    addrs: &[Addr],
    txs: &[Tx],
) -> Result<(), String> {
    let db = |e: payrecon::store::StoreError| e.to_string();
    let rows = store.balances(Some(chain), false).await.map_err(db)?;
    let open = store
        .list_exceptions(&ExceptionFilter {
            status: Some("open".into()),
            limit: 1_000_000,
            ..Default::default()
        })
        .await
        .map_err(db)?;
    let all = store
        .list_exceptions(&ExceptionFilter {
            limit: 1_000_000,
            ..Default::default()
        })
        .await
        .map_err(db)?;
    for (at, a) in addrs.iter().enumerate() {
        let row = rows
            .iter()
            .find(|r| r.address == a.address)
            .ok_or_else(|| format!("{}: never checked", a.address))?;
        if row.checked_block != f {
            return Err(format!(
                "{}: checked to {} of {f}",
                a.address, row.checked_block
            ));
        }
        // Money the history hides shows at the first check that reads the address once it is
        // there: surely once at or below the final block; above it, only if a check read the
        // address since (a check skips an address already checked to the final block).
        let hidden = |le_f: bool| -> i128 {
            txs.iter()
                .filter(|t| t.at == at && t.kind == Kind::Hidden && (!le_f || t.block <= f))
                .map(|t| t.net)
                .sum()
        };
        let (surely, at_most) = (hidden(true), hidden(false));
        let difference: i128 = row
            .difference
            .to_string()
            .parse()
            .map_err(|e| format!("difference {}: {e}", row.difference))?;
        if difference < surely || difference > at_most {
            return Err(format!(
                "{}: difference {difference} where the history hides {surely} at or below \
                 the final block and {at_most} in all",
                a.address
            ));
        }
        let flagged = open
            .iter()
            .filter(|e| e.kind == "balance_mismatch" && e.detail.contains(&a.address))
            .count();
        if flagged != usize::from(difference != 0) {
            return Err(format!(
                "{}: {flagged} open balance_mismatch, difference {difference}",
                a.address
            ));
        }
    }
    for t in txs {
        let named = |kind: &str, list: &[payrecon::store::ExceptionRow]| {
            list.iter()
                .any(|e| e.kind == kind && e.tx_hash.as_deref() == Some(t.id.as_str()))
        };
        match t.kind {
            Kind::Drain if t.block <= f && !named("unexpected_outflow", &open) => {
                return Err(format!("drain {} is not open as unexpected_outflow", t.id))
            }
            Kind::Sweep
                if all
                    .iter()
                    .any(|e| e.tx_hash.as_deref() == Some(t.id.as_str())) =>
            {
                return Err(format!("sweep {} opened an exception", t.id))
            }
            _ => {}
        }
    }
    // No payment credited twice; every payment at or below the final block credited, or open
    // as an exception.
    let credited = crate::credited(store).await?;
    let mut keys = HashSet::new();
    for c in credited.values().flatten() {
        if !keys.insert((c.tx.clone(), c.log_index)) {
            return Err(format!("{}:{} credited twice", c.tx, c.log_index));
        }
    }
    for t in txs
        .iter()
        .filter(|t| t.kind == Kind::Payment && t.block <= f)
    {
        let paid = keys.iter().any(|(tx, _)| *tx == t.id);
        let flagged = all
            .iter()
            .any(|e| e.tx_hash.as_deref() == Some(t.id.as_str()));
        if !paid && !flagged {
            return Err(format!(
                "payment {} (block {}, final {f}) is neither credited nor an exception",
                t.id, t.block
            ));
        }
    }
    Ok(())
}

async fn run_seed(seed: u64, backend: Backend) -> Result<(), String> {
    let mut rng = StdRng::seed_from_u64(seed ^ 0x6261_6c00_0000_0000);
    let mut w = start(backend).await?;
    for i in 0..rng.gen_range(3..=8u64) {
        w.addrs.push(Addr {
            address: address(seed, i),
            order_ref: format!("BL{seed}-{i}"),
            due: u64::from(rng.gen_range(20u32..2_000)) * 1_000,
        });
    }
    // Openings: money some addresses held long before their orders.
    for at in 0..w.addrs.len() {
        if rng.gen_bool(0.5) {
            let id = new_id(&mut w, &mut rng);
            let sats = rng.gen_range(10..100u64) * 1_000;
            w.esplora
                .add(&id, Some(TIP - 500), vec![out(&w.addrs[at].address, sats)]);
            w.txs.push(Tx {
                id,
                at,
                kind: Kind::Opening,
                block: TIP - 500,
                net: i128::from(sats),
            });
        }
    }
    let rows: Vec<NewOrder> = w
        .addrs
        .iter()
        .map(|a| NewOrder {
            order_ref: a.order_ref.clone(),
            chain: "bitcoin".into(),
            pay_to: a.address.clone(),
            asset: "native".into(),
            amount_due: U256::from(a.due),
        })
        .collect();
    drive(&mut w, &mut rng, &rows).await?;
    if let Some(scratch) = w.ledger.scratch.take() {
        drop(w);
        crate::world::drop_scratch(scratch).await;
    }
    Ok(())
}
