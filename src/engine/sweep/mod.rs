//! The chain sweep: ledger rows with a payment key in `pending`/`confirmed`, and `final` rows
//! younger than their chain's `recheck_final`, read in keyset pages, checked on chain and
//! advanced whatever the providers say. A reorg is detected here (the receipt's block hash
//! against the ledger's): a payment re-included elsewhere is re-keyed (see `reorg.rs`), one
//! that is gone is a `reorged` finding on every run and counts in `payrecon_reorged_open`.
//! Then the deposit scan (`scan.rs`). The sweep is one part of a run, a type of its own: the
//! reorg writes and the scan are its private helpers.

mod held;
mod reorg;
mod scan;

use std::collections::{BTreeMap, BTreeSet, HashSet};

use jiff::Timestamp;

use super::batch::BatchInput;
use super::error::PartError;
use super::part::Part;
use super::part::PartTally;
use super::{Engine, RunCtx};
use crate::chain::{Lookup, TransferQuery};
use crate::domain::{
    place, ChainVerdict, Finding, GapKind, LedgerRow, LedgerView, Observation, Outcome, PaymentKey,
    Placement, Receipt,
};
use crate::metrics::ChainL;

/// The chain sweep of one run: what it has done so far, per part and per chain.
struct Sweep<'r> {
    engine: &'r Engine,
    ctx: &'r RunCtx,
    acc: PartTally,
    /// Rows left reorganised away, per chain.
    open: BTreeMap<String, i64>,
    /// Chains whose sweep failed (their gauge is left as it was).
    failed: BTreeSet<String>,
}

impl Engine {
    /// The sweep part of a run (holding `fence` when scheduled).
    pub(crate) async fn sweep(
        &self,
        ctx: &RunCtx,
        fence: Option<crate::store::Fence>,
    ) -> PartTally {
        let mut acc = PartTally::new(Part::Sweep.name(), Part::Sweep.name());
        acc.shared.fence = fence;
        let sweep = Sweep {
            engine: self,
            ctx,
            acc,
            open: BTreeMap::new(),
            failed: BTreeSet::new(),
        };
        sweep.run().await
    }
}

