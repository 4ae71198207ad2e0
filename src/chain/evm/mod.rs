//! An EVM chain through alloy JSON-RPC: head, final block, receipts in batches, and the
//! transfers they hold (`decode.rs`), the deposit scan (`scan.rs`), the start check
//! (`preflight.rs`), over the failover transport (`rpc.rs`).

pub(super) mod balance;
mod check;
pub(super) mod decode;
pub(super) mod scan;

use std::collections::HashMap;

use alloy::primitives::U64;
use futures::{StreamExt, TryStreamExt};
use serde::Deserialize;
use serde_json::json;
use serde_json::value::RawValue;

use super::{rpc, ChainError, ChainSettings, Finality, Lookup, TransferQuery};
use crate::domain::{Asset, ChainHead, TxHash};

/// One hash's receipt and, for native-coin queries, its transaction, as the node's JSON text.
type Fetched = (Box<RawValue>, Option<Box<RawValue>>);

/// Batch requests in flight at once per `lookup` (and `block_times`) call.
pub(super) const BATCHES_IN_FLIGHT: usize = 4;

pub struct EvmClient {
    pub(super) settings: ChainSettings,
    pub(super) rpc: rpc::Rpc,
}

/// The one field of a block that payrecon reads.
#[derive(Debug, Deserialize)]
struct BlockNumber {
    number: U64,
}

impl EvmClient {
    /// Builds the HTTP JSON-RPC client; sends nothing yet.
    pub fn new(settings: ChainSettings) -> Result<EvmClient, ChainError> {
        let rpc = rpc::Rpc::new(&settings)?;
        Ok(EvmClient { settings, rpc })
    }

    pub fn settings(&self) -> &ChainSettings {
        &self.settings
    }

    /// How many times requests moved to another URL since this client was built.
    pub fn failovers(&self) -> u64 {
        self.rpc.failovers()
    }

    /// `eth_chainId`.
    #[tracing::instrument(skip_all, fields(chain = %self.settings.name))]
    pub async fn chain_id(&self) -> Result<u64, ChainError> {
        let id: U64 = self.rpc.call("eth_chainId", "eth_chainId", ()).await?;
        Ok(id.to())
    }

    /// Head number and the final block per the chain's finality mode, read once per run.
    #[tracing::instrument(skip_all, fields(chain = %self.settings.name))]
    pub async fn head(&self) -> Result<ChainHead, ChainError> {
        let number: U64 = self
            .rpc
            .call("eth_blockNumber", "eth_blockNumber", ())
            .await?;
        let number: u64 = number.to();
        let final_block = match self.settings.finality {
            Finality::Finalized => self.tagged_block("finalized").await?,
            Finality::Safe => self.tagged_block("safe").await?,
            Finality::Depth => number.saturating_sub(self.settings.final_depth.max(1) - 1),
        };
        Ok(ChainHead {
            number,
            final_block,
            confirmations: self.settings.confirmations,
        })
    }

    /// The number of the block a tag names; an error reply or `null` means the node does not
    /// know the tag.
    async fn tagged_block(&self, tag: &'static str) -> Result<u64, ChainError> {
        // The node's own error message (a `String`: whatever it says, the tag is unknown).
        let reply: Result<Option<BlockNumber>, String> = self
            .rpc
            .call_or_reply_error("eth_getBlockByNumber", "eth_getBlockByNumber", (tag, false))
            .await?;
        match reply {
            Ok(Some(block)) => Ok(block.number.to()),
            Ok(None) => Err(self.tag_unsupported(tag, "the node returned null")),
            Err(message) => Err(self.tag_unsupported(tag, &message)),
        }
    }

    fn tag_unsupported(&self, tag: &'static str, why: &str) -> ChainError {
        tracing::warn!(chain = %self.settings.name, tag, why, "The node does not serve the block tag.");
        ChainError::TagUnsupported {
            chain: self.settings.name.clone(),
            tag,
        }
    }

