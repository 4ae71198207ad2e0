//! Crediting a payment to an order (SPEC §14): the cover rule decides whether the order moves,
//! which payment its key names, and what the findings say (held short, overpaid, short
//! within tolerance). Shared by the planners that give an order a payment: by deposit
//! address and by the provider's `order_ref`. No IO.

use std::collections::HashMap;

use super::cover::{cover, Cover, Credit};
use super::findings::finding;
use super::model::{GapKind, State, U256};
use super::plan::{
    Action, Attach, ChainTransfer, CreditedPayment, Finding, LedgerRow, LedgerView, NewPayment,
    Observation, Outcome, Plan, PlannedTransition,
};

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
    let prior = in_plan.credits(row);
    let paid_before = in_plan.paid(row);
    let mut parts: Vec<Credit> = prior.iter().map(as_credit).collect();
    parts.push(Credit {
        amount: t.amount,
        state: t.state,
        block: t.block.number,
        index: t.key.log_index,
    });
    let tolerance = ledger.policy.tolerance(&row.chain, &row.asset);
    let c = match cover(row.amount_due, tolerance, &parts) {
        Ok(c) => c,
        Err(overflow) => {
            let mut f = finding(obs, t, row, GapKind::AmountMismatch);
            f.detail = format!("{overflow}; nothing credited");
            plan.findings.push(f);
            return Credited::Short;
        }
    };
    let credit = NewPayment {
        key: t.key.clone(),
        amount: t.amount,
        block: t.block.clone(),
        state: t.state,
        paid_before,
        paid_after: c.paid,
        amount_due: row.amount_due,
    };
    let attach = c.completing.map(|i| match prior.get(i) {
        Some(p) => Attach {
            key: p.key.clone(),
            amount: c.paid,
            block: p.block.clone().unwrap_or_default(),
        },
        None => Attach {
            key: t.key.clone(),
            amount: c.paid,
            block: t.block.clone(),
        },
    });
    let covered = attach.is_some();
    let to = row.state.max(c.state);
    plan.transitions.push(PlannedTransition {
        order_id: row.id,
        order_ref: row.order_ref.clone(),
        from: row.state,
        to,
        attach,
        credit: Some(credit),
    });
    let idx = plan.transitions.len() - 1;
    in_plan.push(
        row.id,
        CreditedPayment {
            key: t.key.clone(),
            amount: t.amount,
            state: t.state,
            block: Some(t.block.clone()),
        },
    );
    if !covered {
        plan.findings.push(held(obs, t, row, &c));
        return Credited::Short;
    }
    if row.state == State::Unpaid {
        let mut f = finding(obs, t, row, GapKind::Missing);
        f.outcome = Outcome::Transition(idx);
        f.detail = format!("payment of {} found on chain for {how}", t.amount);
        plan.findings.push(f);
    } else if to > row.state {
        let mut f = finding(obs, t, row, GapKind::Lagging);
        f.outcome = Outcome::Transition(idx);
        f.detail = format!(
            "ledger has {} from the provider's status without a payment key, chain shows {}",
            row.state, t.state
        );
        plan.findings.push(f);
    }
    if c.paid != row.amount_due {
        let mut f = finding(obs, t, row, GapKind::AmountMismatch);
        f.outcome = Outcome::Transition(idx);
        f.detail = amounts_detail(&c, row.amount_due);
        plan.findings.push(f);
    }
    Credited::Covered
}

/// The finding of a payment credited to an order that is still short: `held`.
pub(super) fn held(obs: &Observation, t: &ChainTransfer, row: &LedgerRow, c: &Cover) -> Finding {
    let mut f = finding(obs, t, row, GapKind::AmountMismatch);
    f.outcome = Outcome::Decided(Action::Held);
    f.detail = amounts_detail(c, row.amount_due);
    f
}

/// `underpaid: paid 20000000 of 25000000, short 5000000` (held, or `within tolerance`
/// once covered), or `overpaid: paid … of …, excess …`.
pub(super) fn amounts_detail(c: &Cover, due: U256) -> String {
    let (paid, short, excess) = (c.paid, c.shortfall(due), c.excess(due));
    if excess > U256::ZERO {
        format!("overpaid: paid {paid} of {due}, excess {excess}")
    } else if c.completing.is_some() {
        format!("underpaid within tolerance: paid {paid} of {due}, short {short}")
    } else {
        format!("underpaid: paid {paid} of {due}, short {short}; held until covered")
    }
}

pub(super) fn as_credit(p: &CreditedPayment) -> Credit {
    Credit {
        amount: p.amount,
        state: p.state,
        block: p.block.as_ref().map_or(0, |b| b.number),
        index: p.key.log_index,
    }
}
