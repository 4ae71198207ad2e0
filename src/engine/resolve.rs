//! A batch of provider records through chain resolution (receipts in JSON-RPC batches), one
//! batched ledger lookup and settle; webhook deliveries come the same way (`settle_records`).

use super::error::PartError;
use std::collections::{BTreeMap, HashSet};

use super::batch::BatchInput;
use super::part::PartTally;
use super::resend::Resender;
use super::{Engine, ProviderEntry, RunCtx};
use crate::chain::{ChainClient, Lookup, TransferQuery};
use crate::domain::{
    pick_transfer, ChainHead, ChainTransfer, ChainVerdict, Claim, LedgerView, Observation,
    PaymentKey, TxHash, U256,
};
use crate::providers::ProviderRecord;

impl Engine {
    /// Applies records outside a run (webhook deliveries): the same resolution, plan and
    /// conditional apply as a run, with `ctx.source` in the audit rows.
    pub(crate) async fn settle_records(
        &self,
        ctx: &RunCtx,
        acc: &mut PartTally,
        e: &ProviderEntry,
        records: Vec<ProviderRecord>,
    ) -> Result<(), PartError> {
        let resolved = self.resolve(ctx, e, records, false).await?;
        self.settle_resolved(ctx, acc, e, resolved).await
    }

    /// One batched ledger lookup (plus one for ambiguous receipts), then settle.
    pub(super) async fn settle_resolved(
        &self,
        ctx: &RunCtx,
        acc: &mut PartTally,
        e: &ProviderEntry,
        resolved: Resolved,
    ) -> Result<(), PartError> {
        let Resolved {
            records,
            lookups,
            claims,
            unresolved,
            infer,
        } = resolved;
        for err in unresolved {
            self.fail(acc, err);
        }
        let attached = self.ambiguous_attached(&lookups).await?;
        let observed = observe_records(
            &acc.report.provider,
            &records,
            lookups,
            &attached,
            &claims,
            infer,
        );
        let view = self.batch_view(&observed).await?;
        let resender = Resender {
            provider: &e.provider,
            retry_window: e.retry_window,
        };
        let seen = BatchInput {
            observations: &observed.observations,
            claims: &claims,
        };
        self.settle(ctx, acc, Some(resender), seen, &view, Vec::new())
            .await
            .map_err(PartError::from)
    }

    /// The keys a row already holds among the transfers of receipts with several candidates.
    async fn ambiguous_attached(
        &self,
        lookups: &[Lookup],
    ) -> Result<HashSet<PaymentKey>, PartError> {
        let ambiguous: Vec<PaymentKey> = lookups
            .iter()
            .filter_map(|l| match l {
                Lookup::Found(c) if c.len() > 1 => Some(c.iter().map(|t| t.key.clone())),
                _ => None,
            })
            .flatten()
            .collect();
        let attached = if ambiguous.is_empty() {
            HashSet::new()
        } else {
            self.store.attached_keys(&ambiguous).await?
        };
        Ok(attached)
    }

    /// The ledger rows a batch needs: by key, slot and order ref, and those holding lost txs.
    async fn batch_view(&self, observed: &Observed) -> Result<LedgerView, PartError> {
        let Observed {
            observations,
            keys,
            slots,
            refs,
        } = observed;
        let mut view = self.store.load_view(keys, slots).await?;
        view.policy = self.amounts.clone();
        if !refs.is_empty() {
            for row in self.store.orders_by_ref(refs).await? {
                view.by_ref.insert(row.order_ref.clone(), row);
            }
        }
        // Transactions the chain lost or that revert, and payments no row holds by key (a
        // reorg may have moved a held one to another log index): does a row hold the tx?
        let lost: Vec<(String, TxHash)> = observations
            .iter()
            .filter(|o| match &o.verdict {
                ChainVerdict::NotFound | ChainVerdict::Reverted => true,
                ChainVerdict::Transfer(t) => !view.by_key.contains_key(&t.key),
                ChainVerdict::NoTransfer(_) => false,
            })
            .map(|o| (o.chain.clone(), o.tx_hash.clone()))
            .collect();
        if !lost.is_empty() {
            let held = self.store.rows_by_tx(&lost).await?;
            held.into_iter().for_each(|r| view.insert_keyed(r));
        }
        Ok(view)
    }

