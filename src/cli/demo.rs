//! `payrecon demo`: no network, no setup. A fake Chaingateway and a sandbox EVM node on
//! loopback, a fresh SQLite ledger with a dozen orders in every situation, one real run
//! through reqwest, alloy and sqlx, the report, then a balance check that finds what no
//! provider reported (a native payment, a drained deposit address), and where to look next.
//! A sandbox Solana node holds a USDC payment with a Solana Pay reference that only the
//! deposit scan finds.

use std::path::PathBuf;

use alloy::primitives::{Address as EvmAddress, B256, U256 as EvmU256};
use payrecon_sandbox::chain::SandboxChain;
use payrecon_sandbox::chaingateway::{notification, FakeChaingateway};
use payrecon_sandbox::merchant::{SandboxMerchant, SANDBOX_EVENTS_SECRET};
use payrecon_sandbox::{config_toml, SANDBOX_API_KEY, SANDBOX_TOKEN};

use crate::app::{App, AppError};
use crate::config::Config;
use crate::domain::{
    Address, Attach, BlockRef, PaymentKey, PlannedTransition, State, TxHash, U256,
};
use crate::engine::RunOptions;
use crate::store::{ApplyContext, NewOrder, Source};

mod balances;
mod solana;
use balances::{age_orders, check_balances};

fn addr(n: u8) -> Address {
    Address::parse(&format!("0x{}", format!("{n:02x}").repeat(20))).expect("a valid address")
}

/// `addr(n)` on the sandbox chain, whose transfers speak alloy's types.
fn evm(n: u8) -> EvmAddress {
    EvmAddress::repeat_byte(n)
}

/// A sandbox transaction's hash in the ledger's type (32 bytes always make one).
fn tx_hash(h: B256) -> Result<TxHash, AppError> {
    TxHash::parse(&format!("{h:#x}")).map_err(err)
}

pub(super) fn err(e: impl std::fmt::Display) -> AppError {
    AppError(e.to_string())
}

struct Paid {
    tx: TxHash,
    log_index: i64,
}

/// The sandbox's payments on chain, by situation.
pub(super) struct Payments {
    missing: Paid,
    lagging: Paid,
    failed: Paid,
    under: Paid,
    stray: Paid,
    sweep_only: Paid,
    native: TxHash,
    /// A-1013's payment in ETH, which no provider reports, and a drain of A-1005's address.
    pub(super) unreported: TxHash,
    pub(super) drain: TxHash,
    reverted: TxHash,
    untouched: Paid,
    recent: Paid,
    backwards: Paid,
    /// A-1012's two transfers: 30 USDT, then a 20 USDT top-up.
    split: (Paid, Paid),
}

/// What A-1013 costs and was paid, in wei (0.005 ETH).
const ETH_1013: u64 = 5_000_000_000_000_000;

/// The orders paid in the chain's coin rather than the token.
fn paid_in_eth(order_ref: &str) -> bool {
    matches!(order_ref, "A-1005" | "A-1013")
}

fn usdt(whole: u64) -> U256 {
    U256::from(whole) * U256::from(1_000_000u64)
}

/// Runs `payrecon demo`. Its log (warn and above, held by `telemetry::init_demo`) comes after
/// the report, on stderr, whether the demo worked or not.
pub async fn command(
    dir: Option<PathBuf>,
    held: Option<crate::telemetry::HeldLog>,
) -> super::Outcome {
    let result = run_demo(dir).await;
    if let Some(log) = held.map(|h| h.take()).filter(|l| !l.is_empty()) {
        if !crate::telemetry::json() {
            eprintln!();
            eprintln!("Log (warn and above; PAYRECON_LOG=info shows every line as it happens):");
        }
        eprint!("{log}");
    }
    result?;
    Ok(super::Exit::Done)
}

