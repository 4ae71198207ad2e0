//! Chain truth: head, final block, receipts (batched), transfer decode, by chain kind behind
//! one interface (`ChainClient`), each kind in its own folder: EVM chains through alloy
//! JSON-RPC (`evm/`), Tron through java-tron's Ethereum-compatible JSON-RPC plus its HTTP API
//! (`tron/`), Bitcoin through Esplora (`bitcoin/`), Solana (`solana/`); the transports they
//! share beside them (`rpc.rs`, `rest.rs`). Turns transaction ids into `domain` transfers;
//! knows nothing of providers or SQL.

mod bitcoin;
pub mod check;
mod evm;
pub use evm::scan::MAX_FILTER_ADDRESSES;
mod preflight;
mod rest;
mod rpc;
mod solana;
mod tron;

use std::time::Duration;

use crate::domain::{Address, Asset, ChainHead, ChainKind, ChainTransfer, TxHash, U256};

pub use bitcoin::BitcoinClient;
pub use evm::decode::TRANSFER_TOPIC;
pub use evm::EvmClient;
pub use preflight::Preflight;
pub use rpc::shown_url;
pub use solana::scan::ScanCursors;
pub use solana::tx::Moves;
pub use solana::SolanaClient;
pub use tron::TronClient;

/// How a chain decides that a block is final (docs/reference.md §2, `finality`).
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
    /// `evm` or `tron` (docs/configuration.md, "Tron"): which client reads it, how its ids are
    /// spelled.
    pub kind: ChainKind,
    /// Tron: java-tron's HTTP API base URL (TRX transfers), with `api_key` as
    /// `TRON-PRO-API-KEY` on it and on the JSON-RPC.
    pub api_url: Option<String>,
    pub api_key: Option<crate::secret::Secret>,
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
    /// Each run also looks on chain for payments to unpaid orders' deposit addresses over the
    /// run's window, payments no provider reported: token `Transfer` logs (`eth_getLogs`,
    /// see `evm/scan.rs`) on EVM and Tron, every output by address history on Bitcoin.
    pub scan_unpaid: bool,
    /// Blocks per `eth_getLogs` request of that scan (many providers cap the range).
    pub log_range: u64,
    /// The largest amount (base units) the ledger keeps (`Store::max_amount`; set by the app
    /// from its store, never from the config). A transfer over it is not answered as a payment:
    /// a lookup says why (`NoTransfer`), a scan leaves it out with a warning.
    pub max_amount: Option<U256>,
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

/// A chain client, by kind: the one place a chain's kind is matched. The engine asks it for
/// the head and final block, to resolve transfers, and to scan deposit addresses.
#[allow(clippy::large_enum_variant)] // one per configured chain, never in a hot path
pub enum ChainClient {
    Evm(EvmClient),
    Tron(TronClient),
    Bitcoin(BitcoinClient),
    Solana(SolanaClient),
}

impl ChainClient {
    /// The client for `settings.kind`; sends nothing yet.
    pub fn new(settings: ChainSettings) -> Result<ChainClient, ChainError> {
        Ok(match settings.kind {
            ChainKind::Evm => ChainClient::Evm(EvmClient::new(settings)?),
            ChainKind::Tron => ChainClient::Tron(TronClient::new(settings)?),
            ChainKind::Bitcoin(_) => ChainClient::Bitcoin(BitcoinClient::new(settings)?),
            ChainKind::Solana => ChainClient::Solana(SolanaClient::new(settings)?),
        })
    }

    pub fn settings(&self) -> &ChainSettings {
        match self {
            ChainClient::Evm(c) => c.settings(),
            ChainClient::Tron(c) => c.settings(),
            ChainClient::Bitcoin(c) => c.settings(),
            ChainClient::Solana(c) => c.settings(),
        }
    }

    /// How many times requests moved to another URL since this client was built.
    pub fn failovers(&self) -> u64 {
        match self {
            ChainClient::Evm(c) => c.failovers(),
            ChainClient::Tron(c) => c.failovers(),
            ChainClient::Solana(c) => c.failovers(),
            ChainClient::Bitcoin(_) => 0,
        }
    }

