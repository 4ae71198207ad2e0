//! Balance-check seeds (docs/operations.md, "Balances") on an EVM chain, against the sandbox
//! node (balances, nonces and logs at any block; exact fees): from a seed, deposit addresses
//! for the native coin and for a token, with opening balances; payments reported by
//! Chaingateway or by no one; second payments to addresses already paid; sweeps to the treasury
//! and drains elsewhere (a native drain may take the balance back to where the last check saw
//! it: only the nonce shows it); native coin passed on inside a contract call (no transaction
//! of its own: what a check cannot explain); runs and balance checks in random order. After
//! every check the invariants of the Bitcoin slice (`balances::driver::invariants`) hold. The
//! sandbox node has no reorgs: the Bitcoin slice and `tests/it/reorg` cover them.
//!
//! `PAYRECON_SIM_BALANCES_EVM_SEED=S` runs only seed S; `PAYRECON_SIM_BALANCES_EVM_SEEDS=N`
//! runs 0..N (default `SEEDS`; the first `SERVER_SEEDS` also on PostgreSQL and MariaDB/MySQL).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use alloy::primitives::U256 as EvmU256;
use payrecon::app::App;
use payrecon::config::Config;
use payrecon::domain::{Address, State, U256};
use payrecon::store::NewOrder;
use payrecon_testkit::sandbox::chain::{SandboxChain, TX_FEE_WEI};
use payrecon_testkit::sandbox::chaingateway::{notification, FakeChaingateway};
use payrecon_testkit::sandbox::SANDBOX_TOKEN;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::balances::{drive, Addr, Kind, Parts, Slice, Tx};
use crate::world::Backend;

const SEEDS: u64 = 16;
const SERVER_SEEDS: u64 = 3;
const PARALLEL_SEEDS: usize = 4;
const FINAL_DEPTH: u64 = 6;
const CG_KEY: &str = "cg_sim_bal_evm_31c4";
/// A unit of the sim: 10^15 base units (native amounts stay far above the fee, 4.2 × 10^13).
const UNIT: u64 = 1_000_000_000_000_000;

pub const NAMES: [&str; 9] = [
    "evm_payments",
    "evm_unreported",
    "evm_double",
    "evm_sweeps",
    "evm_drains",
    "evm_hidden",
    "evm_checks",
    "evm_runs",
    "evm_in_and_out",
];
static COUNTS: [AtomicU64; 9] = [const { AtomicU64::new(0) }; 9];

fn bump(i: usize) {
    COUNTS[i].fetch_add(1, Ordering::Relaxed);
}

fn bump_if(done: bool, i: usize) {
    if done {
        bump(i);
    }
}

fn addr(prefix: u8, n: u64) -> Address {
    Address::parse(&format!("0x{prefix:02x}{:030x}{n:08x}", 0xba1u64)).expect("20 bytes")
}

struct EWorld {
    ledger: crate::world::Ledger,
    chain: SandboxChain,
    cg: FakeChaingateway,
    app: App,
    addrs: Vec<Addr>,
    /// Whether each address takes the native coin (else the token).
    native: Vec<bool>,
    txs: Vec<Tx>,
    last: HashMap<String, State>,
    next: u64,
    lookback: std::time::Duration,
    treasury: std::collections::BTreeMap<String, Vec<String>>,
}

/// Runs the slice and prints the summary; panics listing the failing seeds.
pub async fn run_slice() {
    let sizes = (SEEDS, SERVER_SEEDS, PARALLEL_SEEDS);
    crate::run_slice("balances_evm", sizes, (&NAMES, &COUNTS), run_seed).await;
}

fn payer() -> Address {
    addr(0xfe, 0)
}
fn treasury() -> Address {
    addr(0x7e, 0)
}
fn thief() -> Address {
    addr(0x66, 0)
}
fn token() -> Address {
    Address::parse(SANDBOX_TOKEN).expect("the sandbox token")
}

