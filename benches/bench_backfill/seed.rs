//! The data set: N provider records on the fake Chaingateway, their transfers on the sandbox
//! chain (all final), and N orders in the ledger as a merchant's webhook handler left them.
//!
//! Mix per 1,000 records (interleaved, by index): 10 `missing` (ledger unpaid), 10 `lagging`
//! (ledger pending, chain final), 5 failed notifications (ledger unpaid, on the failed list),
//! 1 stray payment (to an address no order uses; its order index stays an unpaid order that
//! is never paid), and 974 already applied by the handler (ledger final, nothing to do).

use std::time::{Duration, Instant};

use alloy::primitives::U256 as EvmU256;
use payrecon::domain::{
    Address, Attach, BlockRef, PaymentKey, PlannedTransition, State, TxHash, U256,
};
use payrecon::store::{ApplyContext, ApplyOutcome, NewOrder, Source, Store};
use payrecon_testkit::inspect::Inspect;
use payrecon_testkit::sandbox::chain::SandboxChain;
use payrecon_testkit::sandbox::chaingateway::{notification, FakeChaingateway};
use payrecon_testkit::sandbox::SANDBOX_TOKEN;

pub const CHAIN: &str = "ethereum";
/// Transfers per sandbox block.
const PER_BLOCK: usize = 200;
/// Transitions per `store.apply` call while seeding.
const SEED_BATCH: usize = 5_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Done,
    Missing,
    Lagging,
    Failed,
    Stray,
}

pub fn kind_of(i: usize) -> Kind {
    match i % 1000 {
        0..10 => Kind::Missing,
        10..20 => Kind::Lagging,
        20..25 => Kind::Failed,
        25 => Kind::Stray,
        _ => Kind::Done,
    }
}

#[derive(Debug, Default, Clone, Copy)]
pub struct Mix {
    pub done: u64,
    pub missing: u64,
    pub lagging: u64,
    pub failed: u64,
    pub stray: u64,
}

pub struct Dataset {
    pub n: usize,
    pub mix: Mix,
    /// Per record index: tx hash, block-level log index, block number.
    payments: Vec<(TxHash, i64, u64)>,
}

fn address(n: u64) -> Address {
    Address::parse(&format!("0x{n:040x}")).expect("40 hex digits")
}

/// The deposit address of order `i`; stray payments go to another range.
fn pay_to(i: usize) -> Address {
    address(0x1_0000_0000 + i as u64)
}

fn stray_to(i: usize) -> Address {
    address(0x2_0000_0000_0000 + i as u64)
}

fn whole_usdt(i: usize) -> u64 {
    (i % 1000) as u64 + 1
}

fn amount(i: usize) -> U256 {
    U256::from(whole_usdt(i)) * U256::from(1_000_000u64)
}

/// Chain transfers and provider records for `n` records.
pub fn build_sandbox(chain: &SandboxChain, cg: &FakeChaingateway, n: usize) -> Dataset {
    let token = Address::parse(SANDBOX_TOKEN).expect("token address");
    let payer = address(0xfe);
    let mut mix = Mix::default();
    let mut payments = Vec::with_capacity(n);
    for start in (0..n).step_by(PER_BLOCK) {
        let end = (start + PER_BLOCK).min(n);
        let batch: Vec<(Address, EvmU256)> = (start..end)
            .map(|i| {
                let to = if kind_of(i) == Kind::Stray {
                    stray_to(i)
                } else {
                    pay_to(i)
                };
                (to, EvmU256::from(amount(i)))
            })
            .collect();
        let added = chain.add_token_transfers(&token, &payer, &batch);
        let block = chain.mine_block();
        payments.extend(added.into_iter().map(|(tx, li)| (tx, li, block)));
    }
    chain.mine(70);
    let now = jiff::Timestamp::now();
    for (i, (tx, _, _)) in payments.iter().enumerate() {
        let kind = kind_of(i);
        match kind {
            Kind::Done => mix.done += 1,
            Kind::Missing => mix.missing += 1,
            Kind::Lagging => mix.lagging += 1,
            Kind::Failed => mix.failed += 1,
            Kind::Stray => mix.stray += 1,
        }
        let to = if kind == Kind::Stray {
            stray_to(i)
        } else {
            pay_to(i)
        };
        let created = now - jiff::SignedDuration::from_secs(60 + (n - i) as i64);
        let id = (i + 1).to_string();
        let amount = whole_usdt(i).to_string();
        let record = notification(
            &id,
            tx.as_str(),
            SANDBOX_TOKEN,
            to.as_str(),
            Some(&amount),
            created,
        );
        cg.add_notification(CHAIN, record);
        if kind == Kind::Failed {
            cg.mark_failed(CHAIN, &id);
        }
    }
    Dataset { n, mix, payments }
}

