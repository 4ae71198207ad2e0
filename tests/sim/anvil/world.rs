//! One anvil world: the node (token deployed), the fake Chaingateway, a ledger (SQLite file
//! or PostgreSQL schema) with an `App` on it, and what the generator sent.

use std::collections::HashMap;

use payrecon::app::App;
use payrecon::config::Config;
use payrecon_testkit::inspect::OrderSnapshot;
use payrecon_testkit::sandbox::chaingateway::{notification, FakeChaingateway};
use payrecon_testkit::sandbox::SANDBOX_API_KEY;
use rand::rngs::StdRng;
use rand::Rng;

use super::node::{request, Anvil};
use crate::world::{decimal, Backend};

pub struct Order {
    pub order_ref: String,
    pub pay_to: String,
    pub native: bool,
    pub due: u128,
    /// Its payment in `pays`.
    pub pay: Option<usize>,
    /// Its top-up in `pays`: the rest of a short payment, to the same address
    /// (docs/configuration.md, "Amounts").
    pub top_up: Option<usize>,
}

pub struct Pay {
    pub tx: String,
    pub native: bool,
    pub amount: u128,
    pub notified: bool,
}

pub struct AWorld {
    pub anvil: Anvil,
    pub token: String,
    pub accounts: Vec<String>,
    pub cg: FakeChaingateway,
    pub app: App,
    pub orders: Vec<Order>,
    pub pays: Vec<Pay>,
    pub confs: u64,
    pub final_depth: u64,
    /// Each order's row after the previous run.
    pub last: HashMap<String, OrderSnapshot>,
    /// The seed's schema or database on a shared server (dropped when green).
    pub scratch: Option<crate::world::Scratch>,
    /// The merchant's application (events receiver, fulfilment on `order.final`).
    pub merchant: crate::merchant::Merchant,
    _dir: tempfile::TempDir,
}

/// A stray address no order pays to.
pub fn stray(rng: &mut StdRng) -> String {
    format!(
        "0x{:040x}",
        0xbeef_0000_0000u64 + rng.gen_range(0..1_000_000u64)
    )
}

fn config(db: &str, cg: &str, rpc: &str, token: &str, confs: u64, fd: u64, batch: usize) -> String {
    format!(
        r#"[database]
url = "{db}"

[http]
listen = "127.0.0.1:0"

[chains.ethereum]
rpc_url = "{rpc}"
confirmations = {confs}
finality = "depth"
final_depth = {fd}
recheck_final = "1h"
max_retries = 1
timeout = "5s"

[assets."ethereum:{token}"]
symbol = "USDT"
decimals = 6

[providers.cg]
kind = "chaingateway"
base_url = "{cg}"
api_key = "{SANDBOX_API_KEY}"
network = "mainnet"
chains = ["ethereum"]
timeout = "5s"
max_retries = 2
backoff = "20ms"

[reconcile]
batch_size = {batch}
"#
    )
}

pub async fn start(rng: &mut StdRng, backend: Backend, bin: &str) -> AWorld {
    let dir = payrecon_testkit::tmp::dir().expect("temp dir");
    let (db, scratch) = match backend {
        Backend::Sqlite => (
            format!("sqlite://{}", dir.path().join("ledger.db").display()),
            None,
        ),
        Backend::Postgres | Backend::MySql => {
            let l = crate::world::ledger(backend)
                .await
                .expect("a ledger on the shared server");
            (l.url, l.scratch)
        }
    };
    let anvil = Anvil::launch(bin, &[]).await;
    let accounts = anvil.accounts().await;
    let token = anvil.deploy_token(&accounts[0]).await;
    anvil.mine(3).await;
    let (cg, cg_url) = FakeChaingateway::start(SANDBOX_API_KEY).await;
    cg.set_per_page(rng.gen_range(2..=15));
    let confs = rng.gen_range(2..=3);
    let final_depth = rng.gen_range(4..=8);
    let batch = [1usize, 2, 5, 500][rng.gen_range(0..4)];
    // (No draw from `rng`: the seeds keep their scenarios.) Some receivers refuse requests.
    let refuse = (final_depth + batch as u64) % 6;
    let merchant = crate::merchant::Merchant::start(if refuse < 2 { 0 } else { refuse + 1 }).await;
    let text = config(&db, &cg_url, &anvil.url, &token, confs, final_depth, batch)
        + &merchant.config_keys();
    let config = Config::from_toml(&text, std::iter::empty()).expect("a valid config");
    let app = App::build(config).await.expect("App::build");
    AWorld {
        anvil,
        token,
        accounts,
        cg,
        app,
        orders: Vec::new(),
        pays: Vec::new(),
        confs,
        final_depth,
        last: HashMap::new(),
        scratch,
        merchant,
        _dir: dir,
    }
}

