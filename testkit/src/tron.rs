//! A fake Tron node on loopback, answering as java-tron documents and answers: the
//! Ethereum-compatible JSON-RPC at `/jsonrpc` (single and batch requests: `eth_chainId`,
//! `eth_blockNumber`, `eth_getBlockByNumber` with `latest`/`finalized` = solidified, `safe`
//! refused, `eth_getTransactionReceipt`, `eth_getTransactionByHash`, `eth_getLogs`,
//! `web3_clientVersion`) and the HTTP API (`/wallet/gettransactionbyid`,
//! `/wallet/gettransactioninfobyid`, `/wallet/getblockbynum`, `/wallet/getblockbylimitnext`).
//! Balances (`eth_getBalance`, `balanceOf` by `eth_call`, at `latest` only as java-tron
//! answers) are what `fund` gave plus the transactions up to the head, every transaction
//! burning `TX_FEE` sun of its sender's TRX. Addresses go out as java-tron
//! writes them: `0x` + 20 bytes on JSON-RPC, `41` + 20 bytes on the HTTP API; transaction ids
//! as 64 hex digits (with `0x` on JSON-RPC). Blocks are 3 s apart, the head's time now.

mod http;
mod rpc;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};

use http::{getblockbylimitnext, getblockbynum, gettransactionbyid, gettransactioninfobyid};
use rpc::jsonrpc;

/// Mainnet's chain id (`0x2b6653dc`).
pub const MAINNET_CHAIN_ID: u64 = 0x2b66_53dc;
/// USDT's TRC-20 contract on mainnet, base58.
pub const USDT: &str = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";
/// USDT's TRC-20 contract on mainnet, as 20 bytes of hex (base58 `TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t`).
pub const USDT_HEX: &str = "a614f803b6fd780986a42c78ec9c7f77e6ded13c";
/// The TRX (sun) every transaction burns from its sender (its info's `fee`).
pub const TX_FEE: u64 = 1_100_000;
pub(crate) const TRANSFER: &str =
    "ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";

/// What a transaction is, as the node will describe it. Addresses are 20-byte hex without
/// a prefix (the node adds `0x` or `41` as each interface spells them).
#[derive(Debug, Clone)]
pub enum TronTx {
    /// A `TriggerSmartContract` call of `contract` whose receipt holds one `Transfer` log.
    Trc20 {
        contract: String,
        from: String,
        to: String,
        amount: u128,
        /// The log's block-level index.
        log_index: u64,
        /// `false`: the call reverted (receipt status 0, no log, `contractRet` REVERT).
        success: bool,
    },
    /// A `TransferContract` of `amount` sun.
    Trx {
        from: String,
        to: String,
        amount: u64,
        /// `ret[0].contractRet` (`SUCCESS` unless the transfer failed).
        contract_ret: String,
    },
    /// Any other contract (`FreezeBalanceV2Contract`, `VoteWitnessContract`,
    /// `TransferAssetContract`, `TriggerSmartContract` with a `call_value`…) with this
    /// `parameter.value`; `call_value` is the JSON-RPC `value` the node reports for it.
    Other {
        contract_type: String,
        value: Value,
        call_value: u64,
    },
}

pub(crate) struct Entry {
    block: u64,
    tx: TronTx,
}

pub(crate) struct NodeState {
    head: u64,
    /// head - solidified block.
    solid_lag: u64,
    /// Bumped for every block from a height on by `reorg_from`: those blocks get new ids.
    forks: Vec<(u64, u64)>,
    txs: HashMap<String, Entry>,
    /// JSON-RPC methods and HTTP paths, in order.
    requests: Vec<String>,
    /// The `TRON-PRO-API-KEY` header of every request (`None`: absent).
    api_keys: Vec<Option<String>>,
    /// Unix seconds of the head block.
    head_time: i64,
    /// Statuses the next HTTP API requests answer (then the queue is empty again).
    api_faults: std::collections::VecDeque<u16>,
    /// Balances before any transaction, by (holder, `native` or token contract), 20-byte hex.
    funds: HashMap<(String, String), u128>,
}

