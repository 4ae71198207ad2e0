//! EVM chain truth via alloy JSON-RPC: head, final block, receipts (batched), transfer decode.
//! Turns transaction hashes into `domain` transfers; knows nothing of providers or SQL.

mod decode;
mod scan;
pub use scan::MAX_FILTER_ADDRESSES;
mod preflight;
mod rpc;

use std::collections::HashMap;
use std::time::Duration;

use alloy::primitives::U64;
use futures::{StreamExt, TryStreamExt};
use serde::Deserialize;
use serde_json::json;
use serde_json::value::RawValue;

use crate::domain::{Address, Asset, ChainHead, ChainTransfer, TxHash};

/// One hash's receipt and, for native-coin queries, its transaction, as the node's JSON text.
type Fetched = (Box<RawValue>, Option<Box<RawValue>>);

pub use decode::TRANSFER_TOPIC;
pub use preflight::Preflight;
pub use rpc::shown_url;

/// Batch requests in flight at once per `lookup` call.
const BATCHES_IN_FLIGHT: usize = 4;

/// How a chain decides that a block is final (SPEC §3 `finality`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finality {
    /// `eth_getBlockByNumber("finalized")`.
    Finalized,
    /// `eth_getBlockByNumber("safe")`.
    Safe,
    /// head - final_depth + 1.
    Depth,
}

#[derive(Debug, Clone)]
pub struct ChainSettings {
    /// The chain's configured name (`ethereum`), used in payment keys.
    pub name: String,
    /// JSON-RPC endpoints, in priority order (at least one): requests go to the first until
    /// it fails, then fail over to the next (see `rpc.rs`).
    pub rpc_urls: Vec<String>,
    /// When set, `eth_chainId` of every URL must equal it (checked by `preflight`).
    pub chain_id: Option<u64>,
    /// When set, at most this many HTTP requests per second to this chain (all URLs
    /// together; a batch is one request).
    pub max_requests_per_second: Option<u32>,
    pub confirmations: u64,
    pub finality: Finality,
    pub final_depth: u64,
    /// JSON-RPC calls per batch request: a receipt each, plus the transaction for native
    /// coins (a transaction's calls are never split across batches). 0 counts as 1.
    pub batch_size: usize,
    pub timeout: Duration,
    /// Retries per request (after the first attempt) on connection errors, timeouts, HTTP 5xx
    /// and rate limits, with exponential backoff from 100 ms and jitter. With several URLs a
    /// request makes `max(max_retries + 1, URLs)` attempts in all.
    pub max_retries: u32,
    /// How long after it became final a payment is still checked by the sweep (catches a
    /// wrong finality setting). Zero: final rows are not rechecked.
    pub recheck_final: Duration,
    /// Each run also looks on chain for token payments to unpaid orders' deposit addresses
    /// (`eth_getLogs` over the run's window): payments no provider reported (see `scan.rs`).
    pub scan_unpaid: bool,
    /// Blocks per `eth_getLogs` request of that scan (many providers cap the range).
    pub log_range: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum ChainError {
    #[error("chain {chain}: {what}: {reason}")]
    Rpc {
        chain: String,
        what: &'static str,
        reason: String,
    },
    #[error("chain {chain}: the node does not know the {tag:?} block tag; set finality = \"depth\" (with final_depth) in [chains.{chain}]")]
    TagUnsupported { chain: String, tag: &'static str },
    #[error("chain {chain}: the node at {url} reports chain id {actual}, but chains.{chain}.chain_id = {expected}; refusing to run (is this URL for another network?)")]
    ChainIdMismatch {
        chain: String,
        expected: u64,
        actual: u64,
        /// Without credentials.
        url: String,
    },
    #[error("chain {chain}: the URLs disagree on the chain id ({ids}); refusing to run")]
    ChainIdsDisagree { chain: String, ids: String },
}

impl ChainError {
    /// A configuration problem (wrong network, missing tag) rather than an outage: a run or
    /// serve refuses to start on it.
    pub fn is_misconfiguration(&self) -> bool {
        !matches!(self, ChainError::Rpc { .. })
    }
}

/// What to look for in one transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransferQuery {
    pub tx_hash: TxHash,
    /// Native coin (tx.value, log index -1) or the token contract whose Transfer logs count;
    /// `None`: whatever the record's `log_index` holds (-1 native, else any token's Transfer).
    pub asset: Option<Asset>,
    /// Recipient the transfer must go to; `None` accepts any recipient.
    pub to: Option<Address>,
    /// Only the transfer at this block-level log index (-1 = native), e.g. for the sweep.
    pub log_index: Option<i64>,
}

/// The chain's answer for one query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// Every matching transfer in the receipt, ordered by log index (one for native coins).
    Found(Vec<ChainTransfer>),
    /// Receipt status 0.
    Reverted,
    /// No receipt (unknown, not yet mined, or reorganised away).
    NotFound,
    /// Receipt present, no matching payment; the reason says why (e.g. ERC-721 only).
    NoTransfer(String),
}

pub struct ChainClient {
    settings: ChainSettings,
    rpc: rpc::Rpc,
}

/// The one field of a block that payrecon reads.
#[derive(Debug, Deserialize)]
struct BlockNumber {
    number: U64,
}

impl ChainClient {
    /// Builds the HTTP JSON-RPC client; sends nothing yet.
    pub fn new(settings: ChainSettings) -> Result<ChainClient, ChainError> {
        let rpc = rpc::Rpc::new(&settings)?;
        Ok(ChainClient { settings, rpc })
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
fn plan_batches<'a>(
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

#[cfg(test)]
mod tests;
