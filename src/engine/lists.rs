//! One provider's part of a run: its lists, page by page (fetched ahead on a task, bounded
//! channel, read by the boundary search as docs/configuration.md, "Long notification lists",
//! says), in batches through `resolve.rs` and settle; what each list read did goes to the
//! report, the metric and `payrecon_list_reads`.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use futures::StreamExt;
use tokio::sync::mpsc;

use super::error::PartError;
use super::part::PartTally;
use super::resolve::Resolved;
use super::{Engine, ProviderEntry, RunCtx};
use crate::providers::Provider;
use crate::providers::{ListKind, Page, ProviderError, ProviderRecord};
use crate::providers::{ListPlan, ListStats, StatsCell};
use crate::store::ListRead;

impl Engine {
    pub(crate) async fn run_provider(
        &self,
        ctx: &RunCtx,
        e: &ProviderEntry,
        fence: Option<crate::store::Fence>,
    ) -> PartTally {
        let mut acc = PartTally::new(e.provider.name(), e.provider.kind());
        acc.shared.fence = fence;
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
            self.fail(acc, format!("recording what the run read of a list: {err}"));
        }
    }

    fn chain_ready(&self, ctx: &RunCtx, chain: &str) -> Result<(), PartError> {
        match ctx.heads.get(chain) {
            Some(Ok(_)) if self.chains.contains_key(chain) => Ok(()),
            Some(Err(err)) => Err(PartError::ChainDown {
                chain: chain.to_string(),
                reason: err.0.clone(),
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
}

/// A list's name in `payrecon_list_reads`.
fn list_name(list: ListKind) -> &'static str {
    match list {
        ListKind::All => "all",
        ListKind::Failed => "failed",
    }
}

/// Identity of a record for "examined once per run": the list it came from does not matter.
/// Without a log index the amount is part of it: two outputs of one Bitcoin transaction to
/// one address (or two Transfer logs to one address) are two payments (docs/configuration.md,
/// "Bitcoin").
fn fingerprint(r: &ProviderRecord) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (&r.chain, &r.tx_hash, &r.log_index, &r.asset, &r.to).hash(&mut h);
    if r.log_index.is_none() {
        r.amount_hint.hash(&mut h);
    }
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
