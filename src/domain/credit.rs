//! Crediting a payment to an order (docs/configuration.md, "Amounts"): the cover rule decides
//! whether the order moves, which payment its key names, and what the findings say (held short,
//! overpaid, short within tolerance). Shared by the planners that give an order a payment: by
//! deposit address and by the provider's `order_ref`. No IO.

use std::collections::HashMap;

use super::cover::{cover, Cover, Credit};
use super::findings::{finding, planned};
use super::model::{GapKind, State, U256};
use super::plan::{
    Action, Attach, ChainTransfer, CreditedPayment, Finding, LedgerRow, LedgerView, NewPayment,
    Observation, Outcome, Plan, PlannedTransition, Refusal,
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
    // An order that expires is judged by the payment's block time; without one the payment
    // waits (the engine reads block times for such orders, so this is a block it could not).
    if row.expires_at.is_some() && t.block_time.is_none() {
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
    // What counts toward the cover: every credit but the late ones held for being late.
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
    let tolerance = ledger.policy.tolerance(&row.chain, &row.asset);
    // `amount_paid` after it: the payments on chain (a gone one counts toward nothing).
    let total = paid_on_chain(&prior, t.amount);
    let (Ok(c), Some(total)) = (cover(row.amount_due, tolerance, &parts), total) else {
        let mut f = finding(obs, t, row, GapKind::AmountMismatch);
        f.detail = format!("{}; nothing credited", super::cover::SumOverflow);
        plan.findings.push(f);
        return Credited::Short;
    };
    let credit = NewPayment {
        key: t.key.clone(),
        amount: t.amount,
        block: t.block.clone(),
        state: t.state,
        paid_before,
        paid_after: total,
        amount_due: row.amount_due,
        block_time: t.block_time,
        held_late,
        merchant: false,
    };
    let attach = c
        .completing
        .map(|i| match which[i].and_then(|k| prior.get(k)) {
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
            block_time: t.block_time,
            gone: false,
        },
    );
    if row.is_late(t.block_time) {
        plan.findings.push(late(obs, t, row, accept_late, idx));
    }
    if !covered {
        if !held_late {
            plan.findings.push(held(obs, t, row, &c));
        }
        return Credited::Short;
    }
    if row.state == State::Unpaid {
        plan.findings.push(planned(
            obs,
            t,
            row,
            GapKind::Missing,
            idx,
            format!("payment of {} found on chain for {how}", t.amount),
        ));
    } else if to > row.state {
        plan.findings.push(planned(
            obs,
            t,
            row,
            GapKind::Lagging,
            idx,
            format!(
                "ledger has {} from the provider's status without a payment key, chain shows {}",
                row.state, t.state
            ),
        ));
    }
    if c.paid != row.amount_due {
        plan.findings.push(planned(
            obs,
            t,
            row,
            GapKind::AmountMismatch,
            idx,
            amounts_detail(&c, row.amount_due),
        ));
    }
    Credited::Covered
}

/// A keyed row read on chain at its own key, when the key has no payment row (the merchant's
/// own code wrote it: the payment gets its row, source `merchant`, with the chain's amount,
/// state and block) or the order is still unpaid (the payment must cover it, and a late one
/// is held). The order moves as the chain says, an unpaid one only when covered.
pub(super) fn plan_keyed_credit(
    plan: &mut Plan,
    obs: &Observation,
    t: &ChainTransfer,
    row: &LedgerRow,
    ledger: &LedgerView,
) {
    let unpaid = row.state == State::Unpaid;
    if unpaid && row.expires_at.is_some() && t.block_time.is_none() {
        return; // judged by its block time, which the engine could not read: it waits
    }
    let accept_late = ledger.policy.accept_late;
    let held_late = unpaid && row.is_late(t.block_time) && !accept_late;
    let mut to = row.state.max(t.state);
    let mut amounts = None;
    if unpaid {
        let mut parts = Vec::new();
        if !held_late {
            parts.push(of_transfer(t));
        }
        let tolerance = ledger.policy.tolerance(&row.chain, &row.asset);
        let Ok(c) = cover(row.amount_due, tolerance, &parts) else {
            return;
        };
        if c.completing.is_none() {
            to = State::Unpaid;
        }
        amounts = Some(c);
    }
    if t.state < row.state {
        plan.refused_backwards.push(Refusal {
            order_ref: row.order_ref.clone(),
            local: row.state,
            observed: t.state,
        });
    }
    let held_short = |c: &Option<Cover>| c.as_ref().map(|c| held(obs, t, row, c));
    if to == row.state && !row.merchant_key {
        // Nothing to write: a keyed order held short, or late, seen again.
        plan.findings.extend(match held_late {
            true => Some(late(obs, t, row, false, 0)),
            false => held_short(&amounts),
        });
        return;
    }
    let credit = row.merchant_key.then(|| NewPayment {
        key: t.key.clone(),
        amount: t.amount,
        block: t.block.clone(),
        state: t.state,
        paid_before: row.amount_paid,
        paid_after: t.amount,
        amount_due: row.amount_due,
        block_time: t.block_time,
        held_late,
        merchant: true,
    });
    // The order keeps its key and takes the chain's amount and block with it.
    let attach = (to > State::Unpaid).then(|| Attach {
        key: t.key.clone(),
        amount: t.amount,
        block: t.block.clone(),
    });
    plan.transitions.push(PlannedTransition {
        order_id: row.id,
        order_ref: row.order_ref.clone(),
        from: row.state,
        to,
        attach,
        credit,
    });
    let idx = plan.transitions.len() - 1;
    if unpaid && row.is_late(t.block_time) {
        plan.findings.push(late(obs, t, row, accept_late, idx));
    }
    if to == row.state {
        if unpaid && !held_late {
            plan.findings.extend(held_short(&amounts));
        }
        return;
    }
    plan.findings.push(planned(
        obs,
        t,
        row,
        GapKind::Lagging,
        idx,
        format!("ledger has {}, chain shows {}", row.state, t.state),
    ));
    if let Some(c) = amounts.filter(|c| c.paid != row.amount_due) {
        plan.findings.push(planned(
            obs,
            t,
            row,
            GapKind::AmountMismatch,
            idx,
            amounts_detail(&c, row.amount_due),
        ));
    }
}

/// A `reorged` finding when `row` holds `t`'s transaction, credited in another block: the
/// same payment re-included elsewhere by a reorg, which the chain sweep re-keys.
pub(super) fn moved_held(obs: &Observation, t: &ChainTransfer, row: &LedgerRow) -> Option<Finding> {
    let c = row.credits.iter().find(|c| {
        c.key.tx_hash == t.key.tx_hash
            && c.block
                .as_ref()
                .is_some_and(|b| !b.hash.is_empty() && b.hash != t.block.hash)
    })?;
    let mut f = finding(obs, t, row, GapKind::Reorged);
    f.detail = format!(
        "a payment held short, recorded at log index {} of block {}, is now at log index {} \
         of block {}; the chain sweep moves its row",
        c.key.log_index,
        c.block.as_ref().map_or(0, |b| b.number),
        t.key.log_index,
        t.block.number
    );
    Some(f)
}

/// The `late_payment` finding of a payment in a block after its order expired: held, or
/// (with `late_payments = "accept"`) what its step `idx` did.
pub(super) fn late(
    obs: &Observation,
    t: &ChainTransfer,
    row: &LedgerRow,
    accepted: bool,
    idx: usize,
) -> Finding {
    let mut f = finding(obs, t, row, GapKind::LatePayment);
    let (when, expired) = (
        t.block_time.map(|b| b.to_string()).unwrap_or_default(),
        row.expires_at.map(|e| e.to_string()).unwrap_or_default(),
    );
    if accepted {
        f.outcome = Outcome::Transition(idx);
        f.detail = format!(
            "late: paid {} in a block of {when}, after the order expired at {expired}; \
             counted (late_payments = \"accept\")",
            t.amount
        );
    } else {
        f.outcome = Outcome::Decided(Action::Held);
        f.detail = format!(
            "late: paid {} in a block of {when}, after the order expired at {expired}; \
             credited and held until an operator decides",
            t.amount
        );
    }
    f
}

/// A payment already credited to a held order, seen again: held for being late, or short.
pub(super) fn held_again(
    obs: &Observation,
    t: &ChainTransfer,
    row: &LedgerRow,
    credits: &[CreditedPayment],
    ledger: &LedgerView,
) -> Option<Finding> {
    let accept_late = ledger.policy.accept_late;
    let seen = credits.iter().find(|c| c.key == t.key);
    if !accept_late && seen.is_some_and(|c| row.is_late(c.block_time)) {
        let mut seen_t = t.clone();
        seen_t.block_time = seen.and_then(|c| c.block_time);
        return Some(late(obs, &seen_t, row, false, 0));
    }
    let parts: Vec<Credit> = credits
        .iter()
        .filter(|c| counts_toward_cover(c, row, accept_late))
        .map(as_credit)
        .collect();
    let tolerance = ledger.policy.tolerance(&row.chain, &row.asset);
    let c = cover(row.amount_due, tolerance, &parts).ok()?;
    let mut c = c;
    // The detail names what was paid, the held late payments included.
    c.paid = credits
        .iter()
        .filter(|p| !p.gone)
        .fold(U256::ZERO, |a, p| a.saturating_add(p.amount));
    c.completing.is_none().then(|| held(obs, t, row, &c))
}

/// An unpaid order without a key whose credited payments (on chain, and not held late) cover
/// it, seen through one of them (`t`): it moves to the state they reached, keyed by the one
/// that completed the cover. This happens when a payment that had left the chain is back, or
/// when the tolerance or `late_payments` changed. False (nothing planned) otherwise.
pub(super) fn plan_covered(
    plan: &mut Plan,
    obs: &Observation,
    t: &ChainTransfer,
    row: &LedgerRow,
    credits: &[CreditedPayment],
    ledger: &LedgerView,
) -> bool {
    let accept_late = ledger.policy.accept_late;
    let counted: Vec<&CreditedPayment> = credits
        .iter()
        .filter(|c| counts_toward_cover(c, row, accept_late))
        .collect();
    let parts: Vec<Credit> = counted.iter().map(|c| as_credit(c)).collect();
    let tolerance = ledger.policy.tolerance(&row.chain, &row.asset);
    let Ok(c) = cover(row.amount_due, tolerance, &parts) else {
        return false;
    };
    let Some(p) = c.completing.and_then(|i| counted.get(i)) else {
        return false;
    };
    let Some(block) = p.block.clone() else {
        return false;
    };
    let Some(paid) = paid_on_chain(credits, U256::ZERO) else {
        return false;
    };
    plan.transitions.push(PlannedTransition {
        order_id: row.id,
        order_ref: row.order_ref.clone(),
        from: row.state,
        to: c.state,
        attach: Some(Attach {
            key: p.key.clone(),
            amount: paid,
            block,
        }),
        credit: None,
    });
    let idx = plan.transitions.len() - 1;
    plan.findings.push(planned(
        obs,
        t,
        row,
        GapKind::Lagging,
        idx,
        format!(
            "ledger has {} with payments that cover it (paid {paid} of {}), chain shows {}",
            row.state, row.amount_due, c.state
        ),
    ));
    true
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

pub(super) fn as_credit(p: &CreditedPayment) -> Credit {
    Credit {
        amount: p.amount,
        state: p.state,
        block: p.block.as_ref().map_or(0, |b| b.number),
        index: p.key.log_index,
    }
}
