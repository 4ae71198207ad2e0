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

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use payrecon::app::App;
use payrecon::config::Config;
use payrecon::domain::{State, U256};
use payrecon::store::NewOrder;
use payrecon_testkit::esplora::{FakeEsplora, Out};
use payrecon_testkit::sandbox::chaingateway::{notification, FakeChaingateway};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;

use crate::world::Backend;

mod driver;

pub(crate) use driver::{drive, Parts, Slice};

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