impl Dataset {
    /// The records as floor B loads them (the provider's view: key, address, amount).
    pub fn rows(&self) -> Vec<crate::floor::Row<'_>> {
        self.payments
            .iter()
            .enumerate()
            .map(|(i, (tx, log_index, _))| crate::floor::Row {
                tx_hash: tx.as_str(),
                log_index: *log_index,
                to: if kind_of(i) == Kind::Stray {
                    stray_to(i)
                } else {
                    pay_to(i)
                }
                .to_string(),
                amount: amount(i).to_string(),
            })
            .collect()
    }
}

pub struct Seeded {
    pub insert_orders: Duration,
    pub webhook_apply: Duration,
}

/// Inserts the `n` orders (one per record index, id = index + 1 in a fresh database) and
/// applies what the merchant's handler did, through `store.apply` with `Source::Webhook`.
pub async fn seed_ledger(store: &Store, ds: &Dataset) -> anyhow::Result<Seeded> {
    let t0 = Instant::now();
    let orders: Vec<NewOrder> = (0..ds.n)
        .map(|i| NewOrder {
            order_ref: order_ref(i),
            chain: CHAIN.into(),
            pay_to: pay_to(i).to_string(),
            asset: SANDBOX_TOKEN.into(),
            amount_due: amount(i),
        })
        .collect();
    store.insert_orders(&orders).await?;
    let insert_orders = t0.elapsed();
    for i in [0, ds.n - 1] {
        let id = store.order_by_ref(&order_ref(i)).await?.map(|o| o.id);
        anyhow::ensure!(
            id == Some(i as i64 + 1),
            "order {i} has id {id:?}, expected {}",
            i + 1
        );
    }

    let t1 = Instant::now();
    let ctx = ApplyContext {
        source: Source::Webhook,
        provider: "bench-handler".into(),
        run_id: String::new(),
        events: false,
        retries: Default::default(),
    };
    let mut batch = Vec::with_capacity(SEED_BATCH);
    for (i, (tx, log_index, block)) in ds.payments.iter().enumerate() {
        let to = match kind_of(i) {
            Kind::Done => State::Final,
            Kind::Lagging => State::Pending,
            _ => continue,
        };
        batch.push(PlannedTransition {
            order_id: i as i64 + 1,
            order_ref: order_ref(i),
            from: State::Unpaid,
            to,
            attach: Some(Attach {
                key: PaymentKey {
                    chain: CHAIN.into(),
                    tx_hash: tx.clone(),
                    log_index: *log_index,
                },
                amount: amount(i),
                block: BlockRef {
                    number: *block,
                    hash: String::new(),
                },
            }),
            credit: None,
        });
        if batch.len() == SEED_BATCH {
            apply_all(store, &batch, &ctx).await?;
            batch.clear();
        }
    }
    apply_all(store, &batch, &ctx).await?;
    // The handler made them final long ago (a backfill after an outage): older than the
    // chains' `recheck_final`, so the sweep does not re-read them all.
    let long_ago = payrecon_testkit::inspect::time_literal(store, "2000-01-01T00:00:00Z".parse()?);
    let backdate = format!("UPDATE orders SET state_changed_at = {long_ago} WHERE state = 'final'");
    payrecon_testkit::on_pool!(store, p => sqlx::query(&backdate).execute(p).await.map(|_| ())?);
    Ok(Seeded {
        insert_orders,
        webhook_apply: t1.elapsed(),
    })
}

async fn apply_all(
    store: &Store,
    batch: &[PlannedTransition],
    ctx: &ApplyContext,
) -> anyhow::Result<()> {
    let outcomes = store.apply(batch, ctx).await?;
    let bad = outcomes
        .iter()
        .filter(|o| !matches!(o, ApplyOutcome::Applied { .. }))
        .count();
    anyhow::ensure!(bad == 0, "seeding: {bad} webhook transitions not applied");
    Ok(())
}

fn order_ref(i: usize) -> String {
    format!("B-{i:07}")
}
