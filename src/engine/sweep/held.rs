//! Payments the keyed sweep does not see (docs/how-it-works.md, "Reorgs"): those credited to
//! orders still short of their amount (no key on their order), and the earlier parts of orders
//! a later payment completed (the key names that one). Each run places them on chain like keyed
//! rows: one re-included elsewhere by a reorg is re-keyed (its row only), one gone is a
//! `reorged` finding every run and, while its order is short, counts toward nothing until the
//! chain has it again (then the order moves if its payments cover it). A payment's own state
//! follows the chain forward. So a top-up never completes an order with a payment at a stale
//! position or gone, and a reorg never credits one payment twice.

use std::collections::{BTreeMap, HashSet};

use super::{gone, observe, receipt, reorged, Sweep};
use crate::domain::{
    moved_detail, place, Action, ChainTransfer, LedgerView, Outcome, PaymentKey, Placement, State,
};
use crate::engine::error::PartError;
use crate::store::{HeldPayment, Rekey, RekeyOutcome, StoreError};

impl Sweep<'_> {
    /// Every page of held payments, chain by chain.
    pub(super) async fn held_pages(&mut self) -> Result<(), StoreError> {
        let e = self.engine;
        // Earlier parts of paid orders made final within the longest `recheck_final`.
        let recent_since = e
            .chains
            .values()
            .filter_map(|c| jiff::SignedDuration::try_from(c.settings().recheck_final).ok())
            .filter(|d| !d.is_zero())
            .max()
            .map(|d| {
                self.ctx
                    .started
                    .checked_sub(d)
                    .unwrap_or(jiff::Timestamp::UNIX_EPOCH)
            });
        let mut after = 0i64;
        loop {
            let (rows, last) = e
                .store
                .held_page(after, e.settings.batch_size as i64, recent_since)
                .await?;
            let Some(last) = last else { break };
            after = last;
            let mut by_chain: BTreeMap<String, Vec<HeldPayment>> = BTreeMap::new();
            for p in rows {
                by_chain.entry(p.row.chain.clone()).or_default().push(p);
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

    async fn held_chain(&mut self, chain: &str, rows: Vec<HeldPayment>) -> Result<(), PartError> {
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
        for p in rows {
            if !p.gone && crate::engine::seen::was_placed(&self.ctx.placed, &p.row) {
                continue;
            }
            if let Some(q) = self.placing_query(chain, client, &p.row) {
                queries.push(q);
                held.push(p);
            }
        }
        let lookups = client.lookup(head, &queries).await?;
        let mut taken: HashSet<PaymentKey> =
            held.iter().filter_map(|p| p.row.key.clone()).collect();
        let mut findings = Vec::new();
        let mut moves: Vec<(i64, State)> = Vec::new();
        let mut back: Vec<(String, ChainTransfer)> = Vec::new();
        for (p, lookup) in held.into_iter().zip(lookups) {
            let row = &p.row;
            let key = row.key.clone().expect("held rows have keys");
            let placement = place(row, &receipt(lookup), &taken);
            // Gone, it stops counting toward its order's cover; back, it counts again.
            let is_gone = matches!(placement, Placement::Gone(_));
            let revived = self.ctx.apply
                && is_gone != p.gone
                && e.store.set_payment_gone(p.id, is_gone).await?
                && !is_gone;
            let what = match row.state {
                State::Unpaid => "a payment held short",
                _ => "an earlier part of a paid order",
            };
            match placement {
                Placement::Same(t) | Placement::Unrecorded(t) => {
                    if t.state > p.state {
                        moves.push((p.id, t.state));
                    }
                    if revived && row.state == State::Unpaid {
                        back.push((row.order_ref.clone(), t));
                    }
                }
                Placement::Gone(why) => {
                    *self.open.entry(chain.to_string()).or_default() += 1;
                    findings.push(gone(chain, row, &key, format!("{why} ({what})")));
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
                        match e.store.rekey_held(p.id, &r).await? {
                            RekeyOutcome::Rekeyed => {
                                if to.state > p.state {
                                    moves.push((p.id, to.state));
                                }
                                if revived && row.state == State::Unpaid {
                                    back.push((row.order_ref.clone(), to.clone()));
                                }
                                (Action::Applied, String::new())
                            }
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
                    let detail = format!("{detail} ({what}){note}");
                    let outcome = Outcome::Decided(action);
                    findings.push(reorged(chain, row, &key, Some(to.state), outcome, detail));
                }
            }
        }
        if self.ctx.apply {
            e.store.advance_payment_states(&moves).await?;
        }
        let (observations, view) = self.revive(chain, back).await?;
        self.settle(&observations, &view, findings).await
    }

    /// Orders whose payment is back on chain: read again with their credits (one query), and
    /// planned through that payment, so that they move when their payments cover them.
    async fn revive(
        &self,
        chain: &str,
        back: Vec<(String, ChainTransfer)>,
    ) -> Result<(Vec<crate::domain::Observation>, LedgerView), PartError> {
        let mut view = LedgerView {
            policy: self.engine.amounts.clone(),
            ..LedgerView::default()
        };
        if back.is_empty() {
            return Ok((Vec::new(), view));
        }
        let refs: Vec<String> = back.iter().map(|(r, _)| r.clone()).collect();
        let rows = self.engine.store.orders_by_ref(&refs).await?;
        let mut observations = Vec::new();
        for (order_ref, t) in back {
            if let Some(row) = rows.iter().find(|r| r.order_ref == order_ref) {
                view.insert_credited(t.key.clone(), row.clone());
                observations.push(observe(chain, &t));
            }
        }
        Ok((observations, view))
    }
}
