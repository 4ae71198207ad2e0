//! Crediting an order that already names its payment, or holds payments short: a keyed row read
//! on chain at its own key, an unpaid order whose credited payments now cover it, and a held
//! payment seen again. No IO.

use super::report::{held, keyed_lagging, late, mismatch};
use super::{
    as_credit, counts_toward_cover, new_payment, of_transfer, paid_on_chain, push_transition,
    waits_for_block_time,
};
use crate::domain::cover::{cover, Cover, Credit};
use crate::domain::findings::planned;
use crate::domain::model::{GapKind, State, U256};
use crate::domain::plan::{
    Attach, ChainTransfer, CreditedPayment, Finding, LedgerRow, LedgerView, Observation, Plan,
    Refusal,
};

/// A keyed row read on chain at its own key, when the key has no payment row (the merchant's
/// own code wrote it: the payment gets its row, source `merchant`, with the chain's amount,
/// state and block) or the order is still unpaid (the payment must cover it, and a late one
/// is held). The order moves as the chain says, an unpaid one only when covered.
pub(in crate::domain) fn plan_keyed_credit(
    plan: &mut Plan,
    obs: &Observation,
    t: &ChainTransfer,
    row: &LedgerRow,
    ledger: &LedgerView,
) {
    let unpaid = row.state == State::Unpaid;
    if unpaid && waits_for_block_time(row, t) {
        return; // judged by its block time, which the engine could not read: it waits
    }
    let accept_late = ledger.policy.accept_late;
    let held_late = unpaid && row.is_late(t.block_time) && !accept_late;
    let Some((to, amounts)) = keyed_target(t, row, ledger, held_late) else {
        return;
    };
    plan.refused_backwards.extend(backwards(t, row));
    let held_short = |c: &Option<Cover>| c.as_ref().map(|c| held(obs, t, row, c));
    // A late payment that would leave the order short even if it counted is underpaid too.
    let late_and_short = || {
        let tolerance = ledger.policy.tolerance(&row.chain, &row.asset);
        let c = cover(row.amount_due, tolerance, &[of_transfer(t)]).ok()?;
        c.completing.is_none().then(|| held(obs, t, row, &c))
    };
    if to == row.state && !row.merchant_key {
        // Nothing to write: a keyed order held short, or late, seen again.
        if held_late {
            plan.findings.push(late(obs, t, row, false, 0, t.amount));
            plan.findings.extend(late_and_short());
        } else {
            plan.findings.extend(held_short(&amounts));
        }
        return;
    }
    let credit = row
        .merchant_key
        .then(|| new_payment(t, row, row.amount_paid, t.amount, held_late, true));
    let idx = push_transition(plan, row, to, keyed_attach(t, to), credit);
    if unpaid && row.is_late(t.block_time) {
        plan.findings
            .push(late(obs, t, row, accept_late, idx, t.amount));
    }
    if to == row.state {
        if unpaid && !held_late {
            plan.findings.extend(held_short(&amounts));
        } else if held_late {
            plan.findings.extend(late_and_short());
        }
        return;
    }
    plan.findings.push(keyed_lagging(obs, t, row, idx));
    if let Some(c) = &amounts {
        plan.findings.extend(mismatch(obs, t, row, c, idx));
    }
}

/// Where a keyed row moves, and for an unpaid one the cover its payment makes: as the chain
/// says, but an unpaid order only once covered (a payment held late counts toward nothing).
/// `None` when the cover's sum overflows: nothing is planned.
fn keyed_target(
    t: &ChainTransfer,
    row: &LedgerRow,
    ledger: &LedgerView,
    held_late: bool,
) -> Option<(State, Option<Cover>)> {
    let mut to = row.state.max(t.state);
    if row.state != State::Unpaid {
        return Some((to, None));
    }
    let mut parts = Vec::new();
    if !held_late {
        parts.push(of_transfer(t));
    }
    let tolerance = ledger.policy.tolerance(&row.chain, &row.asset);
    let c = cover(row.amount_due, tolerance, &parts).ok()?;
    if c.completing.is_none() {
        to = State::Unpaid;
    }
    Some((to, Some(c)))
}

/// The refusal of a chain state behind the ledger's (an order never moves back), if it is.
fn backwards(t: &ChainTransfer, row: &LedgerRow) -> Option<Refusal> {
    (t.state < row.state).then(|| Refusal {
        order_ref: row.order_ref.clone(),
        local: row.state,
        observed: t.state,
    })
}

/// The key a keyed order moving to `to` keeps, with the chain's amount and block; none while
/// it stays unpaid.
fn keyed_attach(t: &ChainTransfer, to: State) -> Option<Attach> {
    (to > State::Unpaid).then(|| Attach {
        key: t.key.clone(),
        amount: t.amount,
        block: t.block.clone(),
    })
}

/// A payment already credited to a held order, seen again: held for being late, short, or
/// both (a late payment that leaves the order short even when it counts).
pub(in crate::domain) fn held_again(
    obs: &Observation,
    t: &ChainTransfer,
    row: &LedgerRow,
    credits: &[CreditedPayment],
    ledger: &LedgerView,
) -> Vec<Finding> {
    let accept_late = ledger.policy.accept_late;
    let seen = credits.iter().find(|c| c.key == t.key);
    // What was paid, the held late payments included: the details name it.
    let paid = credits
        .iter()
        .filter(|p| !p.gone)
        .fold(U256::ZERO, |a, p| a.saturating_add(p.amount));
    let tolerance = ledger.policy.tolerance(&row.chain, &row.asset);
    let mut out = Vec::new();
    let late_seen = !accept_late && seen.is_some_and(|c| row.is_late(c.block_time));
    if late_seen {
        let mut seen_t = t.clone();
        seen_t.block_time = seen.and_then(|c| c.block_time);
        out.push(late(obs, &seen_t, row, false, 0, paid));
    }
    // Short: by the payments that count, or (for a late one) by every payment on chain.
    let parts: Vec<Credit> = credits
        .iter()
        .filter(|c| late_seen && !c.gone || counts_toward_cover(c, row, accept_late))
        .map(as_credit)
        .collect();
    let Ok(mut c) = cover(row.amount_due, tolerance, &parts) else {
        return out;
    };
    c.paid = paid;
    if c.completing.is_none() {
        out.push(held(obs, t, row, &c));
    }
    out
}

/// An unpaid order without a key whose credited payments (on chain, and not held late) cover
/// it, seen through one of them (`t`): it moves to the state they reached, keyed by the one
/// that completed the cover. This happens when a payment that had left the chain is back, or
/// when the tolerance or `late_payments` changed. False (nothing planned) otherwise.
pub(in crate::domain) fn plan_covered(
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
    let attach = Attach {
        key: p.key.clone(),
        amount: paid,
        block,
    };
    let idx = push_transition(plan, row, c.state, Some(attach), None);
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
