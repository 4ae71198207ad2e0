//! Solana seeds (docs/configuration.md, "Solana") on the sandbox Solana node: from a seed,
//! orders in SOL and in USDC, some sharing one merchant wallet told apart only by their Solana
//! Pay references, paid by the payer's transfers that no provider reports (the deposit scan
//! finds them on the wallet, its token accounts and the references, each account read on from
//! its cursor): exact, short (held, or within USDC's `underpaid_tolerance`), topped up, over;
//! payments to orders already expired (late: held); stray payments to wallets no order has;
//! payments the cluster forgets before `finalized` (their fork dropped); 429s the retries
//! absorb. Checked after every run (no failure, the audit table, nothing backwards) and after
//! the cluster finalizes everything: every payment still on chain is credited to its own order
//! (a referenced payment to the order of its reference, never to another order of the same
//! wallet); an order covered in time is `final` on the payment that covered it with what it was
//! paid, a short or late one held `unpaid` with what it was paid, a forgotten one never moved
//! back, every order nothing paid `unpaid`.
//!
//! `PAYRECON_SIM_SOLANA_SEED=S` runs only seed S; `PAYRECON_SIM_SOLANA_SEEDS=N` runs 0..N
//! (default `SEEDS`; the first `SERVER_SEEDS` also on PostgreSQL and on MariaDB/MySQL).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use payrecon::app::App;
use payrecon::config::Config;
use payrecon::domain::{expected_order, Catalog, ChainKind, OrderInput, SolanaKey, State};
use payrecon::store::Retries;
use payrecon_testkit::sandbox::solana::{base58, SandboxSolana};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::world::{opts, Backend};

const SEEDS: u64 = 16;
const SERVER_SEEDS: u64 = 2;
const PARALLEL_SEEDS: usize = 4;
const USDC: &str = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";
/// `[assets."solana:<USDC>"] underpaid_tolerance`, in base units (SOL has none).
const USDC_TOLERANCE: u64 = 10_000;

pub const NAMES: [&str; 9] = [
    "sol_payments",
    "sol_referenced",
    "sol_short",
    "sol_over",
    "sol_stray",
    "sol_forgotten",
    "sol_faults",
    "sol_topups",
    "sol_late",
];
static COUNTS: [AtomicU64; 9] = [const { AtomicU64::new(0) }; 9];

fn bump(i: usize) {
    COUNTS[i].fetch_add(1, Ordering::Relaxed);
}

struct Paid {
    sig: String,
    slot: u64,
    amount: u64,
    forgotten: bool,
}

struct Order {
    order_ref: String,
    wallet: String,
    usdc: bool,
    reference: Option<String>,
    due: u64,
    paid: Option<Paid>,
    /// The rest of a short payment, paid later.
    topup: Option<Paid>,
    /// Expired before any payment (`expires_at` an hour ago): every payment is late.
    expired: bool,
}

struct SWorld {
    ledger: crate::world::Ledger,
    node: SandboxSolana,
    app: App,
    orders: Vec<Order>,
    last: HashMap<String, State>,
    slot: u64,
    next: u64,
    seed: u64,
}

/// Runs the slice and prints the summary; panics listing the failing seeds.
pub async fn run_slice() {
    let sizes = (SEEDS, SERVER_SEEDS, PARALLEL_SEEDS);
    crate::run_slice("solana", sizes, (&NAMES, &COUNTS), run_seed).await;
}

fn key(seed: u64, i: u64, kind: u8) -> String {
    let mut b = [kind; 32];
    b[..8].copy_from_slice(&seed.to_be_bytes());
    b[8..16].copy_from_slice(&i.to_be_bytes());
    SolanaKey::from_bytes(b).to_string()
}

async fn start(seed: u64, backend: Backend) -> Result<SWorld, String> {
    let node = SandboxSolana::start().await.map_err(|e| e.to_string())?;
    let ledger = crate::world::ledger(backend).await?;
    let text = format!(
        "[database]\nurl = \"{}\"\n\n[chains.solana]\nkind = \"solana\"\nrpc_url = \"{}\"\n\
         timeout = \"5s\"\nmax_retries = 3\n\n[assets.\"solana:{USDC}\"]\nsymbol = \"USDC\"\n\
         decimals = 6\nunderpaid_tolerance = \"{USDC_TOLERANCE}\"\n",
        ledger.url, node.url
    );
    let config = Config::from_toml(&text, std::iter::empty()).map_err(|e| e.to_string())?;
    let app = App::build(config).await.map_err(|e| e.0)?;
    Ok(SWorld {
        ledger,
        node,
        app,
        orders: Vec::new(),
        last: HashMap::new(),
        slot: 1_000,
        next: 0,
        seed,
    })
}

