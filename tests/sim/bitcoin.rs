//! Bitcoin seeds (docs/configuration.md, "Bitcoin"): from a seed, orders paid to P2WPKH, P2TR
//! and P2PKH deposit addresses on the fake Esplora, each payment an output of a transaction
//! that also pays change (some pay the address twice), reported by Chaingateway `bitcoin`
//! records with the amount in BTC, with no amount, or not at all (the deposit scan finds it
//! when on); under- and over-payments; transactions that wait in the mempool; fee-bump
//! replacements of a mempool payment that pay less; stray payments; Esplora faults the retries
//! absorb; and reorgs above the final depth (a payment moved to a later block, back to the
//! mempool, or dropped). Checked after every run (no failure, no key in the report, the audit
//! table, nothing backwards, the deposit scan's history requests within 2 per unpaid order) and
//! after the chain settles: every reported (or scannable) payment
//! still on chain is final on its txid with the satoshis it paid, every order nothing paid is
//! unpaid.
//!
//! `PAYRECON_SIM_BITCOIN_SEED=S` runs only seed S; `PAYRECON_SIM_BITCOIN_SEEDS=N` runs 0..N
//! (default `SEEDS`; the first `SERVER_SEEDS` also on PostgreSQL and on MariaDB/MySQL).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use payrecon::app::App;
use payrecon::config::Config;
use payrecon::domain::{State, U256};
use payrecon::store::NewOrder;
use payrecon_testkit::esplora::FakeEsplora;
use payrecon_testkit::sandbox::chaingateway::FakeChaingateway;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::world::{opts, Backend};

mod events;

use events::event;

const SEEDS: u64 = 48;
const SERVER_SEEDS: u64 = 6;
const PARALLEL_SEEDS: usize = 4;
const TIP: u64 = 925_000;
const CONFIRMATIONS: u64 = 2;
const FINAL_DEPTH: u64 = 6;
const CG_KEY: &str = "cg_sim_btc_41d7";
/// The payer's change address (a real mainnet P2WPKH address).
const CHANGE: &str = "bc1qxy2kgdygjrsqtzq2n0yrf2493p83kkfjhx0wlh";

pub const NAMES: [&str; 10] = [
    "btc_payments",
    "btc_unreported",
    "btc_no_amount",
    "btc_two_outputs",
    "btc_mempool",
    "btc_replaced",
    "btc_esplora_faults",
    "btc_reorgs",
    "btc_runs",
    "btc_expired",
];
static COUNTS: [AtomicU64; 10] = [const { AtomicU64::new(0) }; 10];

fn bump(i: usize) {
    COUNTS[i].fetch_add(1, Ordering::Relaxed);
}

/// The payment an order got: its txid, whether a record names it (or the scan can find it),
/// whether a reorg dropped it, and the satoshis paid.
struct Paid {
    txid: String,
    findable: bool,
    dropped: bool,
    sats: u64,
    /// A second, smaller output of the same transaction to the same address (0: none).
    extra: u64,
}

struct Order {
    order_ref: String,
    to: String,
    due: u64,
    paid: Option<Paid>,
    /// It expired a day before the seed began: every payment to it is late
    /// (docs/configuration.md, "Amounts").
    expired: bool,
}

struct BWorld {
    ledger: crate::world::Ledger,
    esplora: FakeEsplora,
    cg: FakeChaingateway,
    app: App,
    orders: Vec<Order>,
    scan: bool,
    /// Transactions in the mempool, by txid, with the order they pay (if any).
    mempool: Vec<(String, Option<usize>)>,
    /// Confirmed transactions above the final depth when made: (txid, block).
    recent: Vec<(String, u64)>,
    last: HashMap<String, State>,
    next: u64,
    /// Esplora faults queued since the last run (each can cost one request more).
    faults: usize,
}

/// Runs the slice and prints the summary; panics listing the failing seeds.
pub async fn run_slice() {
    let sizes = (SEEDS, SERVER_SEEDS, PARALLEL_SEEDS);
    crate::run_slice("bitcoin", sizes, (&NAMES, &COUNTS), run_seed).await;
}