async fn start(backend: Backend) -> Result<EWorld, String> {
    let now = u64::try_from(jiff::Timestamp::now().as_second()).unwrap_or(0);
    let chain = SandboxChain::starting_at(1, now - 3600);
    let rpc_url = chain.serve().await.map_err(|e| e.to_string())?;
    let (cg, cg_url) = FakeChaingateway::start(CG_KEY).await;
    let ledger = crate::world::ledger(backend).await?;
    let text = format!(
        "[database]\nurl = \"{db}\"\n\n[chains.ethereum]\nrpc_url = \"{rpc_url}\"\n\
         confirmations = 2\nfinality = \"depth\"\nfinal_depth = {FINAL_DEPTH}\n\
         scan_unpaid = false\ntreasury = [\"{treasury}\"]\n\n\
         [assets.\"ethereum:{SANDBOX_TOKEN}\"]\nsymbol = \"USDT\"\ndecimals = 6\n\n\
         [providers.cg]\nkind = \"chaingateway\"\nbase_url = \"{cg_url}\"\n\
         api_key = \"{CG_KEY}\"\nnetwork = \"mainnet\"\nchains = [\"ethereum\"]\n\
         timeout = \"5s\"\nmax_retries = 3\nbackoff = \"10ms\"\n",
        db = ledger.url,
        treasury = treasury(),
    );
    let config = Config::from_toml(&text, std::iter::empty()).map_err(|e| e.to_string())?;
    let (lookback, treasury) = (config.balances.lookback, config.balances.treasury.clone());
    let app = App::build(config).await.map_err(|e| e.0)?;
    chain.fund_native(&payer(), EvmU256::from(10u64).pow(EvmU256::from(21u8)));
    chain.fund_token(&token(), &payer(), EvmU256::from(u64::MAX));
    Ok(EWorld {
        ledger,
        chain,
        cg,
        app,
        addrs: Vec::new(),
        native: Vec::new(),
        txs: Vec::new(),
        last: HashMap::new(),
        next: 0,
        lookback,
        treasury,
    })
}

fn final_block(w: &EWorld) -> u64 {
    w.chain.head().saturating_sub(FINAL_DEPTH - 1)
}

/// What address `at` may spend: its spends, and what came in at or below the final block.
fn spendable(w: &EWorld, at: usize) -> u64 {
    let f = final_block(w);
    let sum: i128 = w
        .txs
        .iter()
        .filter(|t| t.at == at && (t.block <= f || t.net < 0))
        .map(|t| t.net)
        .sum();
    u64::try_from(sum).unwrap_or(0)
}

/// A payment to address `at` in the pending block (sealed by the next `mine`).
fn pay(w: &mut EWorld, at: usize, amount: u64, reported: bool) {
    let to = Address::parse(&w.addrs[at].address).expect("an address");
    let native = w.native[at];
    let (tx, block) = (
        if native {
            w.chain
                .add_native_transfer(&payer(), &to, EvmU256::from(amount))
        } else {
            w.chain
                .add_token_transfer(&token(), &payer(), &to, EvmU256::from(amount))
                .0
        },
        w.chain.head() + 1,
    );
    if reported {
        w.next += 1;
        let when = jiff::Timestamp::now() - jiff::SignedDuration::from_mins(5);
        let (asset, decimals) = if native {
            ("native", 18)
        } else {
            (SANDBOX_TOKEN, 6)
        };
        let shown = decimal(amount, decimals);
        let n = notification(
            &format!("e{}", w.next),
            tx.as_str(),
            asset,
            to.as_str(),
            Some(&shown),
            when,
        );
        w.cg.add_notification("ethereum", n);
    }
    w.txs.push(Tx {
        id: tx.to_string(),
        at,
        kind: Kind::Payment,
        block,
        net: i128::from(amount),
    });
}

/// `units` with `decimals` decimals, as Chaingateway writes amounts ("0.000042").
fn decimal(units: u64, decimals: usize) -> String {
    let digits = format!("{units:0>width$}", width = decimals + 1);
    let (whole, frac) = digits.split_at(digits.len() - decimals);
    let frac = frac.trim_end_matches('0');
    if frac.is_empty() {
        whole.to_string()
    } else {
        format!("{whole}.{frac}")
    }
}

/// Spends what address `at` may spend (a native spend leaves its fee) to `to`.
fn spend(w: &mut EWorld, at: usize, to: &Address, kind: Kind) -> bool {
    let have = spendable(w, at);
    let me = Address::parse(&w.addrs[at].address).expect("an address");
    let (tx, net) = if w.native[at] {
        if have <= TX_FEE_WEI {
            return false;
        }
        let amount = EvmU256::from(have - TX_FEE_WEI);
        (w.chain.add_native_transfer(&me, to, amount), have)
    } else {
        if have == 0 {
            return false;
        }
        let amount = EvmU256::from(have);
        (
            w.chain.add_token_transfer(&token(), &me, to, amount).0,
            have,
        )
    };
    w.txs.push(Tx {
        id: tx.to_string(),
        at,
        kind,
        block: w.chain.head() + 1,
        net: -i128::from(net),
    });
    true
}

