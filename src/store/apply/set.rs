//! What the backends' set-wise paths share (SQLite's and MariaDB/MySQL's adoption of keys
//! the merchant wrote, PostgreSQL's `UNNEST` batch): which steps a batch has, their payment
//! rows and events, and the outcomes of what was written set-wise.

use std::collections::HashMap;

use crate::domain::{NewPayment, PlannedTransition, State};
use crate::store::dialect::Dialect;
use crate::store::outbox::{self, EventOrder, NewEvent};
use crate::store::{ApplyContext, ApplyOutcome};

/// Whether `t` records a key the merchant's code wrote into an order that stays where it is
/// (`state`, as read): its payment row and the chain's amount and block on the order.
pub(in crate::store) fn is_adoption(t: &PlannedTransition, state: &str) -> bool {
    let recorded = match (&t.credit, &t.attach) {
        (Some(p), Some(a)) => p.merchant && p.key == a.key,
        _ => false,
    };
    recorded && t.from == t.to && state == t.to.as_str()
}

/// The adoptions of `batch` (`is_adoption`, of orders named once in the batch) as JSON rows
/// `[order id, chain, tx hash, log index, amount, block number, block hash, state, block
/// time]`, for the backends that record them set-wise (SQLite, MariaDB/MySQL).
pub(in crate::store) fn adoption_rows<D: Dialect>(
    batch: &[PlannedTransition],
    current: &HashMap<i64, String>,
) -> Vec<serde_json::Value> {
    let mut seen: HashMap<i64, usize> = HashMap::new();
    for t in batch {
        *seen.entry(t.order_id).or_default() += 1;
    }
    batch
        .iter()
        .filter(|t| seen.get(&t.order_id) == Some(&1))
        .filter(|t| current.get(&t.order_id).is_some_and(|s| is_adoption(t, s)))
        .filter_map(|t| {
            Some(serde_json::Value::Array(payment_row::<D>(
                t.order_id,
                t.credit.as_ref()?,
            )))
        })
        .collect()
}

/// A payment credited to order `order_id` as a JSON row `[order id, chain, tx hash, log
/// index, amount, block number, block hash, state, block time]` (a backend's set-wise
/// statements read it with `JSON_TABLE`).
pub(in crate::store) fn payment_row<D: Dialect>(
    order_id: i64,
    p: &NewPayment,
) -> Vec<serde_json::Value> {
    vec![
        order_id.into(),
        p.key.chain.as_str().into(),
        p.key.tx_hash.as_str().into(),
        p.key.log_index.into(),
        p.amount.to_string().into(),
        i64::try_from(p.block.number).unwrap_or(i64::MAX).into(),
        p.block.hash.as_str().into(),
        p.state.as_str().into(),
        p.block_time.map(D::ts_bind).into(),
    ]
}

/// `apply_set`'s answer when the orders `adopted` were recorded set-wise: `Attached` for
/// them, the rest to `apply_one`.
pub(in crate::store) fn adopted_outcomes(
    batch: &[PlannedTransition],
    adopted: &std::collections::HashSet<i64>,
) -> Vec<Option<ApplyOutcome>> {
    batch
        .iter()
        .map(|t| {
            adopted
                .contains(&t.order_id)
                .then_some(ApplyOutcome::Attached)
        })
        .collect()
}

/// Whether an applied transition must move the order's other payments too: it credits none
/// (the sweep, a lagging row), or the payment that completed the cover is not the new one.
pub(in crate::store) fn needs_follow(t: &PlannedTransition) -> bool {
    match (&t.credit, &t.attach) {
        (Some(p), Some(a)) => p.key != a.key,
        (Some(_), None) => false,
        (None, _) => true,
    }
}

/// A conditional UPDATE that matched nothing: the order is already at or past `to`
/// (backwards), or it is gone or its key is taken (a duplicate).
pub(in crate::store) fn outcome_after_miss(state: Option<&str>, to: State) -> ApplyOutcome {
    match state.map(State::parse) {
        Some(Ok(s)) if s >= to => ApplyOutcome::Backwards,
        _ => ApplyOutcome::Duplicate,
    }
}

/// What one step of a set-wise batch does (PostgreSQL's `batch.rs`, MariaDB/MySQL's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::store) enum Step {
    /// Moves the order forward from this (locked) state.
    Forward(State),
    /// Records the key the merchant's code wrote (its payment row, the chain's amount and
    /// block on the order); the state stays.
    Adopt,
}

/// Each step of the batch when every one moves a distinct order forward, or records a key the
/// merchant's code wrote into an order that stays where it is (an adoption); `None` otherwise
/// (the row-by-row path decides those), and for a batch of fewer than two.
pub(in crate::store) fn classify(
    batch: &[PlannedTransition],
    current: &HashMap<i64, String>,
) -> Option<Vec<Step>> {
    if batch.len() < 2 {
        return None;
    }
    let mut ids = std::collections::HashSet::with_capacity(batch.len());
    let mut steps = Vec::with_capacity(batch.len());
    for t in batch {
        if !ids.insert(t.order_id) {
            return None;
        }
        let current = current.get(&t.order_id)?;
        let s = State::parse(current).ok()?;
        if t.from == t.to {
            if !is_adoption(t, current) {
                return None;
            }
            steps.push(Step::Adopt);
            continue;
        }
        if s >= t.to {
            return None;
        }
        steps.push(Step::Forward(s));
    }
    Some(steps)
}

/// The credits of a set-wise batch: `(order id, payment)` of each step that credits one.
pub(in crate::store) fn credits_of(batch: &[PlannedTransition]) -> Vec<(i64, &NewPayment)> {
    batch
        .iter()
        .filter_map(|t| Some((t.order_id, t.credit.as_ref()?)))
        .collect()
}

/// Each transition's event of a set-wise batch, from its order as the UPDATE left it
/// (`orders`, by id) and its audit row's id (`transitions`, by order id); `None` when a step
/// lacks either.
pub(in crate::store) fn transition_events(
    batch: &[PlannedTransition],
    from: &[State],
    orders: &HashMap<i64, EventOrder>,
    transitions: &HashMap<i64, i64>,
    ctx: &ApplyContext,
    now: &str,
) -> Option<Vec<NewEvent>> {
    let mut events = Vec::with_capacity(batch.len());
    for (t, from) in batch.iter().zip(from) {
        let order = orders.get(&t.order_id)?;
        let transition_id = *transitions.get(&t.order_id)?;
        events.push(outbox::new_event(
            t.order_id,
            transition_id,
            *from,
            t.to,
            order,
            ctx,
            now,
        ));
    }
    Some(events)
}