    /// Resolves queries against receipts (JSON-RPC batches of `batch_size`); one answer per
    /// query, in order. An RPC failure after retries fails the whole call.
    #[tracing::instrument(skip_all, fields(chain = %self.settings.name, queries = queries.len()))]
    pub async fn lookup(
        &self,
        head: &ChainHead,
        queries: &[TransferQuery],
    ) -> Result<Vec<Lookup>, ChainError> {
        let fetched = self.fetch(queries).await?;
        Ok(queries
            .iter()
            .map(|q| {
                let (receipt, tx) = fetched
                    .get(&q.tx_hash)
                    .map_or((None, None), |(r, t)| (Some(&**r), t.as_deref()));
                decode::resolve(&self.settings.name, head, q, receipt, tx)
            })
            .collect())
    }

    /// Receipts (and transactions for native queries) of each distinct hash, by hash; a hash
    /// the reply has no result for is absent (resolved as not found).
    async fn fetch(
        &self,
        queries: &[TransferQuery],
    ) -> Result<HashMap<TxHash, Fetched>, ChainError> {
        // Distinct hashes in first-seen order, each with whether it needs its transaction.
        let mut needs_tx: HashMap<&TxHash, bool> = HashMap::with_capacity(queries.len());
        let mut order = Vec::with_capacity(queries.len());
        for q in queries {
            let native =
                q.asset == Some(Asset::Native) || (q.asset.is_none() && q.log_index == Some(-1));
            match needs_tx.get_mut(&q.tx_hash) {
                Some(n) => *n |= native,
                None => {
                    needs_tx.insert(&q.tx_hash, native);
                    order.push(&q.tx_hash);
                }
            }
        }
        let batches: Vec<Vec<(TxHash, bool)>> =
            plan_batches(&order, |h| needs_tx[h], self.settings.batch_size.max(1))
                .into_iter()
                .map(|b| b.into_iter().map(|h| (h.clone(), needs_tx[h])).collect())
                .collect();
        // Owned batches: the stream's futures borrow nothing but `self` (keeps them Send).
        let results: Vec<_> = futures::stream::iter(batches)
            .map(|batch| self.fetch_batch(batch))
            .buffered(BATCHES_IN_FLIGHT)
            .try_collect()
            .await?;
        Ok(results.into_iter().flatten().collect())
    }

    async fn fetch_batch(
        &self,
        hashes: Vec<(TxHash, bool)>,
    ) -> Result<Vec<(TxHash, Fetched)>, ChainError> {
        let mut calls = Vec::with_capacity(hashes.len() * 2);
        for (h, needs_tx) in &hashes {
            calls.push(("eth_getTransactionReceipt", json!([h.as_str()])));
            if *needs_tx {
                calls.push(("eth_getTransactionByHash", json!([h.as_str()])));
            }
        }
        let mut values = self.rpc.batch("receipts", &calls).await?.into_iter();
        let mut out = Vec::with_capacity(hashes.len());
        for (h, needs_tx) in hashes {
            let Some(receipt) = values.next() else {
                break;
            };
            let tx = if needs_tx { values.next() } else { None };
            out.push((h, (receipt, tx)));
        }
        Ok(out)
    }
}

/// Splits hashes into batches of at most `size` calls (1 or 2 per hash), never splitting a
/// hash's calls, so a hash with 2 calls still goes alone when `size` is 1.
pub(super) fn plan_batches<'a>(
    hashes: &[&'a TxHash],
    needs_tx: impl Fn(&TxHash) -> bool,
    size: usize,
) -> Vec<Vec<&'a TxHash>> {
    let mut batches = Vec::new();
    let mut current = Vec::new();
    let mut calls = 0;
    for h in hashes {
        let n = if needs_tx(h) { 2 } else { 1 };
        if !current.is_empty() && calls + n > size {
            batches.push(std::mem::take(&mut current));
            calls = 0;
        }
        current.push(*h);
        calls += n;
    }
    if !current.is_empty() {
        batches.push(current);
    }
    batches
}
