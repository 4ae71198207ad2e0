//! The shared driver of the balance slices (this one and `balances_evm`): a slice's world as the
//! driver sees it, its runs and checks in random order, and the invariants after every check.

use std::collections::{HashMap, HashSet};

use payrecon::app::App;
use payrecon::domain::State;
use payrecon::engine::Trigger;
use payrecon::store::{ExceptionFilter, NewOrder};
use rand::rngs::StdRng;
use rand::Rng;

use crate::world::opts;

use super::{Addr, Kind, Tx};

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

pub(super) async fn run<S: Slice>(w: &mut S) -> Result<(), String> {
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

pub(super) async fn check<S: Slice>(w: &mut S) -> Result<(), String> {
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
