//! The diff: what the chain and the providers observed, against what the ledger holds,
//! gives a plan of forward transitions, findings and resend requests. No IO.

use std::collections::{HashMap, HashSet};

use super::by_ref::{by_ref_candidate, plan_attach_by_ref};
use super::credit::{
    held_again, moved_held, plan_covered, plan_credit, plan_keyed_credit, Credited, InPlan,
};
use super::findings::{finding, infer_failed, planned, push_failed};
use super::model::{GapKind, PaymentKey, State, U256};
use super::plan::{
    Action, ChainTransfer, ChainVerdict, Finding, LedgerRow, LedgerView, Observation, Outcome,
    Plan, PlannedTransition, Refusal,
};
use super::reorg::{held_rows, moved_holder, moved_row_detail};

/// Decides, for a batch of observations, which forward transitions to apply, which gaps to
/// report and which resends to request. The same payment is never credited to two orders;
/// an order takes payments until they cover it (docs/configuration.md, "Amounts"), then no more
/// in this plan.
pub fn reconcile(observations: &[Observation], ledger: &LedgerView) -> Plan {
    let mut plan = Plan::default();
    let mut taken = Taken::default();

    for obs in observations {
        if obs.failed {
            let f = failed_finding(obs, ledger);
            push_failed(
                &mut plan,
                f,
                obs.notification_id.as_deref(),
                obs.record_time,
            );
        }
        let transfer = match &obs.verdict {
            ChainVerdict::Transfer(t) => t,
            other => {
                plan_non_transfer(&mut plan, obs, other, ledger, &mut taken.reorged);
                continue;
            }
        };
        if !taken.seen.insert(transfer.key.clone()) {
            continue;
        }
        let planned = plan.transitions.len();
        plan_transfer(&mut plan, obs, transfer, ledger, &mut taken);
        if obs.infer_failed && !obs.failed {
            infer_failed(&mut plan, planned, obs);
        }
    }
    // A failed notification's finding names the order once the payment is matched.
    fill_failed_order_refs(&mut plan);
    drop_held_of_covered(&mut plan);
    plan
}

/// What a plan has taken so far: orders claimed, payments credited, keys seen, rows reorged.
#[derive(Default)]
struct Taken {
    claimed: HashSet<i64>,
    in_plan: InPlan,
    seen: HashSet<PaymentKey>,
    reorged: HashSet<i64>,
}

/// The `failed_notification` finding of an observation the provider reports as undelivered.
fn failed_finding(obs: &Observation, ledger: &LedgerView) -> Finding {
    let (log_index, observed_state) = match &obs.verdict {
        ChainVerdict::Transfer(t) => (Some(t.key.log_index), Some(t.state)),
        _ => (None, None),
    };
    Finding {
        provider: obs.provider.clone(),
        kind: GapKind::FailedNotification,
        chain: obs.chain.clone(),
        tx_hash: Some(obs.tx_hash.to_string()),
        log_index,
        order_ref: keyed_row(&obs.verdict, ledger).map(|r| r.order_ref.clone()),
        local_state: keyed_row(&obs.verdict, ledger).map(|r| r.state),
        observed_state,
        outcome: Outcome::Nothing,
        detail: format!(
            "provider reports notification {} as undelivered",
            obs.notification_id.as_deref().unwrap_or("?")
        ),
        amount: None,
        asset: match &obs.verdict {
            ChainVerdict::Transfer(t) => Some(t.asset.clone()),
            _ => None,
        },
    }
}

/// Flags a transaction with no transfer: `reorged` for rows holding it, else `unknown_payment`.
fn plan_non_transfer(
    plan: &mut Plan,
    obs: &Observation,
    other: &ChainVerdict,
    ledger: &LedgerView,
    reorged_rows: &mut HashSet<i64>,
) {
    // A transaction the chain lost (or that now reverts) whose payment the ledger
    // holds is a reorg of a held payment, not a stray one: flag, never move.
    let held = held_rows(obs, ledger);
    if held.is_empty() || matches!(other, ChainVerdict::NoTransfer(_)) {
        plan.findings
            .push(unknown(obs, None, verdict_detail(other)));
    } else {
        for row in held.into_iter().filter(|r| reorged_rows.insert(r.id)) {
            plan.findings.push(reorged(obs, row, verdict_detail(other)));
        }
    }
}

