//! A write batch, decided once for every backend (`apply_batch`), and one transition within
//! it (`apply_one`): the rank check, the attach-only case, the conditional UPDATE, its audit
//! row and its event in one savepoint, and what a miss means. A backend only spells the
//! statements (`ApplySql`, implemented in its folder's `apply.rs`).

use std::collections::HashMap;

use jiff::Timestamp;
use sqlx::{Acquire, Transaction};

use super::outbox::{self, EventOrder, NewEvent};
use super::rows::{counted, sqlite_ts};
use super::{is_unique_violation, ApplyContext, ApplyOutcome, Fence, Guard, WriteError};
use crate::domain::{NewPayment, PlannedTransition, State};

mod macros;
mod set;
mod shared;

pub(super) use macros::in_savepoint;
pub(super) use set::*;
pub(super) use shared::SharedSql;

/// One write batch, the same on every backend: begin (`Dialect::BEGIN_WRITE`), check the
/// lease, read (and on PostgreSQL lock) the orders' states, check an operator's decision
/// still stands, apply what the backend does set-wise (`ApplySql::apply_set`), the rest one
/// transition at a time (`apply_one`), claim the decision's exception, commit.
pub(super) async fn apply_batch<DB: ApplySql>(
    pool: &sqlx::Pool<DB>,
    batch: &[PlannedTransition],
    ctx: &ApplyContext,
    guard: Guard<'_>,
    opens: Option<&super::Opening<'_>>,
) -> Result<Vec<ApplyOutcome>, WriteError> {
    let now = sqlite_ts(Timestamp::now());
    let mut tx = counted(pool).begin_with(DB::BEGIN_WRITE).await?;
    if let Guard::Lease(f) = guard {
        DB::check_fence(&mut tx, f).await?;
    }
    let ids: Vec<i64> = batch.iter().map(|t| t.order_id).collect();
    let mut current: HashMap<i64, String> =
        DB::lock_states(&mut tx, &ids).await?.into_iter().collect();
    if let Guard::Exception(r) = guard {
        DB::check_paid(&mut tx, r).await?;
    }
    let done = DB::apply_set(&mut tx, batch, ctx, &now, &current).await?;
    let mut out = Vec::with_capacity(batch.len());
    for (t, done) in batch.iter().zip(done) {
        out.push(match done {
            Some(outcome) => outcome,
            None => apply_one(&mut tx, t, ctx, &now, &mut current).await?,
        });
    }
    if let Guard::Exception(r) = guard {
        DB::claim(&mut tx, r, &out).await?;
    }
    if let Some(o) = opens {
        let ids: HashMap<&str, i64> = batch
            .iter()
            .map(|t| (t.order_ref.as_str(), t.order_id))
            .collect();
        let id_of = |r: &str| ids.get(r).copied();
        DB::upsert_exceptions(&mut tx, o.by, &(o.rows)(&out), &id_of).await?;
    }
    counted(tx).commit().await?;
    Ok(out)
}

/// The statements of a write batch that a backend spells its own way. Each sends one
/// statement, except `apply_set`. What every backend sends alike is `SharedSql`'s (a
/// supertrait, so `DB::claim` and the like are called the same way); `credit`, `advance` and
/// `record_transition` default to its `RETURNING` statements, which MariaDB/MySQL overrides.
pub(super) trait ApplySql: shared::SharedSql + super::exceptions::ExceptionSql {
    /// Fails the batch with `WriteError::Fenced` unless `fence` still holds (and, on PostgreSQL,
    /// keeps the lease row locked until the commit).
    async fn check_fence(
        tx: &mut Transaction<'static, Self>,
        fence: &Fence,
    ) -> Result<(), WriteError>;
    /// `(id, state)` of these orders, locked until the commit (PostgreSQL `FOR UPDATE`, in id
    /// order; SQLite's write lock is taken at `BEGIN IMMEDIATE`).
    async fn lock_states(
        tx: &mut Transaction<'static, Self>,
        ids: &[i64],
    ) -> Result<Vec<(i64, String)>, sqlx::Error>;
    /// What the backend applies set-wise, one entry per step: `Some` outcome when done here,
    /// `None` for a step to apply on its own (PostgreSQL: the whole batch when it can;
    /// SQLite: the keys the merchant's code wrote).
    async fn apply_set(
        tx: &mut Transaction<'static, Self>,
        batch: &[PlannedTransition],
        ctx: &ApplyContext,
        now: &str,
        current: &HashMap<i64, String>,
    ) -> Result<Vec<Option<ApplyOutcome>>, WriteError>;
    /// Credits a payment to an order with no key whose `amount_paid` is still the one the
    /// plan read (`payrecon_payments`): the payment's id, `None` when nothing was written.
    async fn credit(
        sp: &mut Transaction<'_, Self>,
        order_id: i64,
        p: &NewPayment,
        ctx: &ApplyContext,
        now: &str,
    ) -> Result<Option<i64>, sqlx::Error> {
        Self::credit_returning(sp, order_id, p, ctx, now).await
    }
    /// Moves the order's payments up to the block its key names to at least `to`.
    async fn follow(
        sp: &mut Transaction<'_, Self>,
        order_id: i64,
        to: State,
        now: &str,
    ) -> Result<(), sqlx::Error>;
    /// Moves the order to `t.to` if its rank is below (and writes `t.attach` when the key is
    /// free); the order row as the UPDATE left it, or `None` when nothing matched.
    async fn advance(
        sp: &mut Transaction<'_, Self>,
        t: &PlannedTransition,
        now: &str,
    ) -> Result<Option<EventOrder>, sqlx::Error> {
        Self::advance_returning(sp, t, now).await
    }
    /// The audit row; `None` when `(order, to_state)` exists already.
    async fn record_transition(
        sp: &mut Transaction<'_, Self>,
        t: &PlannedTransition,
        from: State,
        ctx: &ApplyContext,
        now: &str,
    ) -> Result<Option<i64>, sqlx::Error> {
        Self::record_transition_returning(sp, t, from, ctx, now).await
    }
    /// The transition's event in the outbox.
    async fn insert_event(
        sp: &mut Transaction<'_, Self>,
        event: &NewEvent,
        now: &str,
    ) -> Result<(), sqlx::Error>;
}

