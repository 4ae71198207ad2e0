//! Crediting a payment to an order (docs/configuration.md, "Amounts"): the cover rule decides
//! whether the order moves, which payment its key names, and what the findings say (held short,
//! overpaid, short within tolerance). Shared by the planners that give an order a payment: by
//! deposit address and by the provider's `order_ref`. No IO.
//!
//! Here: an order without a payment key taking a payment (`plan_credit`) and the parts of the
//! cover; `keyed`: orders that name their payment or hold payments short; `report`: the
//! findings and their details.

mod keyed;
mod report;

use std::collections::HashMap;

use self::report::{advanced, held, late, mismatch, overflowed};
use super::cover::{cover, Credit};
use super::model::{State, U256};
use super::plan::{
    Attach, ChainTransfer, CreditedPayment, LedgerRow, LedgerView, NewPayment, Observation, Plan,
    PlannedTransition,
};

pub(super) use self::keyed::{held_again, plan_covered, plan_keyed_credit};
pub(super) use self::report::moved_held;

/// Payments a plan has credited so far, per order (held ones: the order can take more).
#[derive(Debug, Default)]
pub(super) struct InPlan {
    credits: HashMap<i64, Vec<CreditedPayment>>,
}

impl InPlan {
    /// The order's credited payments: those the ledger holds, then those of this plan.
    pub(super) fn credits(&self, row: &LedgerRow) -> Vec<CreditedPayment> {
        let mut all = row.credits.clone();
        if let Some(more) = self.credits.get(&row.id) {
            all.extend(more.iter().cloned());
        }
        all
    }

    /// The order's `amount_paid` as this plan has left it.
    pub(super) fn paid(&self, row: &LedgerRow) -> Option<U256> {
        let more = self.credits.get(&row.id);
        match (row.amount_paid, more) {
            (p, None) => p,
            (p, Some(m)) => Some(m.iter().fold(p.unwrap_or(U256::ZERO), |acc, c| {
                acc.saturating_add(c.amount)
            })),
        }
    }

    fn push(&mut self, order_id: i64, c: CreditedPayment) {
        self.credits.entry(order_id).or_default().push(c);
    }
}

/// What crediting did to the order: whether it is now taken (covered, or given its key) for
/// the rest of the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Credited {
    /// The order is paid (or advanced): no other payment goes to it in this plan.
    Covered,
    /// The order is still short: a later payment of this plan may top it up.
    Short,
}

/// Credits transfer `t` to `row` (no payment key yet: unpaid, or advanced from a provider's
/// status) and plans what follows from the cover rule.
pub(super) fn plan_credit(
    plan: &mut Plan,
    obs: &Observation,
    t: &ChainTransfer,
    row: &LedgerRow,
    ledger: &LedgerView,
    in_plan: &mut InPlan,
    how: &str,
) -> Credited {
    // An order that expires is judged by the payment's block time; without one the payment
    // waits (the engine reads block times for such orders, so this is a block it could not).
    if waits_for_block_time(row, t) {
        return Credited::Short;
    }
    // The order holds this payment at its pre-reorg position (a provider that names the
    // order sees it before the sweep moved it): never a second credit.
    if let Some(f) = moved_held(obs, t, row) {
        plan.findings.push(f);
        return Credited::Short;
    }
    let accept_late = ledger.policy.accept_late;
    let held_late = row.is_late(t.block_time) && !accept_late;
    let prior = in_plan.credits(row);
    let paid_before = in_plan.paid(row);
    let (parts, which) = cover_parts(&prior, t, row, accept_late, held_late);
    let tolerance = ledger.policy.tolerance(&row.chain, &row.asset);
    // `amount_paid` after it: the payments on chain (a gone one counts toward nothing).
    let total = paid_on_chain(&prior, t.amount);
    let kept = total.filter(|&s| ledger.policy.keeps(s));
    let (Ok(c), Some(total)) = (cover(row.amount_due, tolerance, &parts), kept) else {
        let past = total.and(ledger.policy.max_paid);
        plan.findings.push(overflowed(obs, t, row, past));
        return Credited::Short;
    };
    let credit = new_payment(t, row, paid_before, total, held_late, false);
    let attach = c
        .completing
        .map(|i| completing_attach(which[i], &prior, t, total));
    let covered = attach.is_some();
    let to = row.state.max(c.state);
    let idx = push_transition(plan, row, to, attach, Some(credit));
    in_plan.push(row.id, credited_payment(t));
    if row.is_late(t.block_time) {
        plan.findings
            .push(late(obs, t, row, accept_late, idx, total));
    }
    if !covered {
        if !held_late {
            plan.findings.push(held(obs, t, row, &c));
        } else if let Some(short) = short_counting_all(&prior, t, row, tolerance) {
            // Late and short: both problems, each its own finding (and exception).
            plan.findings.push(held(obs, t, row, &short));
        }
        return Credited::Short;
    }
    plan.findings.extend(advanced(obs, t, row, to, idx, how));
    plan.findings.extend(mismatch(obs, t, row, &c, idx));
    Credited::Covered
}