fn event(w: &mut EWorld, rng: &mut StdRng) {
    let at = rng.gen_range(0..w.addrs.len());
    let paid = w.txs.iter().any(|t| t.at == at && t.kind == Kind::Payment);
    match rng.gen_range(0..100) {
        0..=39 if !paid => {
            let reported = rng.gen_bool(0.5);
            let due = w.addrs[at].due;
            pay(w, at, due, reported);
            bump(if reported { 0 } else { 1 });
        }
        0..=54 => {
            let amount = rng.gen_range(5..50u64) * UNIT;
            pay(w, at, amount, false);
            bump(2);
        }
        55..=69 => bump_if(spend(w, at, &treasury(), Kind::Sweep), 3),
        70..=84 => bump_if(spend(w, at, &thief(), Kind::Drain), 4),
        85..=92 if w.native[at] => {
            // Paid by no one's report, then drained of exactly that in the next block: the
            // balance is where it was; only the nonce shows the drain.
            let amount = rng.gen_range(5..50u64) * UNIT;
            pay(w, at, amount, false);
            w.chain.mine_block();
            let me = Address::parse(&w.addrs[at].address).expect("an address");
            let out = EvmU256::from(amount - TX_FEE_WEI);
            let tx = w.chain.add_native_transfer(&me, &thief(), out);
            w.txs.push(Tx {
                id: tx.to_string(),
                at,
                kind: Kind::Drain,
                block: w.chain.head() + 1,
                net: -i128::from(amount),
            });
            bump(8);
        }
        _ if w.native[at] => {
            let to = Address::parse(&w.addrs[at].address).expect("an address");
            let value = rng.gen_range(1..20u64) * UNIT;
            let id =
                w.chain
                    .add_internal_transfer(&payer(), &addr(0xc0, 0), &to, EvmU256::from(value));
            w.txs.push(Tx {
                id: id.to_string(),
                at,
                kind: Kind::Hidden,
                block: w.chain.head() + 1,
                net: i128::from(value),
            });
            bump(5);
        }
        _ => {}
    }
}

impl Slice for EWorld {
    const CHAIN: &'static str = "ethereum";
    const CG_KEY: &'static str = CG_KEY;
    const FINAL_DEPTH: u64 = FINAL_DEPTH;
    const MIN_MINE: u64 = 1;

    fn counted(&self, check: bool) {
        bump(if check { 6 } else { 7 });
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
        self.chain.mine(n);
    }
    fn event(&mut self, rng: &mut StdRng) {
        event(self, rng);
    }
}

async fn run_seed(seed: u64, backend: Backend) -> Result<(), String> {
    let mut rng = StdRng::seed_from_u64(seed ^ 0x6576_6d00_0000_0000);
    let mut w = start(backend).await?;
    for i in 0..rng.gen_range(3..=8u64) {
        let native = rng.gen_bool(0.5);
        let address = addr(if native { 0xa0 } else { 0xb0 }, (seed << 8) | i);
        w.addrs.push(Addr {
            address: address.to_string(),
            order_ref: format!("BE{seed}-{i}"),
            due: rng.gen_range(20u64..2_000) * UNIT,
        });
        w.native.push(native);
        // Openings: money some addresses held before their orders.
        if rng.gen_bool(0.5) {
            let held = rng.gen_range(10..100u64) * UNIT;
            if native {
                w.chain.fund_native(&address, EvmU256::from(held));
            } else {
                w.chain.fund_token(&token(), &address, EvmU256::from(held));
            }
            w.txs.push(Tx {
                id: String::new(),
                at: w.addrs.len() - 1,
                kind: Kind::Opening,
                block: 0,
                net: i128::from(held),
            });
        }
    }
    let rows: Vec<NewOrder> = w
        .addrs
        .iter()
        .zip(&w.native)
        .map(|(a, native)| NewOrder {
            order_ref: a.order_ref.clone(),
            chain: "ethereum".into(),
            pay_to: a.address.clone(),
            asset: if *native { "native" } else { SANDBOX_TOKEN }.into(),
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