/// Applies one planned transition inside the batch's transaction. `current` holds the states
/// read (and locked, on PostgreSQL) at the start of the batch and is kept up to date.
pub(super) async fn apply_one<DB: ApplySql>(
    tx: &mut Transaction<'static, DB>,
    t: &PlannedTransition,
    ctx: &ApplyContext,
    now: &str,
    current: &mut HashMap<i64, String>,
) -> Result<ApplyOutcome, sqlx::Error> {
    let Some(from) = current.get(&t.order_id).map(|s| State::parse(s)) else {
        tracing::warn!(order_ref = %t.order_ref, "The order to update no longer exists.");
        return Ok(ApplyOutcome::Duplicate);
    };
    if t.from == t.to {
        // No transition: a payment credited to an order that stays where it is (held short,
        // or advanced from a provider's status), and its key when it completed the cover.
        if !from.as_ref().is_ok_and(|s| *s == t.to) {
            return Ok(ApplyOutcome::Backwards);
        }
        return stay(tx, t, ctx, now).await;
    }
    let from = match from {
        Ok(s) if s >= t.to => return Ok(ApplyOutcome::Backwards),
        Ok(s) => s,
        Err(_) => return Ok(ApplyOutcome::Duplicate),
    };
    let mut sp = Acquire::begin(counted(&mut *tx)).await?;
    if let Some(refused) = credit::<DB>(&mut sp, t, ctx, now).await? {
        counted(sp).rollback().await?;
        return Ok(refused);
    }
    let order = match DB::advance(&mut sp, t, now).await {
        Ok(r) => r,
        Err(e) if is_unique_violation(&e) => {
            counted(sp).rollback().await?;
            return Ok(ApplyOutcome::Duplicate);
        }
        Err(e) => return Err(e),
    };
    let Some(order) = order else {
        counted(sp).rollback().await?;
        let state = DB::state_of(tx, t.order_id).await?;
        return Ok(outcome_after_miss(state.as_deref(), t.to));
    };
    let Some(transition_id) = DB::record_transition(&mut sp, t, from, ctx, now).await? else {
        // (order, to_state) was applied before (the row has been moved back since): undo.
        counted(sp).rollback().await?;
        return Ok(ApplyOutcome::Duplicate);
    };
    if needs_follow(t) {
        DB::follow(&mut sp, t.order_id, t.to, now).await?;
    }
    if ctx.events {
        let event = outbox::new_event(t.order_id, transition_id, from, t.to, &order, ctx, now);
        DB::insert_event(&mut sp, &event, now).await?;
    }
    counted(sp).commit().await?;
    current.insert(t.order_id, t.to.as_str().to_string());
    Ok(ApplyOutcome::Applied { from })
}

/// A step that moves no state: a credit (held, or with the key of the payment that completed
/// the cover of an order already at that state), or an attach alone.
async fn stay<DB: ApplySql>(
    tx: &mut Transaction<'static, DB>,
    t: &PlannedTransition,
    ctx: &ApplyContext,
    now: &str,
) -> Result<ApplyOutcome, sqlx::Error> {
    let mut sp = Acquire::begin(counted(&mut *tx)).await?;
    if let Some(refused) = credit::<DB>(&mut sp, t, ctx, now).await? {
        counted(sp).rollback().await?;
        return Ok(refused);
    }
    let outcome = match (&t.attach, &t.credit) {
        (Some(a), _) => DB::attach_only(&mut sp, t.order_id, a).await?,
        (None, Some(p)) if DB::set_paid(&mut sp, t.order_id, p).await? => ApplyOutcome::Credited,
        (None, Some(_)) => ApplyOutcome::Duplicate,
        (None, None) => ApplyOutcome::Backwards,
    };
    if matches!(outcome, ApplyOutcome::Attached | ApplyOutcome::Credited) {
        counted(sp).commit().await?;
    } else {
        counted(sp).rollback().await?;
    }
    Ok(outcome)
}

/// Writes the step's credit, when it has one, and its `order.payment_received` event (when
/// events are on; before the transition's, so an order's events keep their order). `Some`
/// outcome when the credit was refused: `Duplicate` (the key is credited or held already) or
/// `Stale` (the order's amount or key changed since the step was planned).
async fn credit<DB: ApplySql>(
    sp: &mut Transaction<'_, DB>,
    t: &PlannedTransition,
    ctx: &ApplyContext,
    now: &str,
) -> Result<Option<ApplyOutcome>, sqlx::Error> {
    let Some(p) = &t.credit else {
        return Ok(None);
    };
    let Some(payment_id) = DB::credit(sp, t.order_id, p, ctx, now).await? else {
        return Ok(Some(if DB::key_taken(sp, &p.key).await? {
            ApplyOutcome::Duplicate
        } else {
            ApplyOutcome::Stale
        }));
    };
    // A key the merchant's own code wrote is recorded, not credited: no event.
    if ctx.events && !p.merchant {
        let event = outbox::payment_event(payment_id, t, p, ctx, now);
        DB::insert_event(sp, &event, now).await?;
    }
    Ok(None)
}