/// The cover of `row` with every payment on chain counted, the late ones too, when even
/// that is short of `amount_due − tolerance`: a late payment that leaves the order short is
/// also underpaid (accepting it late would not pay the order). `None` when covered.
fn short_counting_all(
    prior: &[CreditedPayment],
    t: &ChainTransfer,
    row: &LedgerRow,
    tolerance: super::cover::Tolerance,
) -> Option<super::cover::Cover> {
    let (parts, _) = cover_parts(prior, t, row, true, false);
    let c = cover(row.amount_due, tolerance, &parts).ok()?;
    c.completing.is_none().then_some(c)
}

/// Whether `t` must wait before it credits `row`: the order expires, so the payment is judged
/// by its block's time, and `t` comes without one.
fn waits_for_block_time(row: &LedgerRow, t: &ChainTransfer) -> bool {
    row.expires_at.is_some() && t.block_time.is_none()
}

/// What counts toward the cover of `row` when `t` credits it: every credit (`prior`) but the
/// late ones held for being late, then `t` unless it is held late itself. Beside each part,
/// which credit it is: an index into `prior`, or `None` for `t`.
fn cover_parts(
    prior: &[CreditedPayment],
    t: &ChainTransfer,
    row: &LedgerRow,
    accept_late: bool,
    held_late: bool,
) -> (Vec<Credit>, Vec<Option<usize>>) {
    let mut parts: Vec<Credit> = Vec::new();
    let mut which: Vec<Option<usize>> = Vec::new();
    for (i, p) in prior.iter().enumerate() {
        if counts_toward_cover(p, row, accept_late) {
            parts.push(as_credit(p));
            which.push(Some(i));
        }
    }
    if !held_late {
        parts.push(of_transfer(t));
        which.push(None);
    }
    (parts, which)
}

/// The key a covered order takes: that of the payment which completed the cover (`which`: a
/// credit of `prior`, or `t` itself when `None`), with the order's new `amount_paid`.
fn completing_attach(
    which: Option<usize>,
    prior: &[CreditedPayment],
    t: &ChainTransfer,
    total: U256,
) -> Attach {
    match which.and_then(|k| prior.get(k)) {
        Some(p) => Attach {
            key: p.key.clone(),
            amount: total,
            block: p.block.clone().unwrap_or_default(),
        },
        None => Attach {
            key: t.key.clone(),
            amount: total,
            block: t.block.clone(),
        },
    }
}

/// The payment row crediting `t` to `row` writes: the order's `amount_paid` from
/// `paid_before` to `paid_after`, held when late, and whether the merchant's own code wrote
/// the key (source `merchant`).
fn new_payment(
    t: &ChainTransfer,
    row: &LedgerRow,
    paid_before: Option<U256>,
    paid_after: U256,
    held_late: bool,
    merchant: bool,
) -> NewPayment {
    NewPayment {
        key: t.key.clone(),
        amount: t.amount,
        block: t.block.clone(),
        state: t.state,
        paid_before,
        paid_after,
        amount_due: row.amount_due,
        block_time: t.block_time,
        held_late,
        merchant,
    }
}

/// `t` as a payment this plan has credited: on chain, in its block.
fn credited_payment(t: &ChainTransfer) -> CreditedPayment {
    CreditedPayment {
        key: t.key.clone(),
        amount: t.amount,
        state: t.state,
        block: Some(t.block.clone()),
        block_time: t.block_time,
        gone: false,
    }
}

/// Plans `row`'s move to `to` (with the key it takes and the payment row it writes, if any)
/// and returns the step's index, which its findings name.
fn push_transition(
    plan: &mut Plan,
    row: &LedgerRow,
    to: State,
    attach: Option<Attach>,
    credit: Option<NewPayment>,
) -> usize {
    plan.transitions.push(PlannedTransition {
        order_id: row.id,
        order_ref: row.order_ref.clone(),
        from: row.state,
        to,
        attach,
        credit,
    });
    plan.transitions.len() - 1
}

/// A transfer read on chain as a part of the cover.
fn of_transfer(t: &ChainTransfer) -> Credit {
    Credit {
        amount: t.amount,
        state: t.state,
        block: t.block.number,
        index: t.key.log_index,
    }
}

/// Whether a credited payment counts toward its order's cover: on chain (not flagged gone),
/// and not held for being late (unless `late_payments = "accept"`).
pub(super) fn counts_toward_cover(c: &CreditedPayment, row: &LedgerRow, accept_late: bool) -> bool {
    !c.gone && (accept_late || !row.is_late(c.block_time))
}

/// The sum of the payments on chain (a gone one counts toward nothing), `extra` included;
/// `None` when it overflows U256.
pub(super) fn paid_on_chain(credits: &[CreditedPayment], extra: U256) -> Option<U256> {
    credits
        .iter()
        .filter(|p| !p.gone)
        .try_fold(extra, |acc, p| acc.checked_add(p.amount))
}

/// A credited payment as a part of the cover (block 0 when it has none).
pub(super) fn as_credit(p: &CreditedPayment) -> Credit {
    Credit {
        amount: p.amount,
        state: p.state,
        block: p.block.as_ref().map_or(0, |b| b.number),
        index: p.key.log_index,
    }
}