    /// Chain resolution of a batch: receipts in JSON-RPC batches per chain; no ledger access.
    /// Records that name no transaction become claims (matched by `order_ref`); records on a
    /// chain whose head could not be read are left for the next run (and fail the provider).
    pub(super) async fn resolve(
        &self,
        ctx: &RunCtx,
        e: &ProviderEntry,
        batch: Vec<ProviderRecord>,
        infer: bool,
    ) -> Result<Resolved, PartError> {
        let mut out = Resolved {
            infer,
            ..Resolved::default()
        };
        let mut by_chain: BTreeMap<String, Vec<ProviderRecord>> = BTreeMap::new();
        for r in batch {
            if r.tx_hash.is_some() {
                by_chain.entry(r.chain.clone()).or_default().push(r);
                continue;
            }
            match (&r.order_ref, r.status) {
                (Some(order_ref), Some(state)) => out.claims.push(Claim {
                    provider: e.provider.name().to_string(),
                    chain: r.chain.clone(),
                    order_ref: order_ref.clone(),
                    state,
                    notification_id: Some(r.id.clone()),
                    failed: r.failed,
                    infer_failed: infer,
                    record_time: Some(r.created_at),
                }),
                _ => {
                    tracing::warn!(id = %r.id, "A record names neither a transaction nor an order with a status; skipped.")
                }
            }
        }
        for (chain, records) in by_chain {
            let (client, head) = match (self.chains.get(&chain), ctx.heads.get(&chain)) {
                (Some(c), Some(Ok(h))) => (c, *h),
                (_, Some(Err(err))) => {
                    out.unresolved.push(format!("chain {chain}: {err}"));
                    continue;
                }
                _ => {
                    out.unresolved
                        .push(format!("chain {chain} is not configured"));
                    continue;
                }
            };
            let lookups = self
                .lookup_unsettled(ctx, client, &head, &chain, &records)
                .await?;
            out.records.extend(records);
            out.lookups.extend(lookups);
        }
        Ok(out)
    }
}

/// A batch of records and the chain's answer for each, in order, plus its status-only claims.
#[derive(Default)]
pub(super) struct Resolved {
    records: Vec<ProviderRecord>,
    lookups: Vec<Lookup>,
    claims: Vec<Claim>,
    /// Chains that could not be read (their records wait for the next run).
    unresolved: Vec<String>,
    /// The records' notifications count as failed when they move the ledger (no failed list).
    infer: bool,
}

/// What a batch's records showed on chain, and what the ledger lookup needs for them.
#[derive(Default)]
struct Observed {
    /// One per record that names a transaction, in order.
    observations: Vec<Observation>,
    /// The keys of the transfers found.
    keys: Vec<PaymentKey>,
    /// The (chain, address, asset) slots of the transfers found, sorted and deduplicated.
    slots: Vec<(String, String, String)>,
    /// The order refs of the claims and records, sorted and deduplicated.
    refs: Vec<String>,
}

/// Each record that names a transaction as an observation of `provider`, and its ledger needs.
fn observe_records(
    provider: &str,
    records: &[ProviderRecord],
    lookups: Vec<Lookup>,
    attached: &HashSet<PaymentKey>,
    claims: &[Claim],
    infer: bool,
) -> Observed {
    let mut out = Observed {
        observations: Vec::with_capacity(records.len()),
        refs: claims.iter().map(|c| c.order_ref.clone()).collect(),
        ..Observed::default()
    };
    for (r, l) in records.iter().zip(lookups) {
        let Some(tx_hash) = r.tx_hash.clone() else {
            continue;
        };
        let verdict = chain_verdict(l, r.amount_hint, attached);
        if let ChainVerdict::Transfer(t) = &verdict {
            out.keys.push(t.key.clone());
            out.slots
                .push((t.key.chain.clone(), t.to.to_string(), t.asset.to_string()));
        }
        out.refs.extend(r.order_ref.clone());
        out.observations.push(Observation {
            provider: provider.to_string(),
            chain: r.chain.clone(),
            tx_hash,
            notification_id: Some(r.id.clone()),
            failed: r.failed,
            order_ref: r.order_ref.clone(),
            infer_failed: infer,
            record_time: Some(r.created_at),
            verdict,
        });
    }
    out.slots.sort();
    out.slots.dedup();
    out.refs.sort();
    out.refs.dedup();
    out
}

