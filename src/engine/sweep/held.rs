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
use crate::chain::{ChainClient, Lookup, TransferQuery};
use crate::domain::{
    moved_detail, place, Action, BlockRef, ChainTransfer, Finding, LedgerView, Outcome, PaymentKey,
    Placement, State,
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
        // A chain whose head could not be read failed the sweep when it started.
        let Ok(head) = head.as_ref() else {
            return Ok(());
        };
        let (queries, held) = self.held_queries(chain, client, rows);
        let lookups = client.lookup(head, &queries).await?;
        let mut out = HeldOutcome {
            taken: held.iter().filter_map(|p| p.row.key.clone()).collect(),
            ..HeldOutcome::default()
        };
        for (p, lookup) in held.into_iter().zip(lookups) {
            self.place_held(chain, p, lookup, &mut out).await?;
        }
        if self.ctx.apply {
            e.store.advance_payment_states(&out.moves).await?;
        }
        let (observations, view) = self.revive(chain, out.back).await?;
        self.settle(&observations, &view, out.findings).await
    }

    /// The rows to place (gone ones, and those this run has not placed), with their queries.
    fn held_queries(
        &mut self,
        chain: &str,
        client: &ChainClient,
        rows: Vec<HeldPayment>,
    ) -> (Vec<TransferQuery>, Vec<HeldPayment>) {
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
        (queries, held)
    }

    /// Places one held payment: flags it gone or back on chain, then follows it where it is.
    async fn place_held(
        &mut self,
        chain: &str,
        p: HeldPayment,
        lookup: Lookup,
        out: &mut HeldOutcome,
    ) -> Result<(), PartError> {
        let row = &p.row;
        let key = row.key.clone().expect("held rows have keys");
        let placement = place(row, &receipt(lookup), &out.taken);
        // Gone, it stops counting toward its order's cover; back, it counts again.
        let is_gone = matches!(placement, Placement::Gone(_));
        let revived = self.ctx.apply
            && is_gone != p.gone
            && self.engine.store.set_payment_gone(p.id, is_gone).await?
            && !is_gone;
        let what = match row.state {
            State::Unpaid => "a payment held short",
            _ => "an earlier part of a paid order",
        };
        match placement {
            Placement::Same(t) | Placement::Unrecorded(t) => out.follow(&p, &t, revived),
            Placement::Gone(why) => {
                *self.open.entry(chain.to_string()).or_default() += 1;
                let finding = gone(chain, row, &key, format!("{why} ({what})"));
                out.findings.push(finding);
            }
            Placement::Moved { from, to } => {
                let at = Placing {
                    p: &p,
                    key: &key,
                    what,
                    revived,
                };
                self.held_moved(chain, &at, from, to, out).await?;
            }
        }
        Ok(())
    }

    /// A held payment re-included elsewhere: re-keyed when applying, and a `reorged` finding.
    async fn held_moved(
        &mut self,
        chain: &str,
        at: &Placing<'_>,
        from: BlockRef,
        to: ChainTransfer,
        out: &mut HeldOutcome,
    ) -> Result<(), PartError> {
        let (p, key) = (at.p, at.key);
        let row = &p.row;
        out.taken.insert(to.key.clone());
        let detail = moved_detail(key, &from, &to);
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
            match self.engine.store.rekey_held(p.id, &r).await? {
                RekeyOutcome::Rekeyed => {
                    out.follow(p, &to, at.revived);
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
        let detail = format!("{detail} ({}){note}", at.what);
        let outcome = Outcome::Decided(action);
        let finding = reorged(chain, row, key, Some(to.state), outcome, detail);
        out.findings.push(finding);
        Ok(())
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

/// What placing a chain's held payments adds up to.
#[derive(Default)]
struct HeldOutcome {
    /// Keys held or claimed so far (a re-included payment claims its new key).
    taken: HashSet<PaymentKey>,
    findings: Vec<Finding>,
    /// Held payments whose own state moves forward.
    moves: Vec<(i64, State)>,
    /// Short orders whose payment is back on chain, with that payment.
    back: Vec<(String, ChainTransfer)>,
}

impl HeldOutcome {
    /// Follows `p` to `t`: its own state moves forward, and a short order of it revived is back.
    fn follow(&mut self, p: &HeldPayment, t: &ChainTransfer, revived: bool) {
        if t.state > p.state {
            self.moves.push((p.id, t.state));
        }
        if revived && p.row.state == State::Unpaid {
            self.back.push((p.row.order_ref.clone(), t.clone()));
        }
    }
}

/// One held payment being placed.
struct Placing<'a> {
    p: &'a HeldPayment,
    key: &'a PaymentKey,
    /// What kind of held payment it is, for the findings.
    what: &'static str,
    /// Flagged back on chain by this run.
    revived: bool,
}
