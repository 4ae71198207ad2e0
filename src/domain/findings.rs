//! The findings every planner builds alike (a leaf: the planners import it, it imports
//! none of them): a finding for a transfer and a row, an amount mismatch, a failed
//! notification with its resend, and one inferred for providers without a failed list.

use super::model::{GapKind, State};
use super::plan::{
    ChainTransfer, ChainVerdict, Finding, LedgerRow, Observation, Outcome, Plan, ResendRequest,
};

/// A failed notification's finding, with its resend when the provider gave an id.
pub(super) fn push_failed(
    plan: &mut Plan,
    mut f: Finding,
    id: Option<&str>,
    record_time: Option<jiff::Timestamp>,
) {
    if let Some(id) = id {
        plan.resends.push(ResendRequest {
            chain: f.chain.clone(),
            notification_id: id.to_string(),
            record_time,
        });
        f.outcome = Outcome::Resend(plan.resends.len() - 1);
    }
    plan.findings.push(f);
}

/// A provider without a failed list (Qvard): when its record moved the ledger forward (a
/// transition planned since `planned`), its notification evidently did not arrive.
pub(super) fn infer_failed(plan: &mut Plan, planned: usize, obs: &Observation) {
    let (log_index, observed_state) = match &obs.verdict {
        ChainVerdict::Transfer(tr) => (Some(tr.key.log_index), Some(tr.state)),
        _ => (None, None),
    };
    let src = FailedSource {
        provider: &obs.provider,
        chain: &obs.chain,
        tx_hash: Some(obs.tx_hash.to_string()),
        log_index,
        observed_state,
        notification_id: obs.notification_id.as_deref(),
        record_time: obs.record_time,
    };
    infer_failed_from(plan, planned, src);
}

/// Where an inferred failed notification comes from.
pub(super) struct FailedSource<'a> {
    pub provider: &'a str,
    pub chain: &'a str,
    pub tx_hash: Option<String>,
    pub log_index: Option<i64>,
    pub observed_state: Option<State>,
    pub notification_id: Option<&'a str>,
    pub record_time: Option<jiff::Timestamp>,
}

pub(super) fn infer_failed_from(plan: &mut Plan, planned: usize, src: FailedSource<'_>) {
    let Some(t) = plan
        .transitions
        .get(planned..)
        .and_then(|t| t.first())
        .cloned()
    else {
        return;
    };
    // Attaching a key to an order already in that state (from == to) moved nothing.
    if t.to <= t.from {
        return;
    }
    let f = Finding {
        provider: src.provider.to_string(),
        kind: GapKind::FailedNotification,
        chain: src.chain.to_string(),
        tx_hash: src.tx_hash,
        log_index: src.log_index,
        order_ref: Some(t.order_ref.clone()),
        local_state: Some(t.from),
        observed_state: src.observed_state.or(Some(t.to)),
        outcome: Outcome::Nothing,
        detail: format!(
            "the ledger had {} although the provider reports the payment: its notification \
             did not arrive",
            t.from
        ),
        amount: None,
        asset: None,
    };
    push_failed(plan, f, src.notification_id, src.record_time);
}

/// A finding about `t` and `row` that planned transition `idx` settles, saying `detail`.
pub(super) fn planned(
    obs: &Observation,
    t: &ChainTransfer,
    row: &LedgerRow,
    kind: GapKind,
    idx: usize,
    detail: String,
) -> Finding {
    let mut f = finding(obs, t, row, kind);
    f.outcome = Outcome::Transition(idx);
    f.detail = detail;
    f
}

pub(super) fn finding(
    obs: &Observation,
    t: &ChainTransfer,
    row: &LedgerRow,
    kind: GapKind,
) -> Finding {
    Finding {
        provider: obs.provider.clone(),
        kind,
        chain: t.key.chain.clone(),
        tx_hash: Some(t.key.tx_hash.to_string()),
        log_index: Some(t.key.log_index),
        order_ref: Some(row.order_ref.clone()),
        local_state: Some(row.state),
        observed_state: Some(t.state),
        outcome: Outcome::Nothing,
        detail: String::new(),
        amount: Some(t.amount),
        asset: Some(t.asset.clone()),
    }
}
