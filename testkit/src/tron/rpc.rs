//! The fake node's JSON-RPC (`/jsonrpc`): single and batch requests, java-tron's shapes.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::Json;
use serde_json::{json, Value};

use super::{
    balance_of, block_id, block_time, hex_q, lock, note, Entry, NodeState, Shared, TronTx,
    MAINNET_CHAIN_ID, TRANSFER,
};

pub(super) async fn jsonrpc(
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

/// java-tron answers state at its head only.
fn latest_only(tag: &Value) -> Result<(), (i64, String)> {
    match tag.as_str().unwrap_or_default() {
        "latest" => Ok(()),
        t if t.starts_with("0x") => Err((
            -32602,
            "QUANTITY not supported, just support TAG as latest".into(),
        )),
        t => Err((-32602, format!("TAG {t} not supported"))),
    }
}

pub(crate) fn bare(id: &str) -> String {
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
        "eth_getBalance" => {
            latest_only(&params[1])?;
            let holder = bare(params[0].as_str().unwrap_or_default());
            Ok(json!(format!(
                "{:#x}",
                balance_of(s, &holder, "native").max(0)
            )))
        }
        "eth_call" => {
            latest_only(&params[1])?;
            let to = bare(params[0]["to"].as_str().unwrap_or_default());
            let data = params[0]["data"].as_str().unwrap_or_default();
            match data.strip_prefix("0x70a08231") {
                Some(word) if word.len() == 64 => {
                    let balance = balance_of(s, &word[24..].to_lowercase(), &to).max(0);
                    Ok(json!(format!("0x{balance:064x}")))
                }
                _ => Err((-32000, "REVERT opcode executed".into())),
            }
        }
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
