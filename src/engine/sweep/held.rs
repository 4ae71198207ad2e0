//! Held payments (SPEC §14): payments credited to orders still short of their amount have no
//! key on their order, so the keyed sweep does not see them. Each run places them on chain
//! like keyed rows: one re-included elsewhere by a reorg is re-keyed (its row only; the
//! order stays where it is), one gone is a `reorged` finding every run. So a top-up never
//! completes an order with a payment at a stale position, and a reorg never credits one
//! payment twice.

use std::collections::{BTreeMap, HashSet};

use super::{gone, receipt, reorged, Sweep};
use crate::domain::{moved_detail, place, Action, LedgerRow, Outcome, PaymentKey, Placement};
use crate::engine::error::PartError;
use crate::store::{Rekey, RekeyOutcome, StoreError};

impl Sweep<'_> {
    /// Every page of held payments, chain by chain.
    pub(super) async fn held_pages(&mut self) -> Result<(), StoreError> {
        let e = self.engine;
        let mut after = 0i64;
        loop {
            let (rows, last) = e
                .store
                .held_page(after, e.settings.batch_size as i64)
                .await?;
            let Some(last) = last else { break };
            after = last;
            let mut by_chain: BTreeMap<String, Vec<(i64, LedgerRow)>> = BTreeMap::new();
            for (id, r) in rows {
                by_chain.entry(r.chain.clone()).or_default().push((id, r));
            }
            for (chain, rows) in by_chain {
                if self.failed.contains(&chain) {
                    continue;
                }
                if let Err(err) = self.held_chain(&chain, rows).await {
                    self.failed.insert(chain);
                    e.fail(&mut self.acc, err);
                }
            }
        }
        Ok(())
    }

    async fn held_chain(
        &mut self,
        chain: &str,
        rows: Vec<(i64, LedgerRow)>,
    ) -> Result<(), PartError> {
        let e = self.engine;
        let (Some(client), Some(head)) = (e.chains.get(chain), self.ctx.heads.get(chain)) else {
            return Ok(());
        };
        let head = head.as_ref().map_err(|reason| PartError::ChainDown {
            chain: chain.to_string(),
            reason: reason.clone(),
        })?;
        let mut queries = Vec::with_capacity(rows.len());
        let mut held = Vec::with_capacity(rows.len());
        for (id, row) in rows {
            if crate::engine::seen::was_placed(&self.ctx.placed, &row) {
                continue;
            }
            if let Some(q) = self.placing_query(chain, client, &row) {
                queries.push(q);
                held.push((id, row));
            }
        }
        let lookups = client.lookup(head, &queries).await?;
        let mut taken: HashSet<PaymentKey> =
            held.iter().filter_map(|(_, r)| r.key.clone()).collect();
        let mut findings = Vec::new();
        for ((id, row), lookup) in held.into_iter().zip(lookups) {
            let key = row.key.clone().expect("held rows have keys");
            match place(&row, &receipt(lookup), &taken) {
                Placement::Same(_) | Placement::Unrecorded(_) => {}
                Placement::Gone(why) => {
                    *self.open.entry(chain.to_string()).or_default() += 1;
                    findings.push(gone(chain, &row, &key, why));
                }
                Placement::Moved { from, to } => {
                    taken.insert(to.key.clone());
                    let detail = moved_detail(&key, &from, &to);
                    let (action, note) = if !self.ctx.apply {
                        (Action::WouldApply, String::new())
                    } else {
                        let r = Rekey {
                            order_id: row.id,
                            chain: chain.to_string(),
                            tx_hash: key.tx_hash.clone(),
                            old_log_index: key.log_index,
                            old_block_hash: Some(from.hash.clone()).filter(|h| !h.is_empty()),
                            new_log_index: to.key.log_index,
                            new_block: to.block.clone(),
                        };
                        match e.store.rekey_held(id, &r).await? {
                            RekeyOutcome::Rekeyed => (Action::Applied, String::new()),
                            RekeyOutcome::Changed => (
                                Action::None,
                                "; not re-keyed: the payment changed while it was checked".into(),
                            ),
                            RekeyOutcome::Collision => {
                                *self.open.entry(chain.to_string()).or_default() += 1;
                                (
                                    Action::None,
                                    "; not re-keyed: another payment holds the new key".into(),
                                )
                            }
                        }
                    };
                    let detail = format!("{detail} (a payment held short){note}");
                    let outcome = Outcome::Decided(action);
                    findings.push(reorged(chain, &row, &key, Some(to.state), outcome, detail));
                }
            }
        }
        self.settle(&[], &Default::default(), findings).await
    }
}
