//! An operator's decisions on exceptions (README.md, "Exceptions"), planned like a run's:
//! `accept` moves a held order to the state its payments on chain have reached; `attach`
//! credits a payment to no order to one the operator names, and the cover rule and the chain
//! decide the rest. No IO.

use super::credit::{paid_on_chain, plan_credit, InPlan};
use super::model::{State, U256};
use super::plan::{
    Attach, ChainTransfer, ChainVerdict, LedgerRow, LedgerView, Observation, Plan,
    PlannedTransition,
};

/// The provider name an operator's decisions are recorded under.
pub const OPERATOR: &str = "operator";

/// Why a decision is refused; the text names the order and what to do instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused(pub String);

/// `accept`: the held order moves to the lowest state its payments on chain have reached
/// (all of them together are what the operator accepts), keyed by its latest payment, with
/// `amount_paid` their sum. Refused for an order that is not `unpaid`, or has no payment on
/// chain.
pub fn plan_accept(row: &LedgerRow) -> Result<PlannedTransition, Refused> {
    if row.state != State::Unpaid {
        return Err(Refused(format!(
            "order {} is {}, not held: there is nothing to accept",
            row.order_ref, row.state
        )));
    }
    let on_chain: Vec<_> = row.credits.iter().filter(|c| !c.gone).collect();
    let Some(to) = on_chain.iter().map(|c| c.state).min() else {
        return Err(Refused(format!(
            "order {} has no payment on chain: there is nothing to accept",
            row.order_ref
        )));
    };
    let paid = paid_on_chain(&row.credits, U256::ZERO)
        .ok_or_else(|| Refused(format!("order {}: its payments overflow", row.order_ref)))?;
    let latest = on_chain
        .iter()
        .filter(|c| c.block.is_some())
        .max_by_key(|c| (c.block.as_ref().map_or(0, |b| b.number), c.key.log_index));
    Ok(PlannedTransition {
        order_id: row.id,
        order_ref: row.order_ref.clone(),
        from: row.state,
        to,
        attach: latest.map(|c| Attach {
            key: c.key.clone(),
            amount: paid,
            block: c.block.clone().unwrap_or_default(),
        }),
        credit: None,
    })
}

/// `attach`: payment `t` (read on chain) credited to `row` as a run would credit it. Refused
/// for an order of another chain or asset, or one already paid (its key is taken: dismiss
/// the exception and refund instead).
pub fn plan_attach(t: &ChainTransfer, row: &LedgerRow, view: &LedgerView) -> Result<Plan, Refused> {
    if row.chain != t.key.chain || row.asset != t.asset {
        return Err(Refused(format!(
            "order {} takes {} on {}, the payment is {} on {}",
            row.order_ref, row.asset, row.chain, t.asset, t.key.chain
        )));
    }
    if row.state != State::Unpaid || row.key.is_some() {
        return Err(Refused(format!(
            "order {} is {} and holds its payment already: attach the payment to an unpaid \
             order, or dismiss the exception",
            row.order_ref, row.state
        )));
    }
    let obs = Observation {
        provider: OPERATOR.into(),
        chain: t.key.chain.clone(),
        tx_hash: t.key.tx_hash.clone(),
        notification_id: None,
        failed: false,
        order_ref: Some(row.order_ref.clone()),
        infer_failed: false,
        record_time: None,
        verdict: ChainVerdict::Transfer(t.clone()),
    };
    let mut plan = Plan::default();
    let mut in_plan = InPlan::default();
    plan_credit(
        &mut plan,
        &obs,
        t,
        row,
        view,
        &mut in_plan,
        "the order an operator attached it to",
    );
    if plan.transitions.is_empty() {
        return Err(Refused(format!(
            "the payment cannot be credited to order {} now (its block time is not known, or \
             the order holds this payment at another position); try again after the next run",
            row.order_ref
        )));
    }
    Ok(plan)
}
