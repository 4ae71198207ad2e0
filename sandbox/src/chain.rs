//! A sandbox EVM node: an in-process JSON-RPC server on loopback serving exactly what
//! payrecon reads (chain id, head, blocks by number or tag, receipts, transactions, logs, and
//! balances and nonces at a block: `eth_getBalance`, `balanceOf` by `eth_call`,
//! `eth_getTransactionCount`), from state held in memory. Used by the demo (no network, no
//! setup), tests and benchmarks; tests wrap its routes (`router`) for latency, failures, counters and older nodes' tags
//! (`payrecon-testkit`), never here.
//!
//! Transfers join a pending block and become visible when it is sealed (`mine_block`,
//! `mine`); log indexes are block-level, as on a real node. Every lookup is a HashMap hit.
//! Addresses and hashes are alloy's primitives: this crate knows nothing of payrecon's domain
//! types, and its callers convert (`payrecon demo`, the testkit's wrapper).

mod node;
mod rpc;

use std::io;
use std::sync::{Arc, Mutex, MutexGuard};

use alloy::primitives::{Address, B256, U256};

pub use node::TRANSFER_TOPIC;
use node::{Node, Payment};

/// What every sandbox transaction costs its sender, in wei (its receipt's `gasUsed` ×
/// `effectiveGasPrice`).
pub const TX_FEE_WEI: u64 = node::FEE;

/// A sandbox chain. Clones share the same state and server.
#[derive(Clone)]
pub struct SandboxChain {
    shared: Arc<Shared>,
    server: Arc<Mutex<Option<Server>>>,
}

/// What the HTTP handler shares with the control API.
struct Shared {
    node: Mutex<Node>,
}

struct Server {
    url: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl SandboxChain {
    /// An empty chain (genesis block 0 only) with `finalized` = head - 64, `safe` = head - 32
    /// (as anvil).
    pub fn new(chain_id: u64) -> SandboxChain {
        SandboxChain::starting_at(chain_id, node::GENESIS_TIME)
    }

    /// As `new`, its genesis block at `genesis_time` (Unix seconds), the next ones 12 s apart.
    pub fn starting_at(chain_id: u64, genesis_time: u64) -> SandboxChain {
        SandboxChain {
            shared: Arc::new(Shared {
                node: Mutex::new(Node::new(chain_id, genesis_time)),
            }),
            server: Arc::new(Mutex::new(None)),
        }
    }

    /// Whether logs carry `blockTimestamp` (on by default, as on current nodes); off, the
    /// node answers as older ones do and a block's time is only in its header.
    pub fn set_log_times(&self, on: bool) {
        self.node().set_log_times(on);
    }

    /// Gives `holder` `value` wei at genesis.
    pub fn fund_native(&self, holder: Address, value: U256) {
        self.node().fund(holder, None, value);
    }

    /// Gives `holder` `amount` of the token `contract` at genesis.
    pub fn fund_token(&self, contract: Address, holder: Address, amount: U256) {
        self.node().fund(holder, Some(contract), amount);
    }

    /// A call of `contract` from `from` with `value` wei that the contract passes on to `to`
    /// inside the call: `to`'s balance grows with no transaction or log of its own (an
    /// internal transfer). Returns the call's hash.
    pub fn add_internal_transfer(
        &self,
        from: Address,
        contract: Address,
        to: Address,
        value: U256,
    ) -> B256 {
        let mut p = Payment::native(from, contract, value);
        p.internal = Some((to, value));
        self.node().add(p).0
    }

    /// Starts serving on `127.0.0.1:0` (once; later calls return the same URL) until the last
    /// clone is dropped. Returns the JSON-RPC URL.
    pub async fn serve(&self) -> io::Result<String> {
        self.serve_wrapped(|routes| routes).await
    }

    /// As `serve`, serving what `wrap` makes of the JSON-RPC routes (`POST /`): a middleware
    /// layer around them, say.
    pub async fn serve_wrapped(
        &self,
        wrap: impl FnOnce(axum::Router) -> axum::Router,
    ) -> io::Result<String> {
        if let Some(url) = self.url() {
            return Ok(url);
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let app = wrap(rpc::router(self.shared.clone()));
        let task = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::error!(error = %e, "The sandbox chain server stopped.");
            }
        });
        let mut server = lock(&self.server);
        Ok(server.get_or_insert(Server { url, task }).url.clone())
    }

    /// The URL once `serve` has run.
    pub fn url(&self) -> Option<String> {
        lock(&self.server).as_ref().map(|s| s.url.clone())
    }

    /// An ERC-20 `Transfer` (3 topics, 32-byte amount) in the pending block. Returns the
    /// transaction hash and the block-level log index it will have.
    pub fn add_token_transfer(
        &self,
        contract: Address,
        from: Address,
        to: Address,
        amount: U256,
    ) -> (B256, i64) {
        let p = Payment::token(contract, from, to, amount);
        self.node().add(p)
    }

    /// Many token transfers from one sender under one lock (benchmarks: 100,000+).
    pub fn add_token_transfers(
        &self,
        contract: Address,
        from: Address,
        payments: &[(Address, U256)],
    ) -> Vec<(B256, i64)> {
        let mut node = self.node();
        payments
            .iter()
            .map(|(to, amount)| node.add(Payment::token(contract, from, *to, *amount)))
            .collect()
    }

    /// An ERC-721 `Transfer` (4 topics, token id as topic 3): not a payment.
    pub fn add_nft_transfer(
        &self,
        contract: Address,
        from: Address,
        to: Address,
        token_id: U256,
    ) -> (B256, i64) {
        let p = Payment::nft(contract, from, to, token_id);
        self.node().add(p)
    }

    /// A native-coin transfer (`value` wei, no logs).
    pub fn add_native_transfer(&self, from: Address, to: Address, value: U256) -> B256 {
        self.node().add(Payment::native(from, to, value)).0
    }

    /// A token transfer call that reverted: receipt status 0, no logs.
    pub fn add_reverted(
        &self,
        contract: Address,
        from: Address,
        to: Address,
        amount: U256,
    ) -> B256 {
        let mut p = Payment::token(contract, from, to, amount);
        p.reverted = true;
        self.node().add(p).0
    }

    /// Seals the pending transactions (possibly none) into a new block; returns its number.
    pub fn mine_block(&self) -> u64 {
        self.node().mine_block()
    }

    /// Seals the pending block and `n - 1` empty ones; returns the new head.
    pub fn mine(&self, n: u64) -> u64 {
        let mut node = self.node();
        for _ in 0..n {
            node.mine_block();
        }
        node.head()
    }

    /// The latest block number.
    pub fn head(&self) -> u64 {
        self.node().head()
    }

    /// Block number of a mined transaction.
    pub fn block_of(&self, tx: B256) -> Option<u64> {
        self.node().block_of(&tx)
    }

    /// The time of block `number` (Unix seconds), once mined.
    pub fn block_time(&self, number: u64) -> Option<u64> {
        self.node().block_time(number)
    }

    fn node(&self) -> MutexGuard<'_, Node> {
        lock(&self.shared.node)
    }
}

/// A poisoned lock only means another thread panicked mid-update of test state: go on.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
