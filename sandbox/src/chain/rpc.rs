//! The sandbox chain's HTTP side: JSON-RPC single and batch requests over axum.

use std::sync::Arc;

use alloy::primitives::B256;
use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use serde_json::{json, Value};

use super::{lock, Shared};

pub(super) fn router(shared: Arc<Shared>) -> Router {
    Router::new().route("/", post(answer)).with_state(shared)
}

async fn answer(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let reply = match serde_json::from_slice::<Value>(&body) {
        Err(e) => error(Value::Null, -32700, &format!("parse error: {e}")),
        Ok(Value::Array(calls)) if calls.is_empty() => error(Value::Null, -32600, "empty batch"),
        Ok(Value::Array(calls)) => Value::Array(calls.iter().map(|c| call(&shared, c)).collect()),
        Ok(single) => call(&shared, &single),
    };
    axum::Json(reply).into_response()
}

/// Answers one JSON-RPC call object.
fn call(shared: &Shared, request: &Value) -> Value {
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let Some(method) = request.get("method").and_then(Value::as_str) else {
        return error(id, -32600, "invalid request: no method");
    };
    let params = request.get("params").cloned().unwrap_or(json!([]));
    match dispatch(shared, method, &params) {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err((code, message)) => error(id, code, &message),
    }
}

fn dispatch(shared: &Shared, method: &str, params: &Value) -> Result<Value, (i64, String)> {
    let node = lock(&shared.node);
    match method {
        "eth_chainId" => Ok(json!(format!("{:#x}", node.chain_id()))),
        "eth_blockNumber" => Ok(json!(format!("{:#x}", node.head()))),
        "eth_getBlockByNumber" => {
            let tag = param_str(params, 0)?;
            let full = params.get(1).and_then(Value::as_bool).unwrap_or(false);
            match node.resolve_block(tag).map_err(|m| (-32602, m))? {
                Some(n) => Ok(node.block_json(n, full)),
                None => Ok(Value::Null),
            }
        }
        "eth_getTransactionReceipt" => Ok(node.receipt(&param_hash(params)?)),
        "eth_getTransactionByHash" => Ok(node.tx_by_hash(&param_hash(params)?)),
        "eth_getBalance" => {
            let holder = param_address(params.get(0))?;
            let at = at_block(&node, params, 1)?;
            Ok(json!(format!("{:#x}", node.balance_at(holder, None, at))))
        }
        "eth_getTransactionCount" => {
            let holder = param_address(params.get(0))?;
            let at = at_block(&node, params, 1)?;
            Ok(json!(format!("{:#x}", node.nonce_at(holder, at))))
        }
        "eth_call" => {
            let call = params.get(0).cloned().unwrap_or_default();
            let token = param_address(call.get("to"))?;
            let at = at_block(&node, params, 1)?;
            let data = call
                .get("data")
                .or(call.get("input"))
                .and_then(Value::as_str);
            match data.and_then(|d| d.strip_prefix("0x70a08231")) {
                Some(word) if word.len() == 64 => {
                    let holder = param_address(Some(&json!(format!("0x{}", &word[24..]))))?;
                    let balance = node.balance_at(holder, Some(token), at);
                    Ok(json!(format!("0x{balance:064x}")))
                }
                _ => Err((-32000, "execution reverted".into())),
            }
        }
        "eth_getLogs" => get_logs(&node, params),
        other => Err((
            -32601,
            format!("the method {other} does not exist/is not available"),
        )),
    }
}

/// `eth_getLogs`: block bounds (numbers or tags), `address` (one or a list), `topics` (per
/// position: null, one, or a list of alternatives).
fn get_logs(node: &super::Node, params: &Value) -> Result<Value, (i64, String)> {
    let filter = params.get(0).cloned().unwrap_or_default();
    let bound = |k: &str, default: &str| {
        let tag = filter.get(k).and_then(Value::as_str).unwrap_or(default);
        node.resolve_block(tag)
            .map_err(|m| (-32602, m))
            .map(|n| n.unwrap_or(node.head()))
    };
    let (from, to) = (bound("fromBlock", "latest")?, bound("toBlock", "latest")?);
    let list = |v: Option<&Value>| -> Result<Option<Vec<String>>, (i64, String)> {
        match v {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(vec![s.clone()])),
            Some(Value::Array(a)) => Ok(Some(
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect(),
            )),
            Some(other) => Err((-32602, format!("invalid filter value {other}"))),
        }
    };
    let bad = |s: &String| (-32602, format!("invalid params: {s:?}"));
    let addresses = list(filter.get("address"))?
        .unwrap_or_default()
        .iter()
        .map(|a| a.parse().map_err(|_| bad(a)))
        .collect::<Result<Vec<_>, _>>()?;
    let mut topics = Vec::new();
    for t in filter
        .get("topics")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        topics.push(match list(Some(t))? {
            None => None,
            Some(l) => Some(
                l.iter()
                    .map(|x| x.parse::<B256>().map_err(|_| bad(x)))
                    .collect::<Result<Vec<_>, _>>()?,
            ),
        });
    }
    Ok(Value::Array(node.logs(from, to, &addresses, &topics)))
}

fn param_str(params: &Value, i: usize) -> Result<&str, (i64, String)> {
    params.get(i).and_then(Value::as_str).ok_or((
        -32602,
        format!("invalid params: expected a string at position {i}"),
    ))
}

fn param_address(v: Option<&Value>) -> Result<alloy::primitives::Address, (i64, String)> {
    let s = v.and_then(Value::as_str).unwrap_or_default();
    s.parse()
        .map_err(|_| (-32602, format!("invalid params: {s:?} is not an address")))
}

/// The block a state read is at (`latest` when absent); an unknown block is an error.
fn at_block(node: &super::Node, params: &Value, i: usize) -> Result<u64, (i64, String)> {
    let tag = params.get(i).and_then(Value::as_str).unwrap_or("latest");
    node.resolve_block(tag)
        .map_err(|m| (-32602, m))?
        .ok_or((-32000, "header not found".into()))
}

fn param_hash(params: &Value) -> Result<B256, (i64, String)> {
    let s = param_str(params, 0)?;
    s.parse().map_err(|_| {
        (
            -32602,
            format!("invalid params: {s:?} is not a 32-byte hash"),
        )
    })
}

fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}
