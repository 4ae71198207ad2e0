//! What the balance check (docs/operations.md, "Balances") asks of a chain, the same for every
//! kind: for each deposit address and asset, its balance at the final block and every transfer
//! in or out of it since its last check (the first time: since its oldest order, its opening
//! balance derived or read). How a chain answers is its own (`<kind>/check.rs`); what the
//! answers mean (payments, sweeps, outflows, mismatches) is the engine's.

use std::future::Future;

use futures::{StreamExt, TryStreamExt};

use super::{ChainClient, ChainError};
use crate::domain::{Address, Asset, ChainHead, Flow, U256};

/// One deposit address and asset to read.
#[derive(Debug, Clone)]
pub struct BalanceQuery {
    pub address: Address,
    pub asset: Asset,
    pub since: Since,
}

/// Where a read starts.
#[derive(Debug, Clone, Copy)]
pub enum Since {
    /// Its last check ended at `block`, where it held `balance`: read the blocks above.
    Checked { block: u64, balance: U256 },
    /// Never checked: read from the first block at or after this time (its oldest order's).
    Time(jiff::Timestamp),
}

/// What the chain says of one address and asset up to the final block `F`.
#[derive(Debug, Clone)]
pub struct BalanceRead {
    pub address: Address,
    pub asset: Asset,
    /// The block the read started after, and the balance there: the last check's, or the
    /// opening of an address read for the first time.
    pub lo: u64,
    pub lo_balance: U256,
    /// The balance at `F`.
    pub at_final: U256,
    /// Every transfer in or out of the address in `(lo, F]`, fees included.
    pub flows: Vec<Flow>,
}

impl BalanceQuery {
    /// The block and balance a query checked before starts from (`None`: never checked).
    pub(super) fn checked(&self) -> Option<(u64, U256)> {
        match self.since {
            Since::Checked { block, balance } => Some((block, balance)),
            Since::Time(_) => None,
        }
    }
}

impl ChainClient {
    /// Reads `queries` up to `head`'s final block, one answer per query that has blocks to
    /// read (one checked at the final block already, or whose oldest order is newer than it,
    /// waits: no answer). A read that fails, or whose reads do not add up, fails the call.
    pub async fn read_balances(
        &self,
        head: &ChainHead,
        queries: &[BalanceQuery],
    ) -> Result<Vec<BalanceRead>, ChainError> {
        let f = head.final_block;
        let queries: Vec<&BalanceQuery> = queries
            .iter()
            .filter(|q| q.checked().is_none_or(|(block, _)| block < f))
            .collect();
        if queries.is_empty() {
            return Ok(Vec::new());
        }
        match self {
            ChainClient::Evm(c) => c.read_balances(head, &queries).await,
            ChainClient::Tron(c) => c.read_balances(head, &queries).await,
            ChainClient::Bitcoin(c) => c.read_balances(head, &queries).await,
            ChainClient::Solana(c) => c.read_balances(head, &queries).await,
        }
    }
}

/// Addresses read at once where a chain answers per address (Bitcoin, Solana).
const PER_ADDRESS_IN_FLIGHT: usize = 4;

/// `read` of each query, `PER_ADDRESS_IN_FLIGHT` at once, answers in the queries' order.
pub(super) async fn per_address<F, Fut>(
    queries: &[&BalanceQuery],
    read: F,
) -> Result<Vec<BalanceRead>, ChainError>
where
    F: FnMut(BalanceQuery) -> Fut,
    Fut: Future<Output = Result<BalanceRead, ChainError>>,
{
    // Owned queries: a stream over borrowed ones makes the future not `Send` for every
    // lifetime, which `serve`'s spawned schedule needs.
    let owned: Vec<BalanceQuery> = queries.iter().map(|q| (*q).clone()).collect();
    futures::stream::iter(owned)
        .map(read)
        .buffered(PER_ADDRESS_IN_FLIGHT)
        .try_collect()
        .await
}
