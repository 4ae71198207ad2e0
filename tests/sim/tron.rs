//! Tron seeds beside the EVM ones (docs/configuration.md, "Tron"): from a seed, orders paid in
//! TRC-20 USDT or TRX to base58 deposit addresses on the fake java-tron node, Chaingateway
//! `tron` records in every accepted spelling (base58, `41…`, `0x…`; txids with and without
//! `0x`) or none at all (the deposit scan finds TRC-20 ones), under- and over-payments,
//! non-payments to order addresses (freezes with a value, failed contract calls), stray
//! payments, HTTP API faults the retries absorb, and reorgs above the solidified block (a
//! payment moved to a later block, or dropped). Checked after every run (no failure, no key in
//! the report, the audit table, nothing backwards) and after the chain settles: every reported
//! (or scannable) payment still on chain is final, every order nothing paid is unpaid.
//!
//! `PAYRECON_SIM_TRON_SEED=S` runs only seed S; `PAYRECON_SIM_TRON_SEEDS=N` runs 0..N (default
//! `SEEDS`; the first `SERVER_SEEDS` also on PostgreSQL and on MariaDB/MySQL).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use payrecon::app::App;
use payrecon::config::Config;
use payrecon::domain::{State, TronAddress, U256};
use payrecon::store::NewOrder;
use payrecon_testkit::sandbox::chaingateway::{notification, FakeChaingateway};
use payrecon_testkit::tron::{FakeTron, TronTx, USDT_HEX};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;

use crate::world::{opts, Backend};

const SEEDS: u64 = 48;
const SERVER_SEEDS: u64 = 6;
const PARALLEL_SEEDS: usize = 4;
const HEAD: u64 = 68_000_000;
const SOLID_LAG: u64 = 19;
const CG_KEY: &str = "cg_sim_tron_5e1f";
const TRON_KEY: &str = "trongrid-sim-9c2a";
const USDT: &str = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";

pub const NAMES: [&str; 8] = [
    "tron_payments",
    "tron_unreported",
    "tron_odd_spellings",
    "tron_non_payments",
    "tron_api_faults",
    "tron_moved",
    "tron_dropped",
    "tron_runs",
];
static COUNTS: [AtomicU64; 8] = [const { AtomicU64::new(0) }; 8];

fn bump(i: usize) {
    COUNTS[i].fetch_add(1, Ordering::Relaxed);
}

struct Order {
    order_ref: String,
    to: TronAddress,
    native: bool,
    due: u64,
    /// The payment: txid, whether a record names it (or the scan can find it), whether a
    /// reorg dropped it, and the amount in base units.
    paid: Option<(String, bool, bool, u64)>,
}

struct TWorld {
    ledger: crate::world::Ledger,
    node: FakeTron,
    cg: FakeChaingateway,
    app: App,
    orders: Vec<Order>,
    scan: bool,
    /// The chain transactions above the solidified block when made, by txid: movable.
    recent: Vec<(String, u64)>,
    last: HashMap<String, State>,
    next: u64,
}

/// Runs the slice and prints the summary; panics listing the failing seeds.
pub async fn run_slice() {
    let sizes = (SEEDS, SERVER_SEEDS, PARALLEL_SEEDS);
    crate::run_slice("tron", sizes, (&NAMES, &COUNTS), run_seed).await;
}

fn address(seed: u64, i: u64) -> TronAddress {
    let mut b = [0u8; 20];
    b[0] = 0x7e;
    b[4..12].copy_from_slice(&seed.to_be_bytes());
    b[12..].copy_from_slice(&i.to_be_bytes());
    TronAddress::from_bytes(b)
}

fn hex20(a: &TronAddress) -> String {
    a.evm_hex()[2..].to_string()
}

async fn start(rng: &mut StdRng, backend: Backend) -> Result<TWorld, String> {
    let node = FakeTron::start(HEAD, SOLID_LAG).await;
    let (cg, cg_url) = FakeChaingateway::start(CG_KEY).await;
    // The SQLite file's directory lives as long as the world.
    let ledger = crate::world::ledger(backend).await?;
    let db = ledger.url.clone();
    let scan = rng.gen_bool(0.5);
    let batch = [1, 3, 50][rng.gen_range(0..3)];
    let text = format!(
        r#"[database]
url = "{db}"

{tables}
[providers.cg]
kind = "chaingateway"
base_url = "{cg_url}"
api_key = "{CG_KEY}"
network = "mainnet"
chains = ["tron"]
timeout = "5s"
max_retries = 3
backoff = "10ms"
"#,
        tables = node.config_tables(
            TRON_KEY,
            &format!("confirmations = {SOLID_LAG}\nrpc_batch_size = {batch}\nmax_retries = 3\nscan_unpaid = {scan}")
        ),
    );
    let config = Config::from_toml(&text, std::iter::empty()).map_err(|e| e.to_string())?;
    let app = App::build(config).await.map_err(|e| e.0)?;
    Ok(TWorld {
        ledger,
        node,
        cg,
        app,
        orders: Vec::new(),
        scan,
        recent: Vec::new(),
        last: HashMap::new(),
        next: 0,
    })
}

