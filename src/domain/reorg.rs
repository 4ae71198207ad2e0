//! Where a swept ledger payment is now: in the block the ledger recorded, re-included
//! elsewhere by a reorg (same transaction, maybe another log index), or gone. No IO.

use std::collections::HashSet;

use super::model::{BlockRef, PaymentKey};
use super::plan::{ChainTransfer, LedgerRow, LedgerView, Observation};

/// The chain's answer for a swept row's transaction, as the sweep asked it: every transfer
/// of the row's asset in the receipt (any recipient, any log index), or why there is none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Receipt {
    Transfers(Vec<ChainTransfer>),
    /// No receipt, a reverted transaction, or a receipt without a payment: the reason.
    Gone(String),
}

/// What the sweep does with one row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// The payment is where the ledger says: the normal state derivation applies.
    Same(ChainTransfer),
    /// The ledger recorded no block for this payment (a handler that wrote only the key) and
    /// the transfer at its key is the same payment: not a reorg; the block can be recorded.
    Unrecorded(ChainTransfer),
    /// The transaction was re-included in another block: the same payment is now `to`.
    Moved { from: BlockRef, to: ChainTransfer },
    /// The payment is not on the canonical chain any more: why.
    Gone(String),
}

/// Decides where `row`'s payment is. The same payment in a new receipt is a transfer of the
/// row's asset to its `pay_to` of its `amount_paid` (when recorded): the log index may differ.
/// When several match, the one at the row's old log index, else the lowest one not in `taken`
/// (keys already held or claimed by other rows; the row's own key may be in it).
pub fn place(row: &LedgerRow, receipt: &Receipt, taken: &HashSet<PaymentKey>) -> Placement {
    let (Some(key), Receipt::Transfers(transfers)) = (&row.key, receipt) else {
        return match receipt {
            Receipt::Gone(why) => Placement::Gone(why.clone()),
            Receipt::Transfers(_) => Placement::Gone("the ledger row has no payment key".into()),
        };
    };
    let recorded = row.block.as_ref().filter(|b| !b.hash.is_empty());
    let is_ours =
        |t: &ChainTransfer| t.to == row.pay_to && row.amount_paid.is_none_or(|a| a == t.amount);
    let at_key = transfers.iter().find(|t| t.key.log_index == key.log_index);
    match (recorded, at_key) {
        (Some(b), Some(t)) if b.hash == t.block.hash => return Placement::Same(t.clone()),
        (None, Some(t)) if is_ours(t) => return Placement::Unrecorded(t.clone()),
        _ => {}
    }
    let moved = transfers
        .iter()
        .filter(|t| is_ours(t) && (t.key == *key || !taken.contains(&t.key)))
        .min_by_key(|t| (t.key.log_index != key.log_index, t.key.log_index));
    let from = recorded.cloned().unwrap_or(BlockRef {
        number: 0,
        hash: String::new(),
    });
    match moved {
        Some(t) if recorded.is_none_or(|b| b.hash != t.block.hash) => Placement::Moved {
            from,
            to: t.clone(),
        },
        _ => {
            let block = transfers.first().map(|t| t.block.number);
            Placement::Gone(format!(
                "the transaction's receipt{} no longer holds a transfer of {} to {}{}",
                block.map(|n| format!(" (block {n})")).unwrap_or_default(),
                row.amount_paid
                    .map(|a| a.to_string())
                    .unwrap_or_else(|| "any amount".into()),
                row.pay_to,
                if transfers.iter().any(is_ours) {
                    " that no other order holds"
                } else {
                    ""
                }
            ))
        }
    }
}

/// A finding's detail for a re-included payment: both positions.
pub fn moved_detail(row_key: &PaymentKey, from: &BlockRef, to: &ChainTransfer) -> String {
    let from = if from.hash.is_empty() {
        "an unrecorded block".to_string()
    } else {
        format!("block {} ({})", from.number, from.hash)
    };
    format!(
        "re-included by a reorg: ledger had {from} log index {}, chain has block {} ({}) \
         log index {}",
        row_key.log_index, to.block.number, to.block.hash, to.key.log_index
    )
}

// The provider path's view of a re-included payment (used by `reconcile`).

/// A row holding a payment of the same transaction, asset and recipient at another log
/// index, recorded in another block: the same payment, re-included elsewhere by a reorg.
pub(super) fn moved_holder<'a>(
    obs: &Observation,
    t: &ChainTransfer,
    ledger: &'a LedgerView,
) -> Option<&'a LedgerRow> {
    held_rows(obs, ledger).into_iter().find(|r| {
        r.asset == t.asset
            && r.pay_to == t.to
            && r.amount_paid.is_none_or(|a| a == t.amount)
            && r.block
                .as_ref()
                .is_some_and(|b| !b.hash.is_empty() && b.hash != t.block.hash)
    })
}

pub(super) fn moved_row_detail(row: &LedgerRow, t: &ChainTransfer) -> String {
    match (&row.key, &row.block) {
        (Some(k), Some(b)) => moved_detail(k, b, t),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests;

/// Ledger rows holding a payment of the observation's transaction (any log index).
pub(super) fn held_rows<'a>(obs: &Observation, ledger: &'a LedgerView) -> Vec<&'a LedgerRow> {
    let mut rows: Vec<&LedgerRow> = ledger
        .by_key
        .iter()
        .filter(|(k, _)| k.chain == obs.chain && k.tx_hash == obs.tx_hash)
        .map(|(_, r)| r)
        .collect();
    rows.sort_by_key(|r| r.id);
    rows
}