/// Routes a payment: its keyed order, else the named one, its pre-reorg row, or a waiting order.
fn plan_transfer(
    plan: &mut Plan,
    obs: &Observation,
    transfer: &ChainTransfer,
    ledger: &LedgerView,
    taken: &mut Taken,
) {
    if let Some(row) = ledger.by_key.get(&transfer.key) {
        plan_keyed(
            plan,
            obs,
            transfer,
            row,
            ledger,
            &mut taken.claimed,
            &taken.in_plan,
        );
    } else if let Some(row) = by_ref_candidate(obs, transfer, ledger, &taken.claimed) {
        if plan_attach_by_ref(plan, obs, transfer, row, ledger, &mut taken.in_plan)
            == Credited::Covered
        {
            taken.claimed.insert(row.id);
        }
    } else if let Some(row) = moved_holder(obs, transfer, ledger) {
        // The ledger holds this payment at its pre-reorg position: never attach it to
        // another order. The chain sweep re-keys the row.
        if taken.reorged.insert(row.id) && taken.claimed.insert(row.id) {
            let mut f = finding(obs, transfer, row, GapKind::Reorged);
            f.log_index = row.key.as_ref().map(|k| k.log_index);
            f.detail = format!("{}; {SWEEP_REKEYS}", moved_row_detail(row, transfer));
            plan.findings.push(f);
        }
    } else {
        plan_unkeyed(
            plan,
            obs,
            transfer,
            ledger,
            &mut taken.claimed,
            &mut taken.in_plan,
        );
    }
}

/// A part seen (or credited) before the payment that completed its order in the same plan
/// is not held: the order's `missing` finding tells what happened.
fn drop_held_of_covered(plan: &mut Plan) {
    let covered: HashSet<&str> = plan
        .transitions
        .iter()
        .filter(|t| t.attach.is_some())
        .map(|t| t.order_ref.as_str())
        .collect();
    if covered.is_empty() {
        return;
    }
    let covered: HashSet<String> = covered.into_iter().map(str::to_string).collect();
    plan.findings.retain(|f| {
        f.kind != GapKind::AmountMismatch
            || f.outcome != Outcome::Decided(Action::Held)
            || !f.order_ref.as_ref().is_some_and(|r| covered.contains(r))
    });
}

fn keyed_row<'a>(v: &ChainVerdict, ledger: &'a LedgerView) -> Option<&'a LedgerRow> {
    match v {
        ChainVerdict::Transfer(t) => ledger.by_key.get(&t.key),
        _ => None,
    }
}

/// What a provider-path `reorged` finding of a re-included payment says about the fix.
const SWEEP_REKEYS: &str = "the chain sweep moves the ledger row to the new position";

fn reorged(obs: &Observation, row: &LedgerRow, why: String) -> Finding {
    Finding {
        provider: obs.provider.clone(),
        kind: GapKind::Reorged,
        chain: obs.chain.clone(),
        tx_hash: Some(obs.tx_hash.to_string()),
        log_index: row.key.as_ref().map(|k| k.log_index),
        order_ref: Some(row.order_ref.clone()),
        local_state: Some(row.state),
        observed_state: None,
        outcome: Outcome::Nothing,
        detail: format!("the ledger holds this payment, but {why}"),
        amount: None,
        asset: Some(row.asset.clone()),
    }
}

fn verdict_detail(v: &ChainVerdict) -> String {
    match v {
        ChainVerdict::Reverted => "the transaction reverted on chain (receipt status 0)".into(),
        ChainVerdict::NotFound => "the chain has no receipt for this transaction".into(),
        ChainVerdict::NoTransfer(why) => why.clone(),
        ChainVerdict::Transfer(_) => String::new(),
    }
}

fn unknown(obs: &Observation, t: Option<&ChainTransfer>, detail: String) -> Finding {
    Finding {
        provider: obs.provider.clone(),
        kind: GapKind::UnknownPayment,
        chain: obs.chain.clone(),
        tx_hash: Some(obs.tx_hash.to_string()),
        log_index: t.map(|t| t.key.log_index),
        order_ref: None,
        local_state: None,
        observed_state: t.map(|t| t.state),
        outcome: Outcome::Nothing,
        detail,
        amount: t.map(|t| t.amount),
        asset: t.map(|t| t.asset.clone()),
    }
}