pub async fn run_demo(dir: Option<PathBuf>) -> Result<(), AppError> {
    let dir = demo_dir(dir)?;
    let db = dir.join("payrecon-demo.db");
    let _ = std::fs::remove_file(&db);
    let database_url = format!("sqlite://{}", db.display());

    let now = jiff::Timestamp::now();
    // The chain's blocks began two hours ago; the shop created its orders three hours ago.
    let genesis = u64::try_from(now.as_second())
        .unwrap_or(0)
        .saturating_sub(7200);
    let chain = SandboxChain::starting_at(1, genesis);
    let rpc_url = chain.serve().await.map_err(err)?;
    let (cg, cg_url) = FakeChaingateway::start(SANDBOX_API_KEY).await;
    // The merchant's application: events of every transition payrecon applies go there.
    let (merchant, merchant_url) = SandboxMerchant::start().await.map_err(err)?;
    let events = format!(
        "[events]\nurl = \"{merchant_url}\"\nsecret = \"{SANDBOX_EVENTS_SECRET}\"\n\
         timeout = \"5s\"\nflush_timeout = \"10s\"\n"
    );
    let (sol, sol_toml) = solana::start().await?;
    let toml = config_toml(
        &database_url,
        &cg_url,
        &rpc_url,
        &format!("{events}\n{sol_toml}"),
    );
    let config = Config::from_toml(&toml, std::iter::empty()).map_err(err)?;
    let app = App::build(config).await?;
    let store = &app.engine.store;

    let paid = pay_all(&chain)?;
    store.insert_orders(&orders()).await.map_err(err)?;
    age_orders(store, now).await?;
    solana::order_and_pay(store, &sol).await?;
    seed_handler(store, &chain, &paid).await?;
    list_notifications(&cg, &paid, now);

    let opts = RunOptions::last(jiff::SignedDuration::from_hours(48), now);
    let report = app.engine.run(&opts).await.map_err(err)?;
    println!("payrecon demo: one run against a sandbox provider and chain, SQLite ledger.");
    println!();
    let assets = crate::assets::Assets::of(&app.config);
    print!("{}", report.to_text_with(&assets));
    check_balances(&app, &assets, &paid).await?;
    if let Some(d) = &app.events {
        d.flush(std::time::Duration::from_secs(10)).await;
    }
    print_received(&merchant, &assets);
    print_next_steps(&dir, &db, &database_url, &cg)
}

/// `--dir`, created, or a fresh temporary directory that is kept.
fn demo_dir(dir: Option<PathBuf>) -> Result<PathBuf, AppError> {
    match dir {
        Some(d) => {
            std::fs::create_dir_all(&d).map_err(err)?;
            Ok(d)
        }
        None => Ok(tempfile::Builder::new()
            .prefix("payrecon-demo-")
            .tempdir()
            .map_err(err)?
            .keep()),
    }
}

/// The payments on the sandbox chain: old ones final once 70 more blocks are mined (two
/// share one block), recent ones 2 confirmations deep (below the threshold of 12).
fn pay_all(chain: &SandboxChain) -> Result<Payments, AppError> {
    let token: EvmAddress = SANDBOX_TOKEN.parse().map_err(err)?;
    let payer = evm(0xfe);
    let pay = |to: u8, amount: U256| {
        let (tx, log_index) =
            chain.add_token_transfer(token, payer, evm(to), EvmU256::from(amount));
        tx_hash(tx).map(|tx| Paid { tx, log_index })
    };
    let (missing, lagging, failed, under) = (
        pay(0x01, usdt(25))?,
        pay(0x02, usdt(40))?,
        pay(0x03, usdt(15))?,
        pay(0x04, usdt(20))?,
    );
    let (stray, sweep_only) = (pay(0x99, usdt(7))?, pay(0x0a, usdt(12))?);
    chain.fund_native(payer, EvmU256::from(10u64.pow(19)));
    let native =
        chain.add_native_transfer(payer, evm(0x05), EvmU256::from(2_000_000_000_000_000u64));
    let reverted = chain.add_reverted(token, payer, evm(0x06), EvmU256::from(usdt(9)));
    let untouched = pay(0x08, usdt(30))?;
    let split = (pay(0x0c, usdt(30))?, pay(0x0c, usdt(20))?);
    chain.mine_block();
    let unreported = chain.add_native_transfer(payer, evm(0x0d), EvmU256::from(ETH_1013));
    let drain = chain.add_native_transfer(
        evm(0x05),
        evm(0x66),
        EvmU256::from(1_500_000_000_000_000u64),
    );
    chain.mine(70);
    let (recent, backwards) = (pay(0x07, usdt(50))?, pay(0x0b, usdt(60))?);
    chain.mine_block();
    chain.mine(1);
    Ok(Payments {
        missing,
        lagging,
        failed,
        under,
        stray,
        sweep_only,
        native: tx_hash(native)?,
        unreported: tx_hash(unreported)?,
        drain: tx_hash(drain)?,
        reverted: tx_hash(reverted)?,
        untouched,
        recent,
        backwards,
        split,
    })
}

