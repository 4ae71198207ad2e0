//! One provider's part of a run: its lists, page by page (fetched ahead on a task, bounded
//! channel), in batches through chain resolution, ledger lookup and settle.

use std::collections::HashSet;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use futures::StreamExt;
use tokio::sync::mpsc;

use super::batch::{BatchAcc, Resender};
use super::{Engine, Provider, ProviderEntry, RunCtx};
use crate::chain::{ChainClient, Lookup, TransferQuery};
use crate::domain::{pick_transfer, ChainHead, ChainVerdict, Observation, PaymentKey, TxHash};
use crate::providers::{ListKind, Page, ProviderError, ProviderRecord};

impl Engine {
    pub(crate) async fn run_provider(&self, ctx: &RunCtx, e: &ProviderEntry) -> BatchAcc {
        let mut acc = BatchAcc::new(e.provider.name(), e.provider.kind());
        for chain in &e.chains {
            if let Err(err) = self.run_provider_chain(ctx, e, chain, &mut acc).await {
                acc.fail(self.redact(&err));
            }
        }
        acc
    }

    async fn run_provider_chain(
        &self,
        ctx: &RunCtx,
        e: &ProviderEntry,
        chain: &str,
        acc: &mut BatchAcc,
    ) -> Result<(), String> {
        let head = match ctx.heads.get(chain) {
            Some(Ok(h)) => *h,
            Some(Err(err)) => return Err(err.clone()),
            None => return Err(format!("chain {chain} is not configured")),
        };
        let client = self
            .chains
            .get(chain)
            .ok_or_else(|| format!("chain {chain} is not configured"))?;
        // Failed notifications first: they are few, and their resends should not wait.
        for list in [ListKind::Failed, ListKind::All] {
            let batch_size = self.settings.batch_size;
            let mut pages = spawn_pages(e.provider.clone(), chain.to_string(), list, batch_size);
            let mut pending: Vec<ProviderRecord> = Vec::new();
            // Batch k's ledger lookup and settle run while batch k+1 is resolved on chain
            // (resolution reads only the chain), and the page task keeps fetching meanwhile.
            let mut resolved: Option<Resolved> = None;
            let mut done = false;
            while !done {
                match pages.recv().await {
                    Some(page) => {
                        let page = page.map_err(|err| err.to_string());
                        let page = match page {
                            Ok(p) => p,
                            Err(err) => {
                                if let Some(r) = resolved.take() {
                                    self.settle_resolved(ctx, acc, &e.provider, r).await?;
                                }
                                return Err(err);
                            }
                        };
                        self.take_page(ctx, acc, page, list, &mut pending);
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
                                Some(r) => self.settle_resolved(ctx, acc, &e.provider, r).await,
                                None => Ok(()),
                            }
                        },
                        resolve(client, &head, batch)
                    );
                    settled?;
                    resolved = Some(next?);
                }
            }
            if let Some(r) = resolved.take() {
                self.settle_resolved(ctx, acc, &e.provider, r).await?;
            }
        }
        Ok(())
    }

    fn take_page(
        &self,
        ctx: &RunCtx,
        acc: &mut BatchAcc,
        page: Page,
        list: ListKind,
        out: &mut Vec<ProviderRecord>,
    ) {
        // The provider client has logged each rejection with its id and reason.
        if !page.rejected.is_empty() {
            self.count_rejected(acc, page.rejected.len() as u64);
        }
        for r in page.records {
            if r.tx_hash.is_none() {
                // Status-only records (matched by order_ref) are settled by the claims path.
                continue;
            }
            if list == ListKind::All && (r.created_at < ctx.since || r.created_at > ctx.until) {
                continue;
            }
            if self.mark_checked(acc, &r.chain, fingerprint(&r)) {
                out.push(r);
            }
        }
    }

    /// One batched ledger lookup (plus one for ambiguous receipts), then settle.
    async fn settle_resolved(
        &self,
        ctx: &RunCtx,
        acc: &mut BatchAcc,
        provider: &Provider,
        resolved: Resolved,
    ) -> Result<(), String> {
        let Resolved { records, lookups } = resolved;
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
            self.store
                .attached_keys(&ambiguous)
                .await
                .map_err(|e| e.to_string())?
        };
        let mut observations = Vec::with_capacity(records.len());
        let mut keys = Vec::new();
        let mut slots = Vec::new();
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
            observations.push(Observation {
                provider: acc.report.provider.clone(),
                chain: r.chain.clone(),
                tx_hash,
                notification_id: Some(r.id.clone()),
                failed: r.failed,
                verdict,
            });
        }
        slots.sort();
        slots.dedup();
        let mut view = self
            .store
            .load_view(&keys, &slots)
            .await
            .map_err(|e| e.to_string())?;
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
            let held = self
                .store
                .rows_by_tx(&lost)
                .await
                .map_err(|e| e.to_string())?;
            held.into_iter().for_each(|r| view.insert_keyed(r));
        }
        self.settle(
            ctx,
            acc,
            Some(Resender { provider }),
            &observations,
            &view,
            Vec::new(),
        )
        .await
        .map_err(|e| e.to_string())
    }
}

/// A batch of records and the chain's answer for each, in order.
struct Resolved {
    records: Vec<ProviderRecord>,
    lookups: Vec<Lookup>,
}

/// Chain resolution of a batch: receipts in JSON-RPC batches; no ledger access.
async fn resolve(
    client: &ChainClient,
    head: &ChainHead,
    records: Vec<ProviderRecord>,
) -> Result<Resolved, String> {
    // Only records that name a transaction reach resolution (take_page).
    let records: Vec<ProviderRecord> = records
        .into_iter()
        .filter(|r| r.tx_hash.is_some())
        .collect();
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
    let lookups = client
        .lookup(head, &queries)
        .await
        .map_err(|e| e.to_string())?;
    Ok(Resolved { records, lookups })
}

/// Identity of a record for "examined once per run": the list it came from does not matter.
fn fingerprint(r: &ProviderRecord) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (&r.chain, &r.tx_hash, &r.asset, &r.to).hash(&mut h);
    h.finish()
}

/// Reads a list's pages on their own task, so that pages keep being fetched while a batch is
/// resolved and applied, and hands them over merged into chunks of at least `chunk` records
/// (a page is never split). The channel holds one chunk while the task assembles the next:
/// memory is about three batches plus the pages in flight, whatever the page size. (Handing
/// over single pages through a 2-page channel stalled the fetch while a batch was settled.)
fn spawn_pages(
    provider: Arc<Provider>,
    chain: String,
    list: ListKind,
    chunk: usize,
) -> mpsc::Receiver<Result<Page, ProviderError>> {
    let (tx, rx) = mpsc::channel(1);
    tokio::spawn(async move {
        let mut pages = match &*provider {
            Provider::Chaingateway(c) => c.pages(&chain, list),
        };
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
    });
    rx
}
