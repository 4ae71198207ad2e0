//! One provider's part of a run: its lists, page by page (fetched ahead on a task, bounded
//! channel), in batches through chain resolution, ledger lookup and settle.

use super::error::PartError;
use std::collections::{BTreeMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use futures::StreamExt;
use tokio::sync::mpsc;

use super::batch::{BatchInput, PartTally, Resender};
use super::{Engine, ProviderEntry, RunCtx};
use crate::chain::{ChainClient, Lookup, TransferQuery};
use crate::domain::{
    pick_transfer, ChainHead, ChainVerdict, Claim, Observation, PaymentKey, TxHash,
};
use crate::providers::chaingateway::{ListPlan, ListStats, StatsCell};
use crate::providers::Provider;
use crate::providers::{ListKind, Page, ProviderError, ProviderRecord};
use crate::store::ListRead;

impl Engine {
    pub(crate) async fn run_provider(
        &self,
        ctx: &RunCtx,
        e: &ProviderEntry,
        fence: Option<crate::store::Fence>,
    ) -> PartTally {
        let mut acc = PartTally::new(e.provider.name(), e.provider.kind());
        acc.fence = fence;
        let last_full = match self.store.last_full_reads(e.provider.name()).await {
            Ok(rows) => rows,
            Err(err) => {
                self.fail(&mut acc, err);
                return acc;
            }
        };
        // Failed notifications first: they are few, and their resends should not wait.
        for (chain, list) in e.provider.lists(&e.chains) {
            if let Some(chain) = &chain {
                // A Chaingateway list is per chain: a chain that cannot be read fails it.
                if let Err(err) = self.chain_ready(ctx, chain) {
                    self.fail(&mut acc, err);
                    continue;
                }
            }
            let chain_name = chain.clone().unwrap_or_default();
            let full_at = last_full
                .iter()
                .find(|(c, l, _)| *c == chain_name && l == list_name(list))
                .map(|(_, _, t)| *t);
            let plan = e.provider.list_plan(list, ctx.since, ctx.started, full_at);
            let stats = StatsCell::default();
            let pages = spawn_pages(
                e.provider.clone(),
                chain,
                list,
                (ctx.since, ctx.until),
                (plan, stats.clone()),
                self.settings.batch_size,
            );
            let result = self.run_list(ctx, e, list, pages, &mut acc).await;
            let stats = stats.lock().unwrap_or_else(|p| p.into_inner()).clone();
            self.count_list_read(ctx, &mut acc, &chain_name, list, &stats, result.is_ok())
                .await;
            if let Err(err) = result {
                self.fail(&mut acc, err);
            }
        }
        acc
    }

    /// A list read's pages in the report, its fallback in the metric, and (when the read
    /// completed and the run writes) its row in `payrecon_list_reads`.
    async fn count_list_read(
        &self,
        ctx: &RunCtx,
        acc: &mut PartTally,
        chain: &str,
        list: ListKind,
        stats: &ListStats,
        completed: bool,
    ) {
        acc.report.pages_read += stats.pages_read;
        acc.report.pages_total += stats.pages_total;
        if stats.fallback.is_some() {
            self.metrics
                .list_full_scans
                .get_or_create(&crate::metrics::ProviderL {
                    provider: acc.report.provider.clone(),
                })
                .inc();
        }
        if !completed || ctx.dry_run || stats.pages_read == 0 {
            return;
        }
        let read = ListRead {
            provider: &acc.report.provider,
            chain,
            list: list_name(list),
            pages_read: stats.pages_read,
            pages_total: stats.pages_total,
            at: ctx.started,
            whole: stats.whole,
        };
        if let Err(err) = self.store.record_list_read(&read).await {
            tracing::warn!(error = %self.redact(&err), "Could not record what the run read of a list.");
        }
    }

    fn chain_ready(&self, ctx: &RunCtx, chain: &str) -> Result<(), PartError> {
        match ctx.heads.get(chain) {
            Some(Ok(_)) if self.chains.contains_key(chain) => Ok(()),
            Some(Err(err)) => Err(PartError::ChainDown {
                chain: chain.to_string(),
                reason: err.clone(),
            }),
            _ => Err(PartError::NotConfigured(chain.to_string())),
        }
    }

    /// One list, page chunks in, batches through chain resolution and settle.
    async fn run_list(
        &self,
        ctx: &RunCtx,
        e: &ProviderEntry,
        list: ListKind,
        mut pages: mpsc::Receiver<Result<Page, ProviderError>>,
        acc: &mut PartTally,
    ) -> Result<(), PartError> {
        let batch_size = self.settings.batch_size;
        let mut pending: Vec<ProviderRecord> = Vec::new();
        // Batch k's ledger lookup and settle run while batch k+1 is resolved on chain
        // (resolution reads only the chain), and the page task keeps fetching meanwhile.
        let mut resolved: Option<Resolved> = None;
        let mut done = false;
        let infer = list == ListKind::All && e.provider.infers_failed();
        while !done {
            match pages.recv().await {
                Some(Ok(page)) => self.take_page(ctx, acc, page, list, &mut pending),
                Some(Err(err)) => {
                    if let Some(r) = resolved.take() {
                        self.settle_resolved(ctx, acc, e, r).await?;
                    }
                    return Err(err.into());
                }
                None => done = true,
            }
            while pending.len() >= batch_size || (done && !pending.is_empty()) {
                let rest = pending.split_off(batch_size.min(pending.len()));
                let batch = std::mem::replace(&mut pending, rest);
                if let Some(pb) = &ctx.progress {
                    pb.inc(batch.len() as u64);
                }
                let previous = resolved.take();
                let (settled, next) = futures::join!(
                    async {
                        match previous {
                            Some(r) => self.settle_resolved(ctx, acc, e, r).await,
                            None => Ok(()),
                        }
                    },
                    self.resolve(ctx, e, batch, infer)
                );
                settled?;
                resolved = Some(next?);
            }
        }
        if let Some(r) = resolved.take() {
            self.settle_resolved(ctx, acc, e, r).await?;
        }
        Ok(())
    }

    fn take_page(
        &self,
        ctx: &RunCtx,
        acc: &mut PartTally,
        page: Page,
        list: ListKind,
        out: &mut Vec<ProviderRecord>,
    ) {
        // The provider client has logged each rejection with its id and reason.
        if !page.rejected.is_empty() {
            self.count_rejected(acc, page.rejected.len() as u64);
        }
        for r in page.records {
            if list == ListKind::All && (r.created_at < ctx.since || r.created_at > ctx.until) {
                continue;
            }
            if self.mark_checked(acc, &r.chain, fingerprint(&r)) {
                out.push(r);
            }
        }
    }

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
    async fn settle_resolved(
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
        let mut observations = Vec::with_capacity(records.len());
        let mut keys = Vec::new();
        let mut slots = Vec::new();
        let mut refs: Vec<String> = claims.iter().map(|c| c.order_ref.clone()).collect();
        for (r, l) in records.iter().zip(lookups) {
            let Some(tx_hash) = r.tx_hash.clone() else {
                continue;
            };
            let verdict = match l {
                Lookup::Found(c) => match pick_transfer(&c, r.amount_hint, &attached) {
                    Some(t) => ChainVerdict::Transfer(t.clone()),
                    None => ChainVerdict::NoTransfer("no matching transfer in the receipt".into()),
                },
                Lookup::Reverted => ChainVerdict::Reverted,
                Lookup::NotFound => ChainVerdict::NotFound,
                Lookup::NoTransfer(why) => ChainVerdict::NoTransfer(why),
            };
            if let ChainVerdict::Transfer(t) = &verdict {
                keys.push(t.key.clone());
                slots.push((t.key.chain.clone(), t.to.to_string(), t.asset.to_string()));
            }
            refs.extend(r.order_ref.clone());
            observations.push(Observation {
                provider: acc.report.provider.clone(),
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
        slots.sort();
        slots.dedup();
        refs.sort();
        refs.dedup();
        let mut view = self.store.load_view(&keys, &slots).await?;
        if !refs.is_empty() {
            for row in self.store.orders_by_ref(&refs).await? {
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
        let resender = Resender {
            provider: &e.provider,
            retry_window: e.retry_window,
        };
        let seen = BatchInput {
            observations: &observations,
            claims: &claims,
        };
        self.settle(ctx, acc, Some(resender), seen, &view, Vec::new())
            .await
            .map_err(PartError::from)
    }

    /// Chain resolution of a batch: receipts in JSON-RPC batches per chain; no ledger access.
    /// Records that name no transaction become claims (matched by `order_ref`); records on a
    /// chain whose head could not be read are left for the next run (and fail the provider).
    async fn resolve(
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
            let lookups = lookup(client, &head, &records).await?;
            out.records.extend(records);
            out.lookups.extend(lookups);
        }
        Ok(out)
    }
}

/// A batch of records and the chain's answer for each, in order, plus its status-only claims.
#[derive(Default)]
struct Resolved {
    records: Vec<ProviderRecord>,
    lookups: Vec<Lookup>,
    claims: Vec<Claim>,
    /// Chains that could not be read (their records wait for the next run).
    unresolved: Vec<String>,
    /// The records' notifications count as failed when they move the ledger (no failed list).
    infer: bool,
}

async fn lookup(
    client: &ChainClient,
    head: &ChainHead,
    records: &[ProviderRecord],
) -> Result<Vec<Lookup>, PartError> {
    let queries: Vec<TransferQuery> = records
        .iter()
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

/// A list's name in `payrecon_list_reads`.
fn list_name(list: ListKind) -> &'static str {
    match list {
        ListKind::All => "all",
        ListKind::Failed => "failed",
    }
}

/// Identity of a record for "examined once per run": the list it came from does not matter.
fn fingerprint(r: &ProviderRecord) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (&r.chain, &r.tx_hash, &r.log_index, &r.asset, &r.to).hash(&mut h);
    if r.tx_hash.is_none() {
        (&r.order_ref, &r.id).hash(&mut h);
    }
    h.finish()
}

/// Reads a list's pages on their own task, so that pages keep being fetched while a batch is
/// resolved and applied, and hands them over merged into chunks of at least `chunk` records
/// (a page is never split). The channel holds one chunk while the task assembles the next:
/// memory is about three batches plus the pages in flight, whatever the page size. (Handing
/// over single pages through a 2-page channel stalled the fetch while a batch was settled.)
fn spawn_pages(
    provider: Arc<Provider>,
    chain: Option<String>,
    list: ListKind,
    window: (jiff::Timestamp, jiff::Timestamp),
    (plan, stats): (ListPlan, StatsCell),
    chunk: usize,
) -> mpsc::Receiver<Result<Page, ProviderError>> {
    let (tx, rx) = mpsc::channel(1);
    // The fetch logs in the provider's span.
    tokio::spawn(tracing::Instrument::in_current_span(async move {
        let mut pages = provider.pages(chain.as_deref(), list, window, plan, stats);
        let mut merged = Page::default();
        let size = |p: &Page| p.records.len() + p.rejected.len();
        while let Some(p) = pages.next().await {
            match p {
                Ok(page) => {
                    merged.records.extend(page.records);
                    merged.rejected.extend(page.rejected);
                    if size(&merged) >= chunk.max(1)
                        && tx.send(Ok(std::mem::take(&mut merged))).await.is_err()
                    {
                        return;
                    }
                }
                Err(e) => {
                    // What was read before the failure is still reconciled.
                    if size(&merged) > 0 && tx.send(Ok(merged)).await.is_err() {
                        return;
                    }
                    let _ = tx.send(Err(e)).await;
                    return;
                }
            }
        }
        if size(&merged) > 0 {
            let _ = tx.send(Ok(merged)).await;
        }
    }));
    rx
}
