//! A fake Tron node on loopback, answering as java-tron documents and answers: the
//! Ethereum-compatible JSON-RPC at `/jsonrpc` (single and batch requests: `eth_chainId`,
//! `eth_blockNumber`, `eth_getBlockByNumber` with `latest`/`finalized` = solidified, `safe`
//! refused, `eth_getTransactionReceipt`, `eth_getTransactionByHash`, `eth_getLogs`,
//! `web3_clientVersion`) and the HTTP API (`/wallet/gettransactionbyid`,
//! `/wallet/gettransactioninfobyid`, `/wallet/getblockbynum`). Addresses go out as java-tron
//! writes them: `0x` + 20 bytes on JSON-RPC, `41` + 20 bytes on the HTTP API; transaction ids
//! as 64 hex digits (with `0x` on JSON-RPC). Blocks are 3 s apart, the head's time now.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};

/// Mainnet's chain id (`0x2b6653dc`).
pub const MAINNET_CHAIN_ID: u64 = 0x2b66_53dc;
/// USDT's TRC-20 contract on mainnet, as 20 bytes of hex (base58 `TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t`).
pub const USDT_HEX: &str = "a614f803b6fd780986a42c78ec9c7f77e6ded13c";
const TRANSFER: &str = "ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";

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

struct Entry {
    block: u64,
    tx: TronTx,
}

struct NodeState {
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

type Shared = Arc<Mutex<NodeState>>;

fn lock(s: &Shared) -> MutexGuard<'_, NodeState> {
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
        }));
        let router = Router::new()
            .route("/jsonrpc", post(jsonrpc))
            .route("/wallet/gettransactionbyid", post(gettransactionbyid))
            .route(
                "/wallet/gettransactioninfobyid",
                post(gettransactioninfobyid),
            )
            .route("/wallet/getblockbynum", post(getblockbynum))
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port for the fake Tron node");
        let addr = listener.local_addr().expect("local address");
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        FakeTron {
            state,
            url: format!("http://{addr}"),
            task,
        }
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

fn block_id(s: &NodeState, n: u64) -> String {
    let fork = s
        .forks
        .iter()
        .filter(|(h, _)| n >= *h)
        .map(|(_, f)| *f)
        .max()
        .unwrap_or(0);
    let mix = (u128::from(n) << 16 | u128::from(fork))
        .wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835);
    format!("{n:016x}{mix:032x}{fork:016x}")
}

fn block_time(s: &NodeState, n: u64) -> i64 {
    s.head_time - 3 * (s.head as i64 - n as i64)
}

fn hex_q(n: u64) -> String {
    format!("{n:#x}")
}

fn note(state: &Shared, headers: &HeaderMap, what: String) {
    let mut s = lock(state);
    s.requests.push(what);
    let key = headers
        .get("TRON-PRO-API-KEY")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    s.api_keys.push(key);
}