    /// The node's chain id (`eth_chainId`); Bitcoin and Solana have none (an error).
    pub async fn chain_id(&self) -> Result<u64, ChainError> {
        match self {
            ChainClient::Evm(c) => c.chain_id().await,
            ChainClient::Tron(c) => c.chain_id().await,
            ChainClient::Bitcoin(_) | ChainClient::Solana(_) => Err(ChainError::Rpc {
                chain: self.settings().name.clone(),
                what: "chain id",
                reason: format!("{} has no chain id", self.settings().kind.as_str()),
            }),
        }
    }

    /// Head number and the final block per the chain's finality mode, read once per run.
    pub async fn head(&self) -> Result<ChainHead, ChainError> {
        match self {
            ChainClient::Evm(c) => c.head().await,
            ChainClient::Tron(c) => c.head().await,
            ChainClient::Bitcoin(c) => c.head().await,
            ChainClient::Solana(c) => c.head().await,
        }
    }

    /// The start-of-run check: chain id of every URL, head, finality tag.
    pub async fn preflight(&self) -> Result<Preflight, ChainError> {
        match self {
            ChainClient::Evm(c) => c.preflight().await,
            ChainClient::Tron(c) => c.preflight().await,
            ChainClient::Bitcoin(c) => c.preflight().await,
            ChainClient::Solana(c) => c.preflight().await,
        }
    }

    /// Resolves queries (one answer per query, in order); an RPC failure after retries
    /// fails the whole call. Queries and answers are in the chain kind's canonical forms.
    pub async fn lookup(
        &self,
        head: &ChainHead,
        queries: &[TransferQuery],
    ) -> Result<Vec<Lookup>, ChainError> {
        let found = match self {
            ChainClient::Evm(c) => c.lookup(head, queries).await,
            ChainClient::Tron(c) => c.lookup(head, queries).await,
            ChainClient::Bitcoin(c) => c.lookup(head, queries).await,
            ChainClient::Solana(c) => c.lookup(head, queries).await,
        }?;
        let Some(max) = self.settings().max_amount else {
            return Ok(found);
        };
        Ok(found.into_iter().map(|l| within(l, max)).collect())
    }

    /// The first block whose timestamp is at or after `since`; `head + 1` when none is.
    pub async fn first_block_since(
        &self,
        since: jiff::Timestamp,
        head: u64,
    ) -> Result<u64, ChainError> {
        match self {
            ChainClient::Evm(c) => c.first_block_since(since, head).await,
            ChainClient::Tron(c) => c.evm().first_block_since(since, head).await,
            // Bitcoin's and Solana's scans are by address and block time (`payments_to`).
            ChainClient::Bitcoin(_) | ChainClient::Solana(_) => Ok(head + 1),
        }
    }

    /// The time of each of `blocks` (docs/configuration.md, "Amounts": late payments are judged
    /// by block time). Bitcoin transfers carry theirs already: none to read.
    pub async fn block_times(
        &self,
        blocks: &[u64],
    ) -> Result<std::collections::HashMap<u64, jiff::Timestamp>, ChainError> {
        match self {
            ChainClient::Evm(c) => c.block_times(blocks).await,
            ChainClient::Tron(c) => c.evm().block_times(blocks).await,
            ChainClient::Bitcoin(_) => Ok(std::collections::HashMap::new()),
            ChainClient::Solana(c) => c.block_times(blocks).await,
        }
    }

    /// Whether the deposit scan reads this chain by address (every payment to an address,
    /// native included: Bitcoin, Solana) rather than by token logs (EVM, Tron).
    pub fn scans_by_address(&self) -> bool {
        matches!(self, ChainClient::Bitcoin(_) | ChainClient::Solana(_))
    }