/// The node's handle. Dropping it stops the server.
pub struct FakeTron {
    state: Arc<Mutex<NodeState>>,
    url: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeTron {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub(crate) type Shared = Arc<Mutex<NodeState>>;

pub(crate) fn lock(s: &Shared) -> MutexGuard<'_, NodeState> {
    s.lock().unwrap_or_else(|p| p.into_inner())
}

impl FakeTron {
    /// Starts the node at `head`, its solidified block `solid_lag` below.
    pub async fn start(head: u64, solid_lag: u64) -> FakeTron {
        let state = Arc::new(Mutex::new(NodeState {
            head,
            solid_lag,
            forks: Vec::new(),
            txs: HashMap::new(),
            requests: Vec::new(),
            api_keys: Vec::new(),
            head_time: jiff::Timestamp::now().as_second(),
            api_faults: Default::default(),
            funds: HashMap::new(),
        }));
        let router = Router::new()
            .route("/jsonrpc", post(jsonrpc))
            .route("/wallet/gettransactionbyid", post(gettransactionbyid))
            .route(
                "/wallet/gettransactioninfobyid",
                post(gettransactioninfobyid),
            )
            .route("/wallet/getblockbynum", post(getblockbynum))
            .route("/wallet/getblockbylimitnext", post(getblockbylimitnext))
            .with_state(state.clone());
        let (task, url) = crate::json_api::serve(router, "Tron node").await;
        FakeTron { state, url, task }
    }

    /// The JSON-RPC endpoint (`…/jsonrpc`).
    pub fn rpc_url(&self) -> String {
        format!("{}/jsonrpc", self.url)
    }

    /// The HTTP API base (`/wallet/…` below it).
    pub fn api_url(&self) -> String {
        self.url.clone()
    }

    fn state(&self) -> MutexGuard<'_, NodeState> {
        lock(&self.state)
    }

    /// Puts `tx` (id: 64 hex digits) in `block`; it is served once the head reaches it.
    pub fn add(&self, txid: &str, block: u64, tx: TronTx) {
        self.state()
            .txs
            .insert(txid.to_lowercase(), Entry { block, tx });
    }

    /// Gives `holder` (20-byte hex) `amount` of `asset` (`native` or a contract's 20-byte hex)
    /// before any transaction.
    pub fn fund(&self, holder: &str, asset: &str, amount: u128) {
        let key = (holder.to_lowercase(), asset.to_lowercase());
        *self.state().funds.entry(key).or_default() += amount;
    }

    /// Moves the transaction to another block (a reorg re-included it there).
    pub fn move_tx(&self, txid: &str, block: u64) {
        if let Some(e) = self.state().txs.get_mut(&txid.to_lowercase()) {
            e.block = block;
        }
    }

    /// Drops the transaction (a reorg left it out).
    pub fn drop_tx(&self, txid: &str) {
        self.state().txs.remove(&txid.to_lowercase());
    }

    /// Every block from `height` on gets a new id (a reorg replaced them).
    pub fn reorg_from(&self, height: u64) {
        let mut s = self.state();
        let n = s.forks.len() as u64 + 1;
        s.forks.push((height, n));
    }

    /// Advances the head by `n` blocks (3 s each).
    pub fn mine(&self, n: u64) {
        let mut s = self.state();
        s.head += n;
        s.head_time += 3 * n as i64;
    }

    pub fn head(&self) -> u64 {
        self.state().head
    }

    pub fn solidified(&self) -> u64 {
        let s = self.state();
        s.head.saturating_sub(s.solid_lag)
    }

    /// The next `times` HTTP API requests answer `status` (with a small JSON error body).
    pub fn push_api_fault(&self, status: u16, times: usize) {
        self.state()
            .api_faults
            .extend(std::iter::repeat_n(status, times));
    }