impl Sweep<'_> {
    async fn run(mut self) -> PartTally {
        // A configured chain whose head could not be read fails the sweep by name, whether or
        // not the ledger holds rows on it: its keyed rows, held payments and unpaid orders'
        // deposit addresses (the only net where no provider reports) go unchecked this run.
        for (chain, head) in &self.ctx.heads {
            if let Err(reason) = head {
                self.failed.insert(chain.clone());
                let err = PartError::ChainDown {
                    chain: chain.clone(),
                    reason: reason.0.clone(),
                };
                self.engine.fail(&mut self.acc, err);
            }
        }
        if let Err(e) = self.pages().await {
            self.engine.fail(&mut self.acc, e);
            return self.acc;
        }
        // Payments credited to orders still short: placed on chain like keyed rows.
        if let Err(e) = self.held_pages().await {
            self.engine.fail(&mut self.acc, e);
            return self.acc;
        }
        // Payments to unpaid orders' deposit addresses that no provider reported.
        self.scan_unpaid().await;
        // The gauge: rows this sweep found reorganised away, per configured chain it swept.
        let e = self.engine;
        for chain in e.chains.keys().filter(|c| !self.failed.contains(*c)) {
            let open = self.open.get(chain).copied().unwrap_or(0);
            let l = ChainL {
                chain: chain.clone(),
            };
            e.metrics.reorged_open.get_or_create(&l).set(open);
        }
        self.acc
    }

    /// Every page of rows to sweep, chain by chain; a chain that fails fails the part (the
    /// others go on). `Err` only when a page cannot be read.
    async fn pages(&mut self) -> Result<(), crate::store::StoreError> {
        let e = self.engine;
        // Final rows made final within `recheck_final` before this run; those this run made
        // final were just read on chain.
        let start = self.ctx.started;
        let recent_final: Vec<(String, Timestamp, Timestamp)> = e
            .chains
            .iter()
            .filter_map(|(name, c)| {
                let d = jiff::SignedDuration::try_from(c.settings().recheck_final).ok()?;
                let since = start.checked_sub(d).unwrap_or(Timestamp::UNIX_EPOCH);
                (!d.is_zero()).then(|| (name.clone(), since, start))
            })
            .collect();
        let mut after = 0i64;
        loop {
            let page = e
                .store
                .sweep_page_with(after, e.settings.batch_size as i64, &recent_final);
            let rows = page.await?;
            let Some(last) = rows.last() else { break };
            after = last.id;
            let mut by_chain: BTreeMap<String, Vec<LedgerRow>> = BTreeMap::new();
            for r in rows {
                by_chain.entry(r.chain.clone()).or_default().push(r);
            }
            for (chain, rows) in by_chain {
                if self.failed.contains(&chain) {
                    continue;
                }
                if let Err(err) = self.chain(&chain, rows).await {
                    self.failed.insert(chain);
                    e.fail(&mut self.acc, err);
                }
            }
        }
        Ok(())
    }

    /// One page's rows of one chain: placed against their receipts, re-keyed where the chain
    /// moved them, then settled like any batch.
    async fn chain(&mut self, chain: &str, rows: Vec<LedgerRow>) -> Result<(), PartError> {
        let e = self.engine;
        let (Some(client), Some(head)) = (e.chains.get(chain), self.ctx.heads.get(chain)) else {
            tracing::debug!(
                chain,
                rows = rows.len(),
                "Rows on a chain that is not configured are not swept."
            );
            return Ok(());
        };
        // A chain whose head could not be read failed the sweep when it started.
        let Ok(head) = head.as_ref() else {
            return Ok(());
        };
        let mut queries = Vec::with_capacity(rows.len());
        let mut swept = Vec::with_capacity(rows.len());
        for row in rows {
            // Read on chain by a provider's part of this run, where the row holds it.
            if super::seen::was_placed(&self.ctx.placed, &row) {
                continue;
            }
            if let Some(q) = self.placing_query(chain, client, &row) {
                queries.push(q);
                swept.push(row);
            }
        }
        if let Some(pb) = &self.ctx.progress {
            pb.inc(swept.len() as u64);
        }
        let lookups = client.lookup(head, &queries).await?;
        // Keys held by this page's rows: a re-key never takes one of them.
        let mut taken: HashSet<PaymentKey> = swept.iter().filter_map(|r| r.key.clone()).collect();
        let mut view = LedgerView {
            policy: self.engine.amounts.clone(),
            ..LedgerView::default()
        };
        let mut observations = Vec::new();
        let mut reorged = Vec::new();
        let mut unrecorded_blocks = Vec::new();
        for (row, lookup) in swept.into_iter().zip(lookups) {
            let key = row.key.clone().expect("swept rows have keys");
            let placement = place(&row, &receipt(lookup), &taken);
            let transfer = match placement {
                Placement::Same(t) => t,
                Placement::Unrecorded(t) => {
                    unrecorded_blocks.push(reorg::unrecorded(&row, &t));
                    t
                }
                Placement::Gone(why) => {
                    *self.open.entry(chain.to_string()).or_default() += 1;
                    reorged.push(gone(chain, &row, &key, why));
                    continue;
                }
                Placement::Moved { from, to } => {
                    taken.insert(to.key.clone());
                    let done = self.rekey(chain, &row, &from, &to).await?;
                    if done.open {
                        *self.open.entry(chain.to_string()).or_default() += 1;
                    }
                    reorged.push(done.finding);
                    // Re-keyed (or would be): the normal rules advance it in this run, forward
                    // only; a new position with fewer confirmations is not a refusal.
                    match done.row {
                        Some(row) if to.state > row.state => {
                            observations.push(observe(chain, &to));
                            view.insert_keyed(row);
                        }
                        _ => {}
                    }
                    continue;
                }
            };
            observations.push(observe(chain, &transfer));
            view.insert_keyed(row);
        }
        self.record_blocks(unrecorded_blocks).await?;
        self.settle(&observations, &view, reorged).await
    }

    /// The receipt query that places a keyed row (or a held payment) on chain, counted as
    /// checked: every transfer of its asset in the receipt, since after a reorg the same
    /// payment may sit at another log index. `None` for a row without a key, or whose
    /// transaction id this chain's kind does not spell (logged).
    fn placing_query(
        &mut self,
        chain: &str,
        client: &crate::chain::ChainClient,
        row: &LedgerRow,
    ) -> Option<TransferQuery> {
        let key = row.key.as_ref()?;
        if !client.settings().kind.owns_tx_hash(&key.tx_hash) {
            tracing::warn!(chain, order_ref = %row.order_ref, tx_hash = %key.tx_hash,
                "Ledger row's transaction id is not spelled as this chain's kind spells it; not swept.");
            return None;
        }
        self.engine
            .mark_checked(&mut self.acc, chain, fingerprint(key));
        Some(TransferQuery {
            tx_hash: key.tx_hash.clone(),
            asset: Some(row.asset.clone()),
            to: None,
            log_index: None,
        })
    }

    /// Settles what the sweep (or the scan) observed, like any batch.
    async fn settle(
        &mut self,
        observations: &[Observation],
        view: &LedgerView,
        findings: Vec<Finding>,
    ) -> Result<(), PartError> {
        let seen = BatchInput {
            observations,
            claims: &[],
        };
        self.engine
            .settle(self.ctx, &mut self.acc, None, seen, view, findings)
            .await
            .map_err(PartError::from)
    }
}