/// A deposit address of the seed: P2WPKH or P2TR (bech32/bech32m), or P2PKH (base58check).
fn address(seed: u64, i: u64, kind: u32) -> String {
    let mut program = [0u8; 32];
    program[..8].copy_from_slice(&seed.to_be_bytes());
    program[8..16].copy_from_slice(&i.to_be_bytes());
    program[16] = 0xb7;
    match kind {
        0 => bech32::segwit::encode_v0(bech32::hrp::BC, &program[..20]).expect("a P2WPKH address"),
        1 => bech32::segwit::encode_v1(bech32::hrp::BC, &program).expect("a P2TR address"),
        _ => {
            let mut payload = vec![0x00];
            payload.extend_from_slice(&program[..20]);
            bs58::encode(payload).with_check().into_string()
        }
    }
}

async fn start(rng: &mut StdRng, backend: Backend) -> Result<BWorld, String> {
    let esplora = FakeEsplora::start(TIP).await;
    let (cg, cg_url) = FakeChaingateway::start(CG_KEY).await;
    // The SQLite file's directory lives as long as the world.
    let ledger = crate::world::ledger(backend).await?;
    let db = ledger.url.clone();
    let scan = rng.gen_bool(0.5);
    let text = format!(
        r#"[database]
url = "{db}"

{chain}
[providers.cg]
kind = "chaingateway"
base_url = "{cg_url}"
api_key = "{CG_KEY}"
network = "mainnet"
chains = ["bitcoin"]
timeout = "5s"
max_retries = 3
backoff = "10ms"
"#,
        chain = esplora.config_table(&format!(
            "confirmations = {CONFIRMATIONS}\nfinal_depth = {FINAL_DEPTH}\nmax_retries = 3\nscan_unpaid = {scan}"
        )),
    );
    let config = Config::from_toml(&text, std::iter::empty()).map_err(|e| e.to_string())?;
    let app = App::build(config).await.map_err(|e| e.0)?;
    Ok(BWorld {
        ledger,
        esplora,
        cg,
        app,
        orders: Vec::new(),
        scan,
        mempool: Vec::new(),
        recent: Vec::new(),
        last: HashMap::new(),
        next: 0,
        faults: 0,
    })
}

async fn run(w: &mut BWorld) -> Result<(), String> {
    // The scan's cost follows the window: every history here fits one page, so an address
    // costs at most 2 requests (its page, then the empty one), plus one per queued fault.
    let unpaid = w
        .orders
        .iter()
        .filter(|o| w.last.get(&o.order_ref).is_none_or(|s| *s == State::Unpaid))
        .count();
    let before = w.esplora.requests().len();
    let report = w
        .app
        .engine
        .run(&opts(false))
        .await
        .map_err(|e| format!("run: {e}"))?;
    bump(8);
    let history = w.esplora.requests()[before..]
        .iter()
        .filter(|p| p.starts_with("/address/"))
        .count();
    let bound = if w.scan { 2 * unpaid + w.faults } else { 0 };
    if history > bound {
        return Err(format!(
            "{history} address-history requests for {unpaid} unpaid orders (bound {bound}, scan {})",
            w.scan
        ));
    }
    w.faults = 0;
    let refs = w.orders.iter().map(|o| o.order_ref.clone()).collect();
    crate::check::after_run(&report, &[CG_KEY], &w.app.engine.store, refs, &mut w.last).await
}

