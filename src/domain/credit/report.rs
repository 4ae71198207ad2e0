//! The findings crediting reports, and the words of their details: a held payment moved by a
//! reorg, a late payment, a payment held short, a sum that overflows, and what a covered order's
//! move says (found on chain, lagging, paid other than its due). No decisions here.

use crate::domain::cover::{Cover, SumOverflow};
use crate::domain::findings::{finding, planned};
use crate::domain::model::{GapKind, State, U256};
use crate::domain::plan::{Action, ChainTransfer, Finding, LedgerRow, Observation, Outcome};

/// A `reorged` finding when `row` holds `t`'s transaction, credited in another block: the
/// same payment re-included elsewhere by a reorg, which the chain sweep re-keys.
pub(in crate::domain) fn moved_held(
    obs: &Observation,
    t: &ChainTransfer,
    row: &LedgerRow,
) -> Option<Finding> {
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
    paid: U256,
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
             paid {paid} of {} in all; counted (late_payments = \"accept\")",
            t.amount, row.amount_due
        );
    } else {
        f.outcome = Outcome::Decided(Action::Held);
        f.detail = format!(
            "late: paid {} in a block of {when}, after the order expired at {expired}; \
             paid {paid} of {} in all; credited and held until an operator decides",
            t.amount, row.amount_due
        );
    }
    f
}

/// The finding of a payment credited to an order that is still short: `held`.
pub(super) fn held(obs: &Observation, t: &ChainTransfer, row: &LedgerRow, c: &Cover) -> Finding {
    let mut f = finding(obs, t, row, GapKind::AmountMismatch);
    f.outcome = Outcome::Decided(Action::Held);
    f.detail = amounts_detail(c, row.amount_due);
    f
}

/// The finding of a payment whose sum with the order's other payments overflows U256, or
/// passes `past`, the largest amount the database keeps: nothing is credited.
pub(super) fn overflowed(
    obs: &Observation,
    t: &ChainTransfer,
    row: &LedgerRow,
    past: Option<U256>,
) -> Finding {
    let mut f = finding(obs, t, row, GapKind::AmountMismatch);
    f.detail = match past {
        None => format!("{}; nothing credited", SumOverflow),
        Some(max) => format!(
            "the payments credited to this order add up to more than the database keeps \
             ({max} base units); nothing credited"
        ),
    };
    f
}

/// The finding of a covered order's step `idx` (to `to`): `missing` when the order was unpaid
/// (the payment found on chain for `how`), `lagging` when it was advanced from the provider's
/// status without a payment key and the chain shows it further; none when it stays.
pub(super) fn advanced(
    obs: &Observation,
    t: &ChainTransfer,
    row: &LedgerRow,
    to: State,
    idx: usize,
    how: &str,
) -> Option<Finding> {
    if row.state == State::Unpaid {
        Some(planned(
            obs,
            t,
            row,
            GapKind::Missing,
            idx,
            format!("payment of {} found on chain for {how}", t.amount),
        ))
    } else if to > row.state {
        Some(planned(
            obs,
            t,
            row,
            GapKind::Lagging,
            idx,
            format!(
                "ledger has {} from the provider's status without a payment key, chain shows {}",
                row.state, t.state
            ),
        ))
    } else {
        None
    }
}

/// The `lagging` finding of a keyed order's step `idx`: the chain shows it further along.
pub(super) fn keyed_lagging(
    obs: &Observation,
    t: &ChainTransfer,
    row: &LedgerRow,
    idx: usize,
) -> Finding {
    planned(
        obs,
        t,
        row,
        GapKind::Lagging,
        idx,
        format!("ledger has {}, chain shows {}", row.state, t.state),
    )
}

/// The `amount_mismatch` finding of a covered order's step `idx` when its payments (`c`) are
/// not exactly its due (short within tolerance, or overpaid); none when they are.
pub(super) fn mismatch(
    obs: &Observation,
    t: &ChainTransfer,
    row: &LedgerRow,
    c: &Cover,
    idx: usize,
) -> Option<Finding> {
    if c.paid != row.amount_due {
        Some(planned(
            obs,
            t,
            row,
            GapKind::AmountMismatch,
            idx,
            amounts_detail(c, row.amount_due),
        ))
    } else {
        None
    }
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