/// The run's fingerprint of a payment key (for distinct `checked` counts).
fn fingerprint(key: &PaymentKey) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    key.hash(&mut h);
    h.finish()
}

fn receipt(lookup: Lookup) -> Receipt {
    match lookup {
        Lookup::Found(ts) if !ts.is_empty() => Receipt::Transfers(ts),
        Lookup::Found(_) => Receipt::Gone("the payment's log is no longer in the receipt".into()),
        Lookup::NotFound => Receipt::Gone(
            "the chain no longer has a receipt for this transaction (dropped by a reorg, or \
             replaced by another transaction with the same nonce)"
                .into(),
        ),
        Lookup::Reverted => {
            Receipt::Gone("the transaction now reverts on the canonical chain".into())
        }
        Lookup::NoTransfer(why) => {
            Receipt::Gone(format!("the payment is no longer in the receipt: {why}"))
        }
    }
}

fn observe(chain: &str, t: &crate::domain::ChainTransfer) -> Observation {
    observe_as(Part::Sweep.name(), chain, t)
}

/// A transfer found on chain as an observation of the part `provider` (the sweep, the
/// balance check).
pub(super) fn observe_as(
    provider: &str,
    chain: &str,
    t: &crate::domain::ChainTransfer,
) -> Observation {
    Observation {
        provider: provider.into(),
        chain: chain.to_string(),
        tx_hash: t.key.tx_hash.clone(),
        notification_id: None,
        failed: false,
        order_ref: None,
        infer_failed: false,
        record_time: None,
        verdict: ChainVerdict::Transfer(t.clone()),
    }
}

fn gone(chain: &str, row: &LedgerRow, key: &PaymentKey, why: String) -> Finding {
    let detail = format!("{why}; the state is kept until an operator acts");
    reorged(chain, row, key, None, Outcome::Nothing, detail)
}

/// The sweep's `reorged` finding of a ledger row at `key` (gone, or re-keyed).
fn reorged(
    chain: &str,
    row: &LedgerRow,
    key: &PaymentKey,
    observed_state: Option<crate::domain::State>,
    outcome: Outcome,
    detail: String,
) -> Finding {
    Finding {
        provider: Part::Sweep.name().into(),
        kind: GapKind::Reorged,
        chain: chain.to_string(),
        tx_hash: Some(key.tx_hash.to_string()),
        log_index: Some(key.log_index),
        order_ref: Some(row.order_ref.clone()),
        local_state: Some(row.state),
        observed_state,
        outcome,
        detail,
        amount: None,
        asset: Some(row.asset.clone()),
    }
}