/// A Chaingateway record of a transfer, in one of the spellings Chaingateway (or a proxy in
/// front of it) may use.
fn notify(
    w: &mut TWorld,
    rng: &mut StdRng,
    txid: &str,
    to: &TronAddress,
    native: bool,
    amount: u64,
) {
    w.next += 1;
    let odd = rng.gen_bool(0.3);
    if odd {
        bump(2);
    }
    let to_s = match (odd, rng.gen_range(0..2)) {
        (true, 0) => to.tron_hex(),
        (true, _) => to.evm_hex(),
        _ => to.as_str().to_string(),
    };
    let txid_s = if odd && rng.gen_bool(0.5) {
        format!("0x{txid}")
    } else {
        txid.to_string()
    };
    let contract = if native {
        "native".to_string()
    } else if odd {
        format!("41{USDT_HEX}")
    } else {
        USDT.into()
    };
    let when = jiff::Timestamp::now() - jiff::SignedDuration::from_mins(rng.gen_range(1..60));
    let mut n = notification(
        &format!("t{}", w.next),
        &txid_s,
        &contract,
        &to_s,
        Some(&format!("{}.{:06}", amount / 1_000_000, amount % 1_000_000)),
        when,
    );
    n["type"] = json!(if native { "TRX" } else { "TRC20" });
    n["blockchain"] = json!("tron");
    w.cg.add_notification("tron", n);
}

fn transfer(native: bool, to: &TronAddress, amount: u64, log_index: u64) -> TronTx {
    if native {
        TronTx::Trx {
            from: "5c".repeat(20),
            to: hex20(to),
            amount,
            contract_ret: "SUCCESS".into(),
        }
    } else {
        TronTx::Trc20 {
            contract: USDT_HEX.into(),
            from: "5c".repeat(20),
            to: hex20(to),
            amount: u128::from(amount),
            log_index,
            success: true,
        }
    }
}

fn put(w: &mut TWorld, rng: &mut StdRng, tx: TronTx) -> String {
    w.next += 1;
    let id = format!("{:016x}{:048x}", w.next, rng.gen::<u128>());
    let head = w.node.head();
    let block = head - rng.gen_range(0..40u64);
    if block > head - SOLID_LAG {
        w.recent.push((id.clone(), block));
    }
    w.node.add(&id, block, tx);
    id
}

/// One event of a step.
fn event(w: &mut TWorld, rng: &mut StdRng) {
    let unpaid: Vec<usize> = (0..w.orders.len())
        .filter(|&i| w.orders[i].paid.is_none())
        .collect();
    match rng.gen_range(0..100) {
        0..=59 if !unpaid.is_empty() => {
            let i = unpaid[rng.gen_range(0..unpaid.len())];
            let (to, native, due) = (w.orders[i].to.clone(), w.orders[i].native, w.orders[i].due);
            let reported = rng.gen_bool(0.85);
            let amount = match rng.gen_range(0..10) {
                0 if reported => due - 1,
                1 if reported => due + 1_000,
                _ => due,
            };
            let log_index = rng.gen_range(0..20);
            let id = put(w, rng, transfer(native, &to, amount, log_index));
            if reported {
                notify(w, rng, &id, &to, native, amount);
            } else {
                bump(1);
            }
            let findable = reported || (!native && w.scan);
            w.orders[i].paid = Some((id, findable, false, amount));
            bump(0);
        }
        60..=74 if !w.orders.is_empty() => {
            // Not a payment, to an order's address: never credits.
            let i = rng.gen_range(0..w.orders.len());
            let (to, native) = (w.orders[i].to.clone(), w.orders[i].native);
            let tx = if native {
                TronTx::Other {
                    contract_type: "FreezeBalanceV2Contract".into(),
                    value: json!({"frozen_balance": w.orders[i].due, "owner_address": format!("41{}", "5c".repeat(20))}),
                    call_value: w.orders[i].due,
                }
            } else {
                TronTx::Trc20 {
                    contract: USDT_HEX.into(),
                    from: "5c".repeat(20),
                    to: hex20(&to),
                    amount: u128::from(w.orders[i].due),
                    log_index: 0,
                    success: false,
                }
            };
            let id = put(w, rng, tx);
            notify(w, rng, &id, &to, native, w.orders[i].due);
            bump(3);
        }
        75..=84 => {
            // A payment to an address no order has.
            let to = address(u64::MAX, w.next);
            let native = rng.gen_bool(0.5);
            let id = put(w, rng, transfer(native, &to, 3_000_000, 1));
            notify(w, rng, &id, &to, native, 3_000_000);
        }
        // At most 2 queued at once: the retries (3) absorb them.
        85..=92 if w.node.api_faults_left() == 0 => {
            w.node.push_api_fault(503, rng.gen_range(1..=2));
            bump(4);
        }
        85..=92 => {}
        _ => reorg(w, rng),
    }
}