/// The ledger's orders, one per situation.
fn orders() -> Vec<NewOrder> {
    [
        (
            "A-1001",
            0x01,
            25u64,
            "a payment whose webhook never arrived",
        ),
        ("A-1002", 0x02, 40, "pending in the ledger, final on chain"),
        (
            "A-1003",
            0x03,
            15,
            "Chaingateway lists its notification as failed",
        ),
        ("A-1004", 0x04, 25, "underpaid: 20 of 25 USDT, held unpaid"),
        ("A-1005", 0x05, 0, "paid in ETH (native), more than due"),
        ("A-1006", 0x06, 9, "its transfer reverted on chain"),
        ("A-1007", 0x07, 50, "paid 2 blocks ago: pending"),
        ("A-1008", 0x08, 30, "already final, nothing to do"),
        ("A-1009", 0x09, 10, "never paid"),
        (
            "A-1010",
            0x0a,
            12,
            "confirmed in the ledger, no provider mentions it",
        ),
        (
            "A-1011",
            0x0b,
            60,
            "final in the ledger while the chain shows 2 confirmations",
        ),
        (
            "A-1012",
            0x0c,
            50,
            "paid in two transfers: 30 + a 20 USDT top-up",
        ),
        ("A-1013", 0x0d, 0, "paid in ETH, reported by no one"),
    ]
    .iter()
    .map(|(r, to, due, _)| NewOrder {
        order_ref: r.to_string(),
        chain: "ethereum".into(),
        pay_to: addr(*to).to_string(),
        asset: if paid_in_eth(r) {
            "native".into()
        } else {
            SANDBOX_TOKEN.into()
        },
        amount_due: match *r {
            "A-1005" => U256::from(1_000_000_000_000_000u64),
            "A-1013" => U256::from(ETH_1013),
            _ => usdt(*due),
        },
    })
    .collect()
}

/// What the merchant's webhook handler did before payrecon ever ran.
async fn seed_handler(
    store: &crate::store::Store,
    chain: &SandboxChain,
    p: &Payments,
) -> Result<(), AppError> {
    let seeded = [
        ("A-1002", &p.lagging, usdt(40), State::Pending),
        ("A-1008", &p.untouched, usdt(30), State::Final),
        ("A-1010", &p.sweep_only, usdt(12), State::Confirmed),
        ("A-1011", &p.backwards, usdt(60), State::Final),
    ];
    let ctx = ApplyContext {
        source: Source::Webhook,
        provider: "demo-handler".into(),
        run_id: String::new(),
        events: false,
        retries: Default::default(),
    };
    for (order_ref, paid, amount, state) in seeded {
        let snap = store
            .order_view(order_ref)
            .await
            .map_err(err)?
            .ok_or_else(|| err("seeded order vanished"))?;
        let hash = paid.tx.as_str().parse::<B256>().map_err(err)?;
        let block = chain.block_of(hash).unwrap_or(0);
        let t = PlannedTransition {
            order_id: snap.id,
            order_ref: order_ref.into(),
            from: State::Unpaid,
            to: state,
            attach: Some(Attach {
                key: PaymentKey {
                    chain: "ethereum".into(),
                    tx_hash: paid.tx.clone(),
                    log_index: paid.log_index,
                },
                amount,
                block: BlockRef {
                    number: block,
                    hash: String::new(),
                },
            }),
            credit: None,
        };
        store.apply(&[t], &ctx).await.map_err(err)?;
    }
    Ok(())
}

