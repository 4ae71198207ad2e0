//! EVM chain truth via alloy JSON-RPC: head, final block, receipts (batched), transfer decode.
//! Turns transaction hashes into `domain` transfers; knows nothing of providers or SQL.

use std::time::Duration;

use crate::domain::{Address, Asset, ChainHead, ChainTransfer, TxHash};

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
    pub rpc_url: String,
    pub confirmations: u64,
    pub finality: Finality,
    pub final_depth: u64,
    /// Receipts per JSON-RPC batch request.
    pub batch_size: usize,
    pub timeout: Duration,
    /// Attempts per request on connection errors, timeouts and 5xx.
    pub max_retries: u32,
}

#[derive(Debug, thiserror::Error)]
pub enum ChainError {
    #[error("chain {chain}: {what}: {reason}")]
    Rpc {
        chain: String,
        what: &'static str,
        reason: String,
    },
    #[error("chain {chain}: node does not know the {tag:?} block tag; set finality = \"depth\" for this chain")]
    TagUnsupported { chain: String, tag: &'static str },
}

/// What to look for in one transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransferQuery {
    pub tx_hash: TxHash,
    /// Native coin (tx.value, log index -1) or the token contract whose Transfer logs count.
    pub asset: Asset,
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
}

impl ChainClient {
    pub fn new(settings: ChainSettings) -> Result<ChainClient, ChainError> {
        Ok(ChainClient { settings })
    }

    pub fn settings(&self) -> &ChainSettings {
        &self.settings
    }

    /// `eth_chainId`.
    pub async fn chain_id(&self) -> Result<u64, ChainError> {
        Err(self.unimplemented("eth_chainId"))
    }

    /// Head number and the final block per the chain's finality mode, read once per run.
    pub async fn head(&self) -> Result<ChainHead, ChainError> {
        Err(self.unimplemented("head"))
    }

    /// Resolves queries against receipts (JSON-RPC batches of `batch_size`); one answer per
    /// query, in order. An RPC failure after retries fails the whole call.
    pub async fn lookup(
        &self,
        head: &ChainHead,
        queries: &[TransferQuery],
    ) -> Result<Vec<Lookup>, ChainError> {
        let _ = (head, queries);
        Err(self.unimplemented("lookup"))
    }

    fn unimplemented(&self, what: &'static str) -> ChainError {
        ChainError::Rpc {
            chain: self.settings.name.clone(),
            what,
            reason: "not built yet".into(),
        }
    }
}