async fn jsonrpc(
    State(state): State<Shared>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Json<Value> {
    let one = |req: &Value| {
        let method = req["method"].as_str().unwrap_or_default().to_string();
        note(&state, &headers, method.clone());
        let s = lock(&state);
        let id = req["id"].clone();
        match call(&s, &method, &req["params"]) {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err((code, message)) => {
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
            }
        }
    };
    Json(match &body {
        Value::Array(reqs) => Value::Array(reqs.iter().map(one).collect()),
        req => one(req),
    })
}

fn bare(id: &str) -> String {
    id.trim_start_matches("0x").to_lowercase()
}

/// One JSON-RPC call against the node's state.
fn call(s: &NodeState, method: &str, params: &Value) -> Result<Value, (i64, String)> {
    match method {
        "web3_clientVersion" => Ok(json!("TRON/v4.8.0/Linux/Java1.8")),
        "eth_chainId" => Ok(json!(hex_q(MAINNET_CHAIN_ID))),
        "eth_blockNumber" => Ok(json!(hex_q(s.head))),
        "eth_getBlockByNumber" => {
            let n = match params[0].as_str().unwrap_or_default() {
                "latest" => s.head,
                "finalized" => s.head.saturating_sub(s.solid_lag),
                "earliest" => 0,
                tag if tag.starts_with("0x") => u64::from_str_radix(&tag[2..], 16)
                    .map_err(|_| (-32602, format!("invalid block number {tag}")))?,
                tag => return Err((-32602, format!("TAG {tag} not supported"))),
            };
            if n > s.head {
                return Ok(Value::Null);
            }
            Ok(json!({
                "number": hex_q(n),
                "hash": format!("0x{}", block_id(s, n)),
                "parentHash": format!("0x{}", block_id(s, n.saturating_sub(1))),
                "timestamp": hex_q(block_time(s, n) as u64),
                "transactions": [],
            }))
        }
        "eth_getTransactionReceipt" => {
            let id = bare(params[0].as_str().unwrap_or_default());
            Ok(s.txs
                .get(&id)
                .filter(|e| e.block <= s.head)
                .map_or(Value::Null, |e| receipt(s, &id, e)))
        }
        "eth_getTransactionByHash" => {
            let id = bare(params[0].as_str().unwrap_or_default());
            Ok(s.txs
                .get(&id)
                .filter(|e| e.block <= s.head)
                .map_or(Value::Null, |e| {
                    let (from, to, value) = match &e.tx {
                        TronTx::Trc20 { contract, from, .. } => (from.clone(), contract.clone(), 0),
                        TronTx::Trx {
                            from, to, amount, ..
                        } => (from.clone(), to.clone(), *amount),
                        TronTx::Other { call_value, .. } => {
                            ("00".repeat(20), "00".repeat(20), *call_value)
                        }
                    };
                    json!({
                        "hash": format!("0x{id}"),
                        "blockHash": format!("0x{}", block_id(s, e.block)),
                        "blockNumber": hex_q(e.block),
                        "from": format!("0x{from}"),
                        "to": format!("0x{to}"),
                        "value": hex_q(value),
                        "input": "0x",
                    })
                }))
        }
        "eth_getLogs" => Ok(Value::Array(logs(s, &params[0]))),
        other => Err((
            -32601,
            format!("the method {other} does not exist/is not available"),
        )),
    }
}

fn log_of(s: &NodeState, id: &str, e: &Entry) -> Option<Value> {
    let TronTx::Trc20 {
        contract,
        from,
        to,
        amount,
        log_index,
        success: true,
    } = &e.tx
    else {
        return None;
    };
    Some(json!({
        "address": format!("0x{contract}"),
        "blockHash": format!("0x{}", block_id(s, e.block)),
        "blockNumber": hex_q(e.block),
        "data": format!("0x{amount:064x}"),
        "logIndex": hex_q(*log_index),
        "removed": false,
        "topics": [
            format!("0x{TRANSFER}"),
            format!("0x{from:0>64}"),
            format!("0x{to:0>64}"),
        ],
        "transactionHash": format!("0x{id}"),
        "transactionIndex": "0x0",
    }))
}

fn receipt(s: &NodeState, id: &str, e: &Entry) -> Value {
    let (status, to) = match &e.tx {
        TronTx::Trc20 {
            success, contract, ..
        } => (*success, contract.clone()),
        TronTx::Trx {
            contract_ret, to, ..
        } => (contract_ret == "SUCCESS", to.clone()),
        TronTx::Other { .. } => (true, "00".repeat(20)),
    };
    json!({
        "blockHash": format!("0x{}", block_id(s, e.block)),
        "blockNumber": hex_q(e.block),
        "contractAddress": null,
        "cumulativeGasUsed": "0x3a4d8",
        "effectiveGasPrice": "0xd2",
        "from": "0x4b0f1812e5df2a09796481ff14017e6005508003",
        "gasUsed": "0x3a4d8",
        "logs": log_of(s, id, e).into_iter().collect::<Vec<_>>(),
        "logsBloom": format!("0x{}", "00".repeat(256)),
        "root": null,
        "status": if status { "0x1" } else { "0x0" },
        "to": format!("0x{to}"),
        "transactionHash": format!("0x{id}"),
        "transactionIndex": "0x0",
        "type": "0x0",
    })
}

fn logs(s: &NodeState, filter: &Value) -> Vec<Value> {
    let block = |k: &str| {
        filter[k]
            .as_str()
            .and_then(|b| u64::from_str_radix(b.trim_start_matches("0x"), 16).ok())
    };
    let (from, to) = (
        block("fromBlock").unwrap_or(0),
        block("toBlock").unwrap_or(s.head),
    );
    let list = |v: &Value| -> Vec<String> {
        match v {
            Value::String(a) => vec![a.to_lowercase()],
            Value::Array(a) => a
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_lowercase)
                .collect(),
            _ => Vec::new(),
        }
    };
    let addresses = list(&filter["address"]);
    let recipients = list(&filter["topics"][2]);
    let mut ids: Vec<&String> = s.txs.keys().collect();
    ids.sort();
    ids.into_iter()
        .filter_map(|id| {
            let e = &s.txs[id];
            if e.block < from || e.block > to.min(s.head) {
                return None;
            }
            let log = log_of(s, id, e)?;
            let ok = (addresses.is_empty()
                || addresses.contains(&log["address"].as_str()?.to_string()))
                && (recipients.is_empty()
                    || recipients.contains(&log["topics"][2].as_str()?.to_string()));
            ok.then_some(log)
        })
        .collect()
}