async fn run_seed(seed: u64, backend: Backend) -> Result<(), String> {
    let mut rng = StdRng::seed_from_u64(seed ^ 0x6274_6300_0000_0000);
    let mut w = start(&mut rng, backend).await?;
    for i in 0..rng.gen_range(4..=12u64) {
        w.orders.push(Order {
            order_ref: format!("BT{seed}-{i}"),
            to: address(seed, i, rng.gen_range(0..3)),
            due: u64::from(rng.gen_range(2u32..2_000)) * 1_000,
            paid: None,
            expired: rng.gen_bool(0.2),
        });
    }
    let rows: Vec<NewOrder> = w
        .orders
        .iter()
        .map(|o| NewOrder {
            order_ref: o.order_ref.clone(),
            chain: "bitcoin".into(),
            pay_to: o.to.clone(),
            asset: "native".into(),
            amount_due: U256::from(o.due),
        })
        .collect();
    w.app
        .engine
        .store
        .insert_orders(&rows)
        .await
        .map_err(|e| e.to_string())?;
    let day_ago = jiff::Timestamp::now() - jiff::SignedDuration::from_hours(24);
    let day_ago = payrecon_testkit::inspect::time_literal(&w.app.engine.store, day_ago);
    for o in w.orders.iter().filter(|o| o.expired) {
        let sql = format!(
            "UPDATE orders SET expires_at = {day_ago} WHERE order_ref = '{}'",
            o.order_ref
        );
        payrecon_testkit::on_pool!(&w.app.engine.store, p => sqlx::query(&sql).execute(p).await.map(|_| ()))
        .map_err(|e| format!("expire {}: {e}", o.order_ref))?;
        bump(9);
    }
    for _ in 0..rng.gen_range(3..=6) {
        for _ in 0..rng.gen_range(1..=4) {
            event(&mut w, &mut rng);
        }
        w.esplora.mine(rng.gen_range(0..=4));
        // Some of the mempool is mined.
        let tip = w.esplora.tip();
        w.mempool.retain(|(id, _)| {
            let mined = rng.gen_bool(0.4);
            if mined {
                w.esplora.confirm(id, tip);
            }
            !mined
        });
        run(&mut w).await?;
    }
    // The chain settles: the mempool mined, every block final; two runs.
    w.esplora.mine(1);
    let tip = w.esplora.tip();
    for (id, _) in std::mem::take(&mut w.mempool) {
        w.esplora.confirm(&id, tip);
    }
    w.esplora.mine(FINAL_DEPTH + 2);
    run(&mut w).await?;
    run(&mut w).await?;
    // The ledger's rows, read once (in the orders' order).
    let refs = w.orders.iter().map(|o| o.order_ref.clone()).collect();
    let rows = crate::order_rows(&w.app.engine.store, refs).await?;
    for (o, row) in w.orders.iter().zip(&rows) {
        let s = row.state;
        match &o.paid {
            None if s != State::Unpaid => {
                return Err(format!("{}: nothing paid it, yet it is {s:?}", o.order_ref))
            }
            // Expired (invariant 11, ARCHITECTURE.md): every payment credited, held late, never
            // a state; the scan finds a second output to the address as well.
            Some(p) if o.expired && p.findable && !p.dropped => {
                let paid = p.sats + if w.scan { p.extra } else { 0 };
                let have = (s, row.tx_hash.clone(), row.amount_paid.clone());
                if have != (State::Unpaid, None, Some(paid.to_string())) {
                    return Err(format!(
                        "{}: expired, paid {paid} sat late, yet {have:?}",
                        o.order_ref
                    ));
                }
            }
            // Short of its amount (docs/configuration.md, "Amounts"): credited, held unpaid, no
            // key; unless the scan also finds the transaction's second output to the address,
            // which tops it up.
            Some(p) if p.findable && !p.dropped && p.sats < o.due && !(w.scan && p.extra > 0) => {
                let have = (s, row.tx_hash.clone(), row.amount_paid.clone());
                if have != (State::Unpaid, None, Some(p.sats.to_string())) {
                    return Err(format!(
                        "{}: paid {} of {} sat (short), yet {have:?}",
                        o.order_ref, p.sats, o.due
                    ));
                }
            }
            Some(p) if p.findable && !p.dropped => {
                let paid = if p.sats < o.due {
                    p.sats + p.extra
                } else {
                    p.sats
                };
                let want = (Some(p.txid.clone()), Some(paid.to_string()));
                let have = (row.tx_hash.clone(), row.amount_paid.clone());
                if s != State::Final || have != want {
                    return Err(format!(
                        "{}: paid {want:?} (reported or scannable), yet {s:?} holding {have:?}",
                        o.order_ref
                    ));
                }
            }
            Some(p) if !p.findable && s != State::Unpaid => {
                return Err(format!(
                    "{}: {} was never reported nor scannable, yet {s:?}",
                    o.order_ref, p.txid
                ));
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
