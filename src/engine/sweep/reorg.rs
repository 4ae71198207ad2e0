//! The sweep's writes for reorgs: re-keying a payment the chain re-included elsewhere, and
//! recording the block of a payment whose row had none. Each is one statement guarded by
//! the values the sweep read, outside any transition: the state and the audit trail are
//! never touched here.

use super::Sweep;
use crate::domain::{moved_detail, Action, BlockRef, ChainTransfer, Finding, LedgerRow, Outcome};
use crate::engine::error::PartError;
use crate::store::{Rekey, RekeyOutcome};

/// What re-keying one row did.
pub(super) struct Rekeyed {
    /// The `reorged` finding (action `applied`, `would_apply` or `none`).
    pub finding: Finding,
    /// The row at its new position, when it was (or in a dry run would be) moved there.
    pub row: Option<LedgerRow>,
    /// The row still needs an operator (the new key is held by another order).
    pub open: bool,
}

impl Sweep<'_> {
    /// Moves `row` to `to`'s position (unless nothing is written: dry run, `apply = false`).
    pub(super) async fn rekey(
        &self,
        chain: &str,
        row: &LedgerRow,
        from: &BlockRef,
        to: &ChainTransfer,
    ) -> Result<Rekeyed, PartError> {
        let key = row.key.clone().expect("swept rows have keys");
        let detail = moved_detail(&key, from, to);
        let mut moved = row.clone();
        moved.key = Some(to.key.clone());
        moved.block = Some(to.block.clone());
        let (action, note, row_after, open) = if !self.ctx.apply {
            (Action::WouldApply, String::new(), Some(moved), false)
        } else {
            let r = Rekey {
                order_id: row.id,
                chain: chain.to_string(),
                tx_hash: key.tx_hash.clone(),
                old_log_index: key.log_index,
                old_block_hash: row
                    .block
                    .as_ref()
                    .map(|b| b.hash.clone())
                    .filter(|h| !h.is_empty()),
                new_log_index: to.key.log_index,
                new_block: to.block.clone(),
            };
            match self.engine.store.rekey(&r).await? {
                RekeyOutcome::Rekeyed => {
                    tracing::info!(chain, order_ref = %row.order_ref, detail = %detail, "Payment re-keyed after a reorg.");
                    (Action::Applied, String::new(), Some(moved), false)
                }
                RekeyOutcome::Changed => (
                    Action::None,
                    "; not re-keyed: the row changed while it was checked (the next run looks \
                     again)"
                        .to_string(),
                    None,
                    false,
                ),
                RekeyOutcome::Collision => (
                    Action::None,
                    format!(
                        "; not re-keyed: another order already holds payment key ({chain}, {}, {})",
                        to.key.tx_hash, to.key.log_index
                    ),
                    None,
                    true,
                ),
            }
        };
        let outcome = Outcome::Decided(action);
        let finding = super::reorged(
            chain,
            row,
            &key,
            Some(to.state),
            outcome,
            format!("{detail}{note}"),
        );
        Ok(Rekeyed {
            finding,
            row: row_after,
            open,
        })
    }

    /// Records the blocks of payments whose rows have none (the merchant's handler wrote
    /// only the key), so that a later reorg of them is seen: one statement per sweep page.
    /// Not a gap; nothing in a dry run.
    pub(super) async fn record_blocks(&self, batch: Vec<Rekey>) -> Result<(), PartError> {
        if !self.ctx.apply || batch.is_empty() {
            return Ok(());
        }
        let written = self.engine.store.record_blocks(&batch).await?;
        tracing::debug!(
            rows = batch.len(),
            written,
            "Recorded the blocks of payments."
        );
        Ok(())
    }
}

/// The block of a payment whose row has none, to record (see `Sweep::record_blocks`).
pub(super) fn unrecorded(row: &LedgerRow, t: &ChainTransfer) -> Rekey {
    Rekey {
        order_id: row.id,
        chain: t.key.chain.clone(),
        tx_hash: t.key.tx_hash.clone(),
        old_log_index: t.key.log_index,
        old_block_hash: None,
        new_log_index: t.key.log_index,
        new_block: t.block.clone(),
    }
}