/// What Chaingateway lists, 30 minutes old; one of them on the failed list.
fn list_notifications(cg: &FakeChaingateway, p: &Payments, now: jiff::Timestamp) {
    let at = now
        .checked_sub(jiff::SignedDuration::from_mins(30))
        .unwrap_or(now);
    let record = |id: &str, tx: &TxHash, asset: &str, to: u8, amount: &str| {
        notification(id, tx.as_str(), asset, addr(to).as_str(), Some(amount), at)
    };
    for r in [
        record("101", &p.missing.tx, SANDBOX_TOKEN, 0x01, "25"),
        record("102", &p.lagging.tx, SANDBOX_TOKEN, 0x02, "40"),
        record("103", &p.failed.tx, SANDBOX_TOKEN, 0x03, "15"),
        record("104", &p.under.tx, SANDBOX_TOKEN, 0x04, "20"),
        record("105", &p.native, "native", 0x05, "0.002"),
        record("106", &p.reverted, SANDBOX_TOKEN, 0x06, "9"),
        record("107", &p.recent.tx, SANDBOX_TOKEN, 0x07, "50"),
        record("108", &p.untouched.tx, SANDBOX_TOKEN, 0x08, "30"),
        record("109", &p.stray.tx, SANDBOX_TOKEN, 0x99, "7"),
        record("111", &p.backwards.tx, SANDBOX_TOKEN, 0x0b, "60"),
        record("112", &p.split.0.tx, SANDBOX_TOKEN, 0x0c, "30"),
        record("113", &p.split.1.tx, SANDBOX_TOKEN, 0x0c, "20"),
    ] {
        cg.add_notification("ethereum", r);
    }
    cg.mark_failed("ethereum", "103");
}

fn print_received(merchant: &SandboxMerchant, assets: &crate::assets::Assets) {
    let received = merchant.received();
    println!();
    println!(
        "The sandbox merchant endpoint received {} event(s) (Standard Webhooks, signature checked):",
        received.len()
    );
    for e in &received {
        println!(
            "  {:<22} {:<7} {:<44} {}{}",
            e.kind,
            e.order_ref,
            // Amounts for people: A-1005 and A-1013 are paid in the chain's coin, A-1014 in
            // USDC on Solana, the others in the token.
            match e.order_ref.as_str() {
                "A-1014" => assets.detail("solana", Some(solana::USDC), &e.summary),
                r if paid_in_eth(r) => assets.detail("ethereum", Some("native"), &e.summary),
                _ => assets.detail("ethereum", Some(SANDBOX_TOKEN), &e.summary),
            },
            e.id,
            if e.signature_ok {
                ""
            } else {
                "  (BAD SIGNATURE)"
            }
        );
    }
}

/// Where the ledger is, how to look into it, and how to serve it.
fn print_next_steps(
    dir: &std::path::Path,
    db: &std::path::Path,
    database_url: &str,
    cg: &FakeChaingateway,
) -> Result<(), AppError> {
    let config_path = dir.join("config.toml");
    let serve_toml = config_toml(
        database_url,
        "http://127.0.0.1:1/api/v2",
        "http://127.0.0.1:8545",
        "",
    );
    std::fs::write(&config_path, serve_toml).map_err(err)?;
    println!();
    let resends: Vec<String> = cg
        .retries()
        .iter()
        .map(|(chain, id)| format!("{chain} notification {id}"))
        .collect();
    println!(
        "The sandbox provider was asked to resend {} failed notification(s): {}",
        resends.len(),
        resends.join(", ")
    );
    println!("The ledger is {}", db.display());
    println!(
        "  sqlite3 {} 'select order_ref, state, amount_due, amount_paid from orders'",
        db.display()
    );
    println!(
        "  sqlite3 {} 'select * from payrecon_transitions'",
        db.display()
    );
    println!(
        "  sqlite3 {} 'select id, type, delivered_at from payrecon_events'",
        db.display()
    );
    println!(
        "To serve it (metrics on http://127.0.0.1:9187/metrics), point the provider and chain in"
    );
    println!("{} at real endpoints, then:", config_path.display());
    println!("  payrecon --config {} serve", config_path.display());
    println!(
        "  (from a source checkout: cargo run --release -- --config {} serve)",
        config_path.display()
    );
    Ok(())
}
