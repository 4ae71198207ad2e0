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
        other => Err((
            -32601,
            format!("the method {other} does not exist/is not available"),
        )),
    }
}

fn param_str(params: &Value, i: usize) -> Result<&str, (i64, String)> {
    params.get(i).and_then(Value::as_str).ok_or((
        -32602,
        format!("invalid params: expected a string at position {i}"),
    ))
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
