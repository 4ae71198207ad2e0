//! Dry runs (and `reconcile.apply = false`) write nothing, so a later batch of the same run
//! plans on top of what earlier batches *would* have written: the rows they would have
//! keyed and advanced, kept per part (`BatchShared::simulated`).

use std::collections::{HashMap, HashSet};

use crate::domain::{ChainVerdict, LedgerRow, LedgerView, Observation};

/// The view as this run's earlier batches would have left it had they been applied: orders
/// they attached a payment to are no longer unpaid, and carry that key and state.
pub(super) fn simulate(
    view: &LedgerView,
    observations: &[Observation],
    simulated: &HashMap<i64, LedgerRow>,
) -> LedgerView {
    let mut out = view.clone();
    for rows in out.unpaid.values_mut() {
        // Orders still short stay unpaid, with what was credited to them so far.
        rows.retain(|r| simulated.get(&r.id).is_none_or(|s| s.key.is_none()));
        for r in rows.iter_mut() {
            if let Some(s) = simulated.get(&r.id) {
                *r = s.clone();
            }
        }
    }
    let keys: HashSet<_> = observations
        .iter()
        .filter_map(|o| match &o.verdict {
            ChainVerdict::Transfer(t) => Some(&t.key),
            _ => None,
        })
        .collect();
    for row in simulated.values() {
        if row.key.as_ref().is_some_and(|k| keys.contains(k)) {
            out.insert_keyed(row.clone());
        }
        for c in row.credits.iter().filter(|c| keys.contains(&c.key)) {
            out.insert_credited(c.key.clone(), row.clone());
        }
    }
    out
}

/// Records what the planned transitions would have written.
pub(super) fn remember(
    simulated: &mut HashMap<i64, LedgerRow>,
    view: &LedgerView,
    transitions: &[crate::domain::PlannedTransition],
) {
    if transitions.is_empty() {
        return;
    }
    let by_id: HashMap<i64, &LedgerRow> = view
        .by_key
        .values()
        .chain(view.unpaid.values().flatten())
        .map(|r| (r.id, r))
        .collect();
    for t in transitions {
        let row = by_id.get(&t.order_id).copied();
        let Some(mut row) = simulated.get(&t.order_id).or(row).cloned() else {
            continue;
        };
        if let Some(p) = &t.credit {
            row.amount_paid = Some(p.paid_after);
            row.credits.push(crate::domain::CreditedPayment {
                key: p.key.clone(),
                amount: p.amount,
                state: p.state,
                block: Some(p.block.clone()),
                block_time: p.block_time,
                gone: false,
            });
        }
        if let Some(a) = &t.attach {
            row.key = Some(a.key.clone());
            row.amount_paid = Some(a.amount);
            row.block = Some(a.block.clone());
        }
        row.state = row.state.max(t.to);
        simulated.insert(t.order_id, row);
    }
}