/// Pays order `o` (exact, under- or overpaid) from a random account; lists it sometimes.
pub async fn pay(w: &mut AWorld, rng: &mut StdRng, o: usize, next_id: &mut u64) {
    let due = w.orders[o].due;
    let amount = match rng.gen_range(0..4) {
        0 => due / 2,
        1 => due + due / 10 + 1,
        _ => due,
    };
    let i = send(w, rng, o, amount, 2, next_id).await;
    w.orders[o].pay = Some(i);
}

/// Tops up order `o`, paid short: the rest of its amount, in a transfer of its own.
pub async fn top_up(w: &mut AWorld, rng: &mut StdRng, o: usize, next_id: &mut u64) {
    let Some(first) = w.orders[o].pay else {
        return;
    };
    let rest = w.orders[o].due.saturating_sub(w.pays[first].amount);
    // Another fee: a top-up of the same amount from the same account at a nonce a reorg
    // freed would otherwise be the very transaction the reorg dropped.
    let i = send(w, rng, o, rest, 3, next_id).await;
    w.orders[o].top_up = Some(i);
}

/// Sends `amount` to order `o`'s address from a random account at `gwei`, lists it
/// sometimes; its index in `pays`.
async fn send(
    w: &mut AWorld,
    rng: &mut StdRng,
    o: usize,
    amount: u128,
    gwei: u64,
    next_id: &mut u64,
) -> usize {
    let (to, native) = {
        let o = &w.orders[o];
        (o.pay_to.clone(), o.native)
    };
    let from = w.accounts[rng.gen_range(0..w.accounts.len())].clone();
    let nonce = w.anvil.nonce(&from).await;
    let token = (!native).then_some(w.token.as_str());
    let tx = w
        .anvil
        .send(&request(&from, nonce, gwei, &to, amount, token))
        .await;
    let notified = rng.gen_bool(0.8);
    if notified {
        *next_id += 1;
        let id = format!("a-{next_id}");
        let (asset, dec) = if native {
            ("native", 18)
        } else {
            (w.token.as_str(), 6)
        };
        let created = jiff::Timestamp::now() - jiff::SignedDuration::from_mins(30);
        let amount = decimal(amount, dec);
        w.cg.add_notification(
            "ethereum",
            notification(&id, &tx, asset, &to, Some(&amount), created),
        );
        if rng.gen_bool(0.25) {
            w.cg.mark_failed("ethereum", &id);
        }
    }
    w.pays.push(Pay {
        tx,
        native,
        amount,
        notified,
    });
    w.pays.len() - 1
}

/// A token transfer to a stray address, listed half the time (an `unknown_payment`).
pub async fn pay_stray(w: &mut AWorld, rng: &mut StdRng, next_id: &mut u64) {
    let from = w.accounts[rng.gen_range(0..w.accounts.len())].clone();
    let nonce = w.anvil.nonce(&from).await;
    let to = stray(rng);
    let tx = w
        .anvil
        .send(&request(&from, nonce, 2, &to, 4_000_000, Some(&w.token)))
        .await;
    if rng.gen_bool(0.5) {
        *next_id += 1;
        let created = jiff::Timestamp::now() - jiff::SignedDuration::from_mins(30);
        let n = notification(
            &format!("a-{next_id}"),
            &tx,
            &w.token,
            &to,
            Some("4"),
            created,
        );
        w.cg.add_notification("ethereum", n);
    }
}