/// A payment of `amount` to order `i` (or, with `None`, to a wallet no order has).
fn pay(w: &mut SWorld, i: Option<usize>, usdc: bool, amount: u64) -> (String, u64) {
    w.next += 1;
    w.slot += 1;
    w.node.advance(1);
    let mut b = [0x5a; 64];
    b[..8].copy_from_slice(&w.seed.to_be_bytes());
    b[8..16].copy_from_slice(&w.next.to_be_bytes());
    let sig = base58(&b);
    let payer = key(w.seed, 0, 0xee);
    let (to, reference) = match i {
        Some(i) => (w.orders[i].wallet.clone(), w.orders[i].reference.clone()),
        None => (key(w.seed, 10_000 + w.next, 0x77), None),
    };
    if usdc {
        let r = reference.as_deref();
        w.node
            .pay_token(&sig, w.slot, &payer, &to, USDC, 6, amount, r);
    } else {
        w.node.pay_sol(&sig, w.slot, &payer, &to, amount);
    }
    (sig, w.slot)
}

fn event(w: &mut SWorld, rng: &mut StdRng) {
    let unpaid: Vec<usize> = (0..w.orders.len())
        .filter(|&i| w.orders[i].paid.is_none())
        .collect();
    match rng.gen_range(0..100) {
        0..=59 if !unpaid.is_empty() => {
            let i = unpaid[rng.gen_range(0..unpaid.len())];
            let due = w.orders[i].due;
            let amount = match rng.gen_range(0..10) {
                0 | 1 => {
                    bump(2);
                    // Sometimes within USDC's tolerance.
                    match rng.gen_bool(0.3) {
                        true => due - rng.gen_range(1..=USDC_TOLERANCE),
                        false => due - rng.gen_range(1..=due / 2),
                    }
                }
                2 => {
                    bump(3);
                    due + 1_000
                }
                _ => due,
            };
            let usdc = w.orders[i].usdc;
            let (sig, slot) = pay(w, Some(i), usdc, amount);
            if w.orders[i].reference.is_some() {
                bump(1);
            }
            if w.orders[i].expired {
                bump(8);
            }
            w.orders[i].paid = Some(Paid {
                sig,
                slot,
                amount,
                forgotten: false,
            });
            bump(0);
        }
        60..=62 => {
            pay(w, None, rng.gen_bool(0.5), 12_345);
            bump(4);
        }
        63..=72 => {
            // A short payment's rest.
            let short: Vec<usize> = (0..w.orders.len())
                .filter(|&i| {
                    let o = &w.orders[i];
                    o.topup.is_none()
                        && o.paid.as_ref().is_some_and(|p| {
                            let tolerance = if o.usdc { USDC_TOLERANCE } else { 0 };
                            !p.forgotten && p.amount + tolerance < o.due
                        })
                })
                .collect();
            if let Some(&i) = short.get(rng.gen_range(0..short.len().max(1))) {
                let rest = w.orders[i].due - w.orders[i].paid.as_ref().map_or(0, |p| p.amount);
                let usdc = w.orders[i].usdc;
                let (sig, slot) = pay(w, Some(i), usdc, rest);
                w.orders[i].topup = Some(Paid {
                    sig,
                    slot,
                    amount: rest,
                    forgotten: false,
                });
                bump(7);
            }
        }
        73..=80 => {
            // A recent payment's fork is dropped before finalized.
            let finalized = w.slot.saturating_sub(32);
            let recent: Vec<usize> = (0..w.orders.len())
                .filter(|&i| {
                    w.orders[i].topup.is_none()
                        && w.orders[i]
                            .paid
                            .as_ref()
                            .is_some_and(|p| !p.forgotten && p.slot > finalized)
                })
                .collect();
            if let Some(&i) = recent.get(rng.gen_range(0..recent.len().max(1))) {
                let p = w.orders[i].paid.as_mut().expect("paid");
                w.node.forget(&p.sig);
                p.forgotten = true;
                bump(5);
            }
        }
        81..=88 => {
            // One refused request: the retries (3) absorb it.
            w.node.refuse(1);
            bump(6);
        }
        _ => {
            let n = rng.gen_range(1..=20);
            w.slot += n;
            w.node.advance(n);
        }
    }
}

async fn run(w: &mut SWorld) -> Result<(), String> {
    let report = w
        .app
        .engine
        .run(&opts(false))
        .await
        .map_err(|e| format!("run: {e}"))?;
    let refs = w.orders.iter().map(|o| o.order_ref.clone()).collect();
    crate::check::after_run(&report, &[], &w.app.engine.store, refs, &mut w.last).await
}

