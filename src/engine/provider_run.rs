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
            let mut pages = spawn_pages(e.provider.clone(), chain.to_string(), list, 2);
            let mut pending: Vec<ProviderRecord> = Vec::new();
            while let Some(page) = pages.recv().await {
                let page = page.map_err(|err| err.to_string())?;
                self.take_page(ctx, acc, page, list, &mut pending);
                while pending.len() >= self.settings.batch_size {
                    let rest = pending.split_off(self.settings.batch_size);
                    let batch = std::mem::replace(&mut pending, rest);
                    self.process_records(ctx, acc, &e.provider, client, &head, batch)
                        .await?;
                }
            }
            if !pending.is_empty() {
                self.process_records(ctx, acc, &e.provider, client, &head, pending)
                    .await?;
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
            if list == ListKind::All && (r.created_at < ctx.since || r.created_at > ctx.until) {
                continue;
            }
            if self.mark_checked(acc, &r.chain, fingerprint(&r)) {
                out.push(r);
            }
        }
    }

    /// Chain resolution, one batched ledger lookup, settle.
    async fn process_records(
        &self,
        ctx: &RunCtx,
        acc: &mut BatchAcc,
        provider: &Provider,
        client: &ChainClient,
        head: &ChainHead,
        records: Vec<ProviderRecord>,
    ) -> Result<(), String> {
        if let Some(pb) = &ctx.progress {
            pb.inc(records.len() as u64);
        }
        let queries: Vec<TransferQuery> = records
            .iter()
            .map(|r| TransferQuery {
                tx_hash: r.tx_hash.clone(),
                asset: r.asset.clone(),
                to: Some(r.to.clone()),
                log_index: None,
            })
            .collect();
        let lookups = client
            .lookup(head, &queries)
            .await
            .map_err(|e| e.to_string())?;
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
                tx_hash: r.tx_hash.clone(),
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
        // Transactions the chain lost or that revert: does the ledger hold a payment of one?
        let lost: Vec<(String, TxHash)> = observations
            .iter()
            .filter(|o| matches!(o.verdict, ChainVerdict::NotFound | ChainVerdict::Reverted))
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

/// Identity of a record for "examined once per run": the list it came from does not matter.
fn fingerprint(r: &ProviderRecord) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (&r.chain, &r.tx_hash, &r.asset, &r.to).hash(&mut h);
    h.finish()
}

/// Reads a list's pages on their own task so that the next pages are in flight while this
/// batch is resolved and applied; the channel bounds how far ahead it reads.
fn spawn_pages(
    provider: Arc<Provider>,
    chain: String,
    list: ListKind,
    ahead: usize,
) -> mpsc::Receiver<Result<Page, ProviderError>> {
    let (tx, rx) = mpsc::channel(ahead.max(1));
    tokio::spawn(async move {
        let mut pages = match &*provider {
            Provider::Chaingateway(c) => c.pages(&chain, list),
        };
        while let Some(p) = pages.next().await {
            let stop = p.is_err();
            if tx.send(p).await.is_err() || stop {
                break;
            }
        }
    });
    rx
}