async fn gettransactionbyid(
    State(state): State<Shared>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Json<Value> {
    note(&state, &headers, "/wallet/gettransactionbyid".into());
    let s = lock(&state);
    let id = bare(body["value"].as_str().unwrap_or_default());
    let Some(e) = s.txs.get(&id) else {
        return Json(json!({}));
    };
    let (ret, kind, value) = match &e.tx {
        TronTx::Trc20 {
            contract,
            from,
            success,
            ..
        } => (
            if *success { "SUCCESS" } else { "REVERT" }.to_string(),
            "TriggerSmartContract".to_string(),
            json!({"data": "a9059cbb", "owner_address": format!("41{from}"), "contract_address": format!("41{contract}")}),
        ),
        TronTx::Trx {
            from,
            to,
            amount,
            contract_ret,
        } => (
            contract_ret.clone(),
            "TransferContract".to_string(),
            json!({"amount": amount, "owner_address": format!("41{from}"), "to_address": format!("41{to}")}),
        ),
        TronTx::Other {
            contract_type,
            value,
            ..
        } => ("SUCCESS".into(), contract_type.clone(), value.clone()),
    };
    Json(json!({
        "ret": [{"contractRet": ret}],
        "signature": [format!("{}1b", "ab".repeat(64))],
        "txID": id,
        "raw_data": {
            "contract": [{
                "parameter": {"value": value, "type_url": format!("type.googleapis.com/protocol.{kind}")},
                "type": kind,
            }],
            "ref_block_bytes": "3c9f",
            "ref_block_hash": "6e7a4fcb4a6d9b2d",
            "expiration": (block_time(&s, e.block) + 60) * 1000,
            "timestamp": block_time(&s, e.block) * 1000,
        },
        "raw_data_hex": "0a023c9f2208",
    }))
}

async fn gettransactioninfobyid(
    State(state): State<Shared>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Json<Value> {
    note(&state, &headers, "/wallet/gettransactioninfobyid".into());
    let s = lock(&state);
    let id = bare(body["value"].as_str().unwrap_or_default());
    let Some(e) = s.txs.get(&id).filter(|e| e.block <= s.head) else {
        return Json(json!({}));
    };
    // A plain TRX transfer's receipt has no `result` (only contract calls do).
    let receipt = match &e.tx {
        TronTx::Trc20 { success, .. } => json!({"energy_usage_total": 14650, "net_usage": 345,
            "result": if *success { "SUCCESS" } else { "REVERT" }}),
        _ => json!({"net_usage": 268}),
    };
    Json(json!({
        "id": id,
        "fee": 1_100_000,
        "blockNumber": e.block,
        "blockTimeStamp": block_time(&s, e.block) * 1000,
        "contractResult": [""],
        "receipt": receipt,
    }))
}

async fn getblockbynum(
    State(state): State<Shared>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Json<Value> {
    note(&state, &headers, "/wallet/getblockbynum".into());
    let s = lock(&state);
    let n = body["num"].as_u64().unwrap_or(u64::MAX);
    if n > s.head {
        return Json(json!({}));
    }
    Json(json!({
        "blockID": block_id(&s, n),
        "block_header": {"raw_data": {"number": n, "timestamp": block_time(&s, n) * 1000,
            "witness_address": "41d376d829440505ea13c9d1c455317d51b62e4ab6", "version": 30}},
    }))
}