/// 4 to 10 orders: each wallet takes one order, or (Solana Pay) two to four USDC orders of one
/// amount, each with its own reference.
async fn orders(w: &mut SWorld, rng: &mut StdRng) -> Result<(), String> {
    let seed = w.seed;
    while w.orders.len() < rng.gen_range(4..=10) {
        let n = w.orders.len() as u64;
        let wallet = key(seed, n, 0x11);
        if rng.gen_bool(0.3) {
            let due = u64::from(rng.gen_range(1u32..500)) * 1_000_000;
            for k in 0..rng.gen_range(2..=4u64) {
                w.orders.push(Order {
                    order_ref: format!("SO{seed}-{n}-{k}"),
                    wallet: wallet.clone(),
                    usdc: true,
                    reference: Some(key(seed, n * 10 + k, 0x22)),
                    due,
                    paid: None,
                    topup: None,
                    expired: false,
                });
            }
        } else {
            let usdc = rng.gen_bool(0.5);
            w.orders.push(Order {
                order_ref: format!("SO{seed}-{n}"),
                wallet,
                usdc,
                reference: None,
                due: u64::from(rng.gen_range(1u32..5_000)) * 100_000,
                paid: None,
                topup: None,
                expired: rng.gen_bool(0.15),
            });
        }
    }
    let catalog = Catalog::new([("solana".to_string(), ChainKind::Solana)])
        .with_asset_key(&format!("solana:{USDC}"));
    let mut expected = Vec::new();
    let expired = (jiff::Timestamp::now() - jiff::SignedDuration::from_hours(1)).to_string();
    for o in &w.orders {
        let due = o.due.to_string();
        let input = OrderInput {
            order_ref: &o.order_ref,
            chain: "solana",
            pay_to: &o.wallet,
            asset: if o.usdc { USDC } else { "native" },
            amount_due: &due,
            expires_at: o.expired.then_some(expired.as_str()),
            reference: o.reference.as_deref(),
        };
        expected.push(expected_order(&input, &catalog).map_err(|e| format!("{e:?}"))?);
    }
    w.app
        .engine
        .store
        .register_orders(&expected, &Retries::default())
        .await
        .map_err(|e| e.to_string())?;
    Ok(())
}

async fn run_seed(seed: u64, backend: Backend) -> Result<(), String> {
    let mut rng = StdRng::seed_from_u64(seed ^ 0x736f_6c00_0000_0000);
    let mut w = start(seed, backend).await?;
    orders(&mut w, &mut rng).await?;
    for _ in 0..rng.gen_range(3..=6) {
        for _ in 0..rng.gen_range(1..=4) {
            event(&mut w, &mut rng);
        }
        run(&mut w).await?;
    }
    // Everything finalized; two runs.
    w.node.advance(64);
    run(&mut w).await?;
    run(&mut w).await?;
    let refs = w.orders.iter().map(|o| o.order_ref.clone()).collect();
    let rows = crate::order_rows(&w.app.engine.store, refs).await?;
    for (o, row) in w.orders.iter().zip(&rows) {
        settled(o, row)?;
    }
    if let Some(scratch) = w.ledger.scratch.take() {
        drop(w);
        crate::world::drop_scratch(scratch).await;
    }
    Ok(())
}

/// An order once everything is final: `final` on the payment that covered it (a top-up's
/// when topped up) with what it was paid, held unpaid when short or late, `unpaid` when nothing
/// paid it; a forgotten payment's order only never moved back (checked after every run).
fn settled(o: &Order, row: &payrecon_testkit::inspect::OrderSnapshot) -> Result<(), String> {
    let have = (row.state, row.tx_hash.clone(), row.amount_paid.clone());
    let Some(p) = &o.paid else {
        return match have == (State::Unpaid, None, None) {
            true => Ok(()),
            false => Err(format!("{}: unpaid, have {have:?}", o.order_ref)),
        };
    };
    if p.forgotten {
        return Ok(());
    }
    let covered_by = o.topup.as_ref().unwrap_or(p);
    let paid = p.amount + o.topup.as_ref().map_or(0, |t| t.amount);
    let tolerance = if o.usdc { USDC_TOLERANCE } else { 0 };
    let want = match paid + tolerance < o.due || o.expired {
        true => (State::Unpaid, None, Some(paid.to_string())),
        false => (
            State::Final,
            Some(covered_by.sig.clone()),
            Some(paid.to_string()),
        ),
    };
    if have == want {
        return Ok(());
    }
    Err(format!("{}: want {want:?}, have {have:?}", o.order_ref))
}
