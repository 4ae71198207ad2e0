//! Records matched by the merchant's `order_ref`: payments a provider attributes to an order
//! (attached to that order when they go to its address and asset), and status-only records
//! that name no transaction (the provider's status applied; docs/configuration.md,
//! "The generic provider").

use std::collections::HashSet;

use super::credit::{plan_credit, Credited, InPlan};
use super::findings::{infer_failed_from, push_failed, FailedSource};
use super::model::{GapKind, State};
use super::plan::{
    ChainTransfer, Finding, LedgerRow, LedgerView, Observation, Outcome, Plan, PlannedTransition,
    Refusal,
};

/// The order the record names, when it can take this payment: no payment key yet, same
/// chain, deposit address and asset, and not already given a payment in this plan.
pub(super) fn by_ref_candidate<'a>(
    obs: &Observation,
    t: &ChainTransfer,
    ledger: &'a LedgerView,
    claimed: &HashSet<i64>,
) -> Option<&'a LedgerRow> {
    let row = ledger.by_ref.get(obs.order_ref.as_deref()?)?;
    let fits = row.key.is_none()
        && !claimed.contains(&row.id)
        && row.chain == t.key.chain
        && row.pay_to == t.to
        && row.asset == t.asset;
    fits.then_some(row)
}

/// Credits the payment to the order the provider named (the cover rule of
/// docs/configuration.md, "Amounts", decides whether it moves). An order already advanced from
/// the provider's status gets its key and moves forward only when the chain is ahead of it.
pub(super) fn plan_attach_by_ref(
    plan: &mut Plan,
    obs: &Observation,
    t: &ChainTransfer,
    row: &LedgerRow,
    ledger: &LedgerView,
    in_plan: &mut InPlan,
) -> Credited {
    // The chain sweep names an order only by a Solana Pay reference the payment carried.
    let by = if obs.provider == "chain" {
        "its Solana Pay reference"
    } else {
        "the provider"
    };
    let how = format!("order {} (named by {by})", row.order_ref);
    plan_credit(plan, obs, t, row, ledger, in_plan, &how)
}

/// A record that names no transaction: the provider's status (after its status map) for the
/// order it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub provider: String,
    pub chain: String,
    pub order_ref: String,
    pub state: State,
    pub notification_id: Option<String>,
    pub failed: bool,
    pub infer_failed: bool,
    pub record_time: Option<jiff::Timestamp>,
}

/// Plans the provider's statuses: forward transitions of the named orders (never backwards,
/// each order once per plan); a name no order has is an `unknown_payment`.
pub fn reconcile_claims(claims: &[Claim], ledger: &LedgerView) -> Plan {
    let mut plan = Plan::default();
    let mut claimed: HashSet<i64> = HashSet::new();
    for c in claims {
        let row = ledger.by_ref.get(&c.order_ref);
        if c.failed {
            let f = failed_claim(c, row);
            push_failed(&mut plan, f, c.notification_id.as_deref(), c.record_time);
        }
        let Some(row) = row else {
            plan.findings.push(unknown_claim(c));
            continue;
        };
        if claimed.insert(row.id) {
            plan_claim(&mut plan, c, row);
        }
    }
    plan
}

/// The `failed_notification` finding of a claim the provider reports as undelivered.
fn failed_claim(c: &Claim, row: Option<&LedgerRow>) -> Finding {
    Finding {
        provider: c.provider.clone(),
        kind: GapKind::FailedNotification,
        chain: c.chain.clone(),
        tx_hash: None,
        log_index: None,
        order_ref: Some(c.order_ref.clone()),
        local_state: row.map(|r| r.state),
        observed_state: Some(c.state),
        outcome: Outcome::Nothing,
        detail: format!(
            "provider reports notification {} as undelivered",
            c.notification_id.as_deref().unwrap_or("?")
        ),
        amount: None,
        asset: row.map(|r| r.asset.clone()),
    }
}

/// The `unknown_payment` finding of a claim naming an order the ledger does not have.
fn unknown_claim(c: &Claim) -> Finding {
    Finding {
        provider: c.provider.clone(),
        kind: GapKind::UnknownPayment,
        chain: c.chain.clone(),
        tx_hash: None,
        log_index: None,
        order_ref: Some(c.order_ref.clone()),
        local_state: None,
        observed_state: Some(c.state),
        outcome: Outcome::Nothing,
        detail: format!(
            "the provider reports order {:?}, which the ledger does not have",
            c.order_ref
        ),
        amount: None,
        asset: None,
    }
}

/// Refuses a backwards claim, skips one already applied, else plans the order's transition.
fn plan_claim(plan: &mut Plan, c: &Claim, row: &LedgerRow) {
    if c.state < row.state {
        plan.refused_backwards.push(Refusal {
            order_ref: row.order_ref.clone(),
            local: row.state,
            observed: c.state,
        });
        return;
    }
    if c.state == row.state {
        return;
    }
    let planned = plan.transitions.len();
    plan.transitions.push(PlannedTransition {
        order_id: row.id,
        order_ref: row.order_ref.clone(),
        from: row.state,
        to: c.state,
        attach: None,
        credit: None,
    });
    plan.findings.push(claim_finding(c, row, planned));
    if c.infer_failed && !c.failed {
        let src = FailedSource {
            provider: &c.provider,
            chain: &c.chain,
            tx_hash: None,
            log_index: None,
            observed_state: Some(c.state),
            notification_id: c.notification_id.as_deref(),
            record_time: c.record_time,
        };
        infer_failed_from(plan, planned, src);
    }
}

/// The finding of a claim that moves its order: `missing` from unpaid, else `lagging`.
fn claim_finding(c: &Claim, row: &LedgerRow, planned: usize) -> Finding {
    let kind = if row.state == State::Unpaid {
        GapKind::Missing
    } else {
        GapKind::Lagging
    };
    Finding {
        provider: c.provider.clone(),
        kind,
        chain: c.chain.clone(),
        tx_hash: None,
        log_index: None,
        order_ref: Some(row.order_ref.clone()),
        local_state: Some(row.state),
        observed_state: Some(c.state),
        outcome: Outcome::Transition(planned),
        detail: format!(
            "the provider reports {} for the order and names no transaction: its status applies",
            c.state
        ),
        amount: None,
        asset: Some(row.asset.clone()),
    }
}