    /// A configuration's `[chains.tron]` table for this node (key `api_key`, `extra` keys
    /// after), and its USDT and TRX `[assets]`.
    pub fn config_tables(&self, api_key: &str, extra: &str) -> String {
        format!(
            "[chains.tron]\nkind = \"tron\"\nrpc_url = \"{rpc}\"\napi_url = \"{api}\"\n\
             api_key = \"{api_key}\"\nfinality = \"finalized\"\n{extra}\n\n\
             [assets.\"tron:{USDT}\"]\nsymbol = \"USDT\"\ndecimals = 6\n\n\
             [assets.\"tron:native\"]\nsymbol = \"TRX\"\ndecimals = 6\n",
            rpc = self.rpc_url(),
            api = self.api_url(),
        )
    }

    /// HTTP API faults still queued.
    pub fn api_faults_left(&self) -> usize {
        self.state().api_faults.len()
    }

    /// JSON-RPC methods and HTTP paths received, in order.
    pub fn requests(&self) -> Vec<String> {
        self.state().requests.clone()
    }

    /// The `TRON-PRO-API-KEY` header of every request received.
    pub fn api_keys(&self) -> Vec<Option<String>> {
        self.state().api_keys.clone()
    }

    /// The id java-tron would give block `n` (8 bytes of the number, then 24 of hash).
    pub fn block_id(&self, n: u64) -> String {
        block_id(&self.state(), n)
    }
}

pub(crate) fn block_id(s: &NodeState, n: u64) -> String {
    let fork = crate::fork_at(&s.forks, n);
    let mix = (u128::from(n) << 16 | u128::from(fork))
        .wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835);
    format!("{n:016x}{mix:032x}{fork:016x}")
}

/// `holder`'s balance of `asset` (`native` or a contract), both 20-byte hex, at the head;
/// below zero is an error of the test's making (reported as such by the node).
pub(crate) fn balance_of(s: &NodeState, holder: &str, asset: &str) -> i128 {
    let mut total = s
        .funds
        .get(&(holder.to_string(), asset.to_string()))
        .map_or(0, |v| *v as i128);
    let native = asset == "native";
    for e in s.txs.values().filter(|e| e.block <= s.head) {
        let (sender, moved) = match &e.tx {
            TronTx::Trc20 {
                contract,
                from,
                to,
                amount,
                success,
                ..
            } => (
                from.clone(),
                (*success && contract == asset).then_some((from, to, *amount)),
            ),
            TronTx::Trx {
                from,
                to,
                amount,
                contract_ret,
            } => (
                from.clone(),
                (native && contract_ret == "SUCCESS").then(|| (from, to, u128::from(*amount))),
            ),
            TronTx::Other { value, .. } => {
                let owner = value["owner_address"].as_str().unwrap_or_default();
                (owner.strip_prefix("41").unwrap_or(owner).to_string(), None)
            }
        };
        if native && sender == holder {
            total -= i128::from(TX_FEE);
        }
        if let Some((from, to, amount)) = moved {
            if from == holder {
                total -= amount as i128;
            }
            if to == holder {
                total += amount as i128;
            }
        }
    }
    total
}

pub(crate) fn block_time(s: &NodeState, n: u64) -> i64 {
    s.head_time - 3 * (s.head as i64 - n as i64)
}

pub(crate) fn hex_q(n: u64) -> String {
    format!("{n:#x}")
}

/// Notes an HTTP API request; the queued fault it answers, if any.
pub(crate) fn api_request(state: &Shared, headers: &HeaderMap, what: &str) -> Option<Response> {
    note(state, headers, what.to_string());
    let status = lock(state).api_faults.pop_front()?;
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    Some((status, Json(json!({"Error": "injected fault"}))).into_response())
}

pub(crate) fn note(state: &Shared, headers: &HeaderMap, what: String) {
    let mut s = lock(state);
    s.requests.push(what);
    let key = headers
        .get("TRON-PRO-API-KEY")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    s.api_keys.push(key);
}