/// The chain's verdict on a record from its lookup (its transfer, when one matches).
fn chain_verdict(
    answer: Lookup,
    amount_hint: Option<U256>,
    attached: &HashSet<PaymentKey>,
) -> ChainVerdict {
    match answer {
        Lookup::Found(c) => match pick_transfer(&c, amount_hint, attached) {
            Some(t) => ChainVerdict::Transfer(t.clone()),
            None => ChainVerdict::NoTransfer("no matching transfer in the receipt".into()),
        },
        Lookup::Reverted => ChainVerdict::Reverted,
        Lookup::NotFound => ChainVerdict::NotFound,
        Lookup::NoTransfer(why) => ChainVerdict::NoTransfer(why),
    }
}

impl Engine {
    /// Each record's answer, in order: a payment the ledger holds as `final` since before the
    /// chain's `recheck_final` window is taken as recorded (a final payment is re-read only
    /// inside that window, by the sweep); the others' receipts in JSON-RPC batches. One
    /// ledger query per batch.
    async fn lookup_unsettled(
        &self,
        ctx: &RunCtx,
        client: &ChainClient,
        head: &ChainHead,
        chain: &str,
        records: &[ProviderRecord],
    ) -> Result<Vec<Lookup>, PartError> {
        let recheck = jiff::SignedDuration::try_from(client.settings().recheck_final)
            .unwrap_or(jiff::SignedDuration::MAX);
        let before = ctx
            .started
            .checked_sub(recheck)
            .unwrap_or(jiff::Timestamp::UNIX_EPOCH);
        let mut txs: Vec<&str> = records
            .iter()
            .filter_map(|r| Some(r.tx_hash.as_ref()?.as_str()))
            .collect();
        txs.sort_unstable();
        txs.dedup();
        let known = self.store.settled_payments(chain, &txs, before).await?;
        let settled: Vec<Option<ChainTransfer>> =
            records.iter().map(|r| settled_match(r, &known)).collect();
        let ask = records
            .iter()
            .zip(&settled)
            .filter(|(_, s)| s.is_none())
            .map(|(r, _)| r);
        let asked = lookup(client, head, ask).await?;
        // What the chain showed, where it showed it: the sweep need not read it again.
        {
            let mut set = ctx.placed.lock().unwrap_or_else(|e| e.into_inner());
            for l in &asked {
                if let Lookup::Found(ts) = l {
                    for t in ts {
                        set.insert(super::seen::placed_fingerprint(&t.key, &t.block.hash));
                    }
                }
            }
        }
        let mut asked = asked.into_iter();
        let mut out = Vec::with_capacity(records.len());
        for (r, s) in records.iter().zip(settled) {
            match s {
                Some(t) => out.push(Lookup::Found(vec![t])),
                None if r.tx_hash.is_some() => out.extend(asked.next()),
                None => {}
            }
        }
        Ok(out)
    }
}

/// The one settled payment `r` names (its transaction, and its log index, asset, address and
/// amount where the record gives them); `None` when none or several do.
fn settled_match(r: &ProviderRecord, known: &[ChainTransfer]) -> Option<ChainTransfer> {
    let tx = r.tx_hash.as_ref()?;
    let mut hits = known.iter().filter(|t| {
        t.key.tx_hash == *tx
            && r.log_index.is_none_or(|li| li == t.key.log_index)
            && r.asset.as_ref().is_none_or(|a| *a == t.asset)
            && r.to.as_ref().is_none_or(|to| *to == t.to)
            && r.amount_hint.is_none_or(|a| a == t.amount)
    });
    let hit = hits.next()?;
    hits.next().is_none().then(|| hit.clone())
}

async fn lookup<'a>(
    client: &ChainClient,
    head: &ChainHead,
    records: impl Iterator<Item = &'a ProviderRecord>,
) -> Result<Vec<Lookup>, PartError> {
    let queries: Vec<TransferQuery> = records
        .filter_map(|r| {
            Some(TransferQuery {
                tx_hash: r.tx_hash.clone()?,
                asset: r.asset.clone(),
                to: r.to.clone(),
                log_index: r.log_index,
            })
        })
        .collect();
    client.lookup(head, &queries).await.map_err(PartError::from)
}