fn plan_keyed(
    plan: &mut Plan,
    obs: &Observation,
    t: &ChainTransfer,
    row: &LedgerRow,
    ledger: &LedgerView,
    claimed: &mut HashSet<i64>,
    in_plan: &InPlan,
) {
    if row.key.as_ref() != Some(&t.key) {
        // One of the order's credited payments, not the one its key names: the order
        // follows the cover, and while it is short the payment stays held. (Not a claim:
        // a top-up in this plan may still complete the order.)
        if row.state == State::Unpaid && !claimed.contains(&row.id) {
            let credits = in_plan.credits(row);
            // Its payments cover it now (one came back on chain, or the rules changed).
            if plan_covered(plan, obs, t, row, &credits, ledger) {
                claimed.insert(row.id);
                return;
            }
            plan.findings
                .extend(held_again(obs, t, row, &credits, ledger));
        }
        return;
    }
    if !claimed.insert(row.id) {
        return;
    }
    // The ledger recorded this payment in another block: a reorg re-included it. Flag it and
    // leave the row alone here; the chain sweep re-keys it (guarded by the old values).
    if row
        .block
        .as_ref()
        .is_some_and(|b| !b.hash.is_empty() && b.hash != t.block.hash)
    {
        let mut f = finding(obs, t, row, GapKind::Reorged);
        f.detail = format!("{}; {SWEEP_REKEYS}", moved_row_detail(row, t));
        plan.findings.push(f);
        return;
    }
    // A key payrecon never credited (the merchant's own code wrote it), or an order still
    // unpaid: the payment is judged by the cover rule (and given its payment row).
    if row.merchant_key || row.state == State::Unpaid {
        plan_keyed_credit(plan, obs, t, row, ledger);
        return;
    }
    if t.state < row.state {
        plan.refused_backwards.push(Refusal {
            order_ref: row.order_ref.clone(),
            local: row.state,
            observed: t.state,
        });
        return;
    }
    if t.state == row.state {
        return;
    }
    plan.transitions.push(PlannedTransition {
        order_id: row.id,
        order_ref: row.order_ref.clone(),
        from: row.state,
        to: t.state,
        attach: None,
        credit: None,
    });
    let idx = plan.transitions.len() - 1;
    plan.findings.push(planned(
        obs,
        t,
        row,
        GapKind::Lagging,
        idx,
        format!("ledger has {}, chain shows {}", row.state, t.state),
    ));
}

fn plan_unkeyed(
    plan: &mut Plan,
    obs: &Observation,
    t: &ChainTransfer,
    ledger: &LedgerView,
    claimed: &mut HashSet<i64>,
    in_plan: &mut InPlan,
) {
    let slot = (t.key.chain.clone(), t.to.to_string(), t.asset.to_string());
    let candidates = ledger.unpaid.get(&slot).map(Vec::as_slice).unwrap_or(&[]);
    // A held payment whose transaction a reorg re-included elsewhere: the same payment, not
    // a second one. The chain sweep moves its row; it is never credited twice.
    if let Some(f) = candidates.iter().find_map(|r| moved_held(obs, t, r)) {
        plan.findings.push(f);
        return;
    }
    let free = || candidates.iter().filter(|r| !claimed.contains(&r.id));
    // The preferences of docs/configuration.md, "Amounts": the order whose remaining amount the
    // payment is, else one already partly paid (a top-up), else the oldest.
    let paid = |r: &LedgerRow| in_plan.paid(r).unwrap_or(U256::ZERO);
    // Among orders the payment completes, one already partly paid first.
    let completes = |r: &&LedgerRow| r.amount_due.checked_sub(paid(r)) == Some(t.amount);
    let started = |r: &&LedgerRow| paid(r) > U256::ZERO;
    let chosen = free()
        .find(|r| completes(r) && started(r))
        .or_else(|| free().find(completes))
        .or_else(|| free().find(started))
        .or_else(|| free().next());
    let Some(row) = chosen else {
        let detail = format!(
            "no order is waiting for a payment to {} in {} on {}",
            t.to, t.asset, t.key.chain
        );
        plan.findings.push(unknown(obs, Some(t), detail));
        return;
    };
    let how = if paid(row) > U256::ZERO {
        "an order already partly paid (a top-up)"
    } else {
        "an unpaid order"
    };
    if plan_credit(plan, obs, t, row, ledger, in_plan, how) == Credited::Covered {
        claimed.insert(row.id);
    }
}

fn fill_failed_order_refs(plan: &mut Plan) {
    let refs: HashMap<(String, i64), String> = plan
        .findings
        .iter()
        .filter_map(|f| {
            let r = f.order_ref.clone()?;
            Some(((f.tx_hash.clone()?, f.log_index?), r))
        })
        .collect();
    let failed = plan
        .findings
        .iter_mut()
        .filter(|f| f.kind == GapKind::FailedNotification);
    for f in failed.filter(|f| f.order_ref.is_none()) {
        if let (Some(h), Some(li)) = (f.tx_hash.clone(), f.log_index) {
            f.order_ref = refs.get(&(h, li)).cloned();
        }
    }
}

/// Chooses which transfer of a receipt a provider record means: the one whose amount
/// matches the provider's amount, else the lowest log index not already attached to an order.
pub fn pick_transfer<'a>(
    candidates: &'a [ChainTransfer],
    amount_hint: Option<U256>,
    attached: &HashSet<PaymentKey>,
) -> Option<&'a ChainTransfer> {
    if candidates.len() == 1 {
        return candidates.first();
    }
    if let Some(hit) = amount_hint.and_then(|a| candidates.iter().find(|t| t.amount == a)) {
        return Some(hit);
    }
    candidates
        .iter()
        .filter(|t| !attached.contains(&t.key))
        .min_by_key(|t| t.key.log_index)
        .or_else(|| candidates.iter().min_by_key(|t| t.key.log_index))
}