    /// The deposit scan by address (Bitcoin, Solana): payments to any of `recipients` in
    /// blocks at or after `since` by block time, up to the head; on Solana, each account's
    /// listing also stops at its cursor in `cursors` and leaves its new one there. Empty where
    /// the chain scans by logs.
    pub async fn payments_to(
        &self,
        head: &ChainHead,
        recipients: &[Address],
        since: jiff::Timestamp,
        cursors: &mut ScanCursors,
    ) -> Result<Vec<ChainTransfer>, ChainError> {
        let found = match self {
            ChainClient::Bitcoin(c) => c.payments_to(head, recipients, since).await,
            ChainClient::Solana(c) => c.payments_to(head, recipients, since, cursors).await,
            ChainClient::Evm(_) | ChainClient::Tron(_) => Ok(Vec::new()),
        }?;
        Ok(self.storable(found))
    }

    /// Whether orders on this chain may carry a payment reference (Solana Pay), which the
    /// deposit scan reads first (`payments_by_reference`), with its listing cursors.
    pub fn pays_by_reference(&self) -> bool {
        matches!(self, ChainClient::Solana(_))
    }

    /// Solana Pay references (docs/configuration.md, "Solana"): the payments to each
    /// `(reference, pay_to)`'s address in transactions carrying the reference, with it; cursors
    /// as `payments_to`. Empty on other chains.
    pub async fn payments_by_reference(
        &self,
        head: &ChainHead,
        references: &[(String, Address)],
        since: jiff::Timestamp,
        cursors: &mut ScanCursors,
    ) -> Result<Vec<(String, ChainTransfer)>, ChainError> {
        let ChainClient::Solana(c) = self else {
            return Ok(Vec::new());
        };
        let found = c
            .payments_by_reference(head, references, since, cursors)
            .await?;
        Ok(found.into_iter().filter(|(_, t)| self.fits(t)).collect())
    }

    /// Token transfers from any of `tokens` to any of `recipients` in blocks `from..=head`
    /// (the deposit scan).
    pub async fn transfers_to(
        &self,
        head: &ChainHead,
        tokens: &[Address],
        recipients: &[Address],
        from: u64,
    ) -> Result<Vec<ChainTransfer>, ChainError> {
        let found = match self {
            ChainClient::Evm(c) => c.transfers_to(head, tokens, recipients, from).await,
            ChainClient::Tron(c) => c.transfers_to(head, tokens, recipients, from).await,
            // Bitcoin has no tokens; its scan, and Solana's, is `payments_to`.
            ChainClient::Bitcoin(_) | ChainClient::Solana(_) => Ok(Vec::new()),
        }?;
        Ok(self.storable(found))
    }

    /// The scanned transfers the ledger can keep; each other one is logged and left out.
    fn storable(&self, mut found: Vec<ChainTransfer>) -> Vec<ChainTransfer> {
        found.retain(|t| self.fits(t));
        found
    }

    /// Whether the ledger can keep `t`'s amount; logs the one it cannot.
    fn fits(&self, t: &ChainTransfer) -> bool {
        let Some(max) = self.settings().max_amount else {
            return true;
        };
        let fits = t.amount <= max;
        if !fits {
            tracing::warn!(
                chain = %t.key.chain, tx_hash = %t.key.tx_hash, log_index = t.key.log_index,
                "A transfer of {} base units is more than the database keeps ({} digits at most): not credited.",
                t.amount, max.to_string().len()
            );
        }
        fits
    }
}

/// A lookup without the transfers over `max`; `NoTransfer`, saying why, when that leaves none.
fn within(lookup: Lookup, max: U256) -> Lookup {
    match lookup {
        Lookup::Found(ts) if ts.iter().any(|t| t.amount > max) => {
            let big = ts.iter().map(|t| t.amount).max().unwrap_or(max);
            let kept: Vec<ChainTransfer> = ts.into_iter().filter(|t| t.amount <= max).collect();
            if kept.is_empty() {
                Lookup::NoTransfer(format!(
                    "the transfer of {big} base units is more than the database keeps \
                     ({} digits at most): not credited",
                    max.to_string().len()
                ))
            } else {
                Lookup::Found(kept)
            }
        }
        other => other,
    }
}

#[cfg(test)]
mod tests;