/// Above the solidified block: a recent transaction moves to a later block or is dropped.
fn reorg(w: &mut TWorld, rng: &mut StdRng) {
    let solid = w.node.solidified();
    w.recent.retain(|(_, b)| *b > solid);
    if w.recent.is_empty() {
        return;
    }
    let k = rng.gen_range(0..w.recent.len());
    let (id, block) = w.recent[k].clone();
    w.node.reorg_from(block);
    if rng.gen_bool(0.7) {
        let to = (block + rng.gen_range(1..=3)).min(w.node.head());
        w.node.move_tx(&id, to);
        w.recent[k].1 = to;
        bump(5);
    } else {
        w.node.drop_tx(&id);
        w.recent.remove(k);
        if let Some(o) = w
            .orders
            .iter_mut()
            .find(|o| o.paid.as_ref().is_some_and(|p| p.0 == id))
        {
            if let Some(p) = &mut o.paid {
                p.2 = true;
            }
        }
        bump(6);
    }
}

async fn run(w: &mut TWorld) -> Result<(), String> {
    let report = w
        .app
        .engine
        .run(&opts(false))
        .await
        .map_err(|e| format!("run: {e}"))?;
    bump(7);
    let refs = w.orders.iter().map(|o| o.order_ref.clone()).collect();
    crate::check::after_run(
        &report,
        &[TRON_KEY, CG_KEY],
        &w.app.engine.store,
        refs,
        &mut w.last,
    )
    .await
}

async fn run_seed(seed: u64, backend: Backend) -> Result<(), String> {
    let mut rng = StdRng::seed_from_u64(seed ^ 0x7472_6f6e_0000_0000);
    let mut w = start(&mut rng, backend).await?;
    for i in 0..rng.gen_range(4..=12u64) {
        let native = rng.gen_bool(0.35);
        w.orders.push(Order {
            order_ref: format!("TR{seed}-{i}"),
            to: address(seed, i),
            native,
            due: u64::from(rng.gen_range(1u32..500)) * 1_000_000,
            paid: None,
        });
    }
    let rows: Vec<NewOrder> = w
        .orders
        .iter()
        .map(|o| NewOrder {
            order_ref: o.order_ref.clone(),
            chain: "tron".into(),
            pay_to: o.to.as_str().into(),
            asset: if o.native {
                "native".into()
            } else {
                USDT.into()
            },
            amount_due: U256::from(o.due),
        })
        .collect();
    w.app
        .engine
        .store
        .insert_orders(&rows)
        .await
        .map_err(|e| e.to_string())?;
    for _ in 0..rng.gen_range(3..=6) {
        for _ in 0..rng.gen_range(1..=4) {
            event(&mut w, &mut rng);
        }
        w.node.mine(rng.gen_range(0..=25));
        run(&mut w).await?;
    }
    // The chain settles: everything solidified; two runs.
    w.node.mine(SOLID_LAG + 45);
    run(&mut w).await?;
    run(&mut w).await?;
    // The ledger's rows, read once (in the orders' order).
    let refs = w.orders.iter().map(|o| o.order_ref.clone()).collect();
    let rows = crate::order_rows(&w.app.engine.store, refs).await?;
    for (o, row) in w.orders.iter().zip(&rows) {
        let s = row.state;
        // Short of its amount (docs/configuration.md, "Amounts"): credited, held unpaid, no
        // key.
        if let Some((_, true, false, amount)) = &o.paid {
            if u128::from(*amount) < u128::from(o.due) {
                let have = (s, row.tx_hash.clone(), row.amount_paid.clone());
                if have != (State::Unpaid, None, Some(amount.to_string())) {
                    return Err(format!(
                        "{}: paid {amount} of {} (short), yet {have:?}",
                        o.order_ref, o.due
                    ));
                }
                continue;
            }
        }
        if let Some((id, true, false, amount)) = &o.paid {
            let want = (Some(id.clone()), Some(amount.to_string()));
            if (row.tx_hash.clone(), row.amount_paid.clone()) != want {
                return Err(format!(
                    "{}: the ledger holds {:?} / {:?}, the chain paid {want:?}",
                    o.order_ref, row.tx_hash, row.amount_paid
                ));
            }
        }
        match &o.paid {
            None if s != State::Unpaid => {
                return Err(format!("{}: nothing paid it, yet it is {s:?}", o.order_ref))
            }
            Some((id, true, false, _)) if s != State::Final => {
                return Err(format!(
                    "{}: paid by {id} (reported or scannable), yet {s:?}",
                    o.order_ref
                ))
            }
            Some((id, false, false, _)) if s != State::Unpaid => {
                return Err(format!(
                    "{}: {id} was never reported nor scannable, yet {s:?}",
                    o.order_ref
                ))
            }
            _ => {}
        }
    }
    if let Some(scratch) = w.ledger.scratch.take() {
        drop(w);
        crate::world::drop_scratch(scratch).await;
    }
    Ok(())
}
