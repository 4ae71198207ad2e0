//! The fake node's HTTP API (`/wallet/…`), java-tron's shapes (`visible = false`: hex
//! addresses with the 41 prefix).

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use super::rpc::bare;
use super::{api_request, block_id, block_time, lock, Entry, NodeState, Shared, TronTx, TX_FEE};

pub(super) async fn gettransactionbyid(
    State(state): State<Shared>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    if let Some(fault) = api_request(&state, &headers, "/wallet/gettransactionbyid") {
        return fault;
    }
    let s = lock(&state);
    let id = bare(body["value"].as_str().unwrap_or_default());
    let Some(e) = s.txs.get(&id) else {
        return Json(json!({})).into_response();
    };
    Json(tx_json(&s, &id, e)).into_response()
}

/// A transaction as `/wallet/gettransactionbyid` and the blocks' `transactions` show it.
pub(super) fn tx_json(s: &NodeState, id: &str, e: &Entry) -> Value {
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
    json!({
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
            "expiration": (block_time(s, e.block) + 60) * 1000,
            "timestamp": block_time(s, e.block) * 1000,
        },
        "raw_data_hex": "0a023c9f2208",
    })
}

pub(super) async fn gettransactioninfobyid(
    State(state): State<Shared>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    if let Some(fault) = api_request(&state, &headers, "/wallet/gettransactioninfobyid") {
        return fault;
    }
    let s = lock(&state);
    let id = bare(body["value"].as_str().unwrap_or_default());
    let Some(e) = s.txs.get(&id).filter(|e| e.block <= s.head) else {
        return Json(json!({})).into_response();
    };
    // A plain TRX transfer's receipt has no `result` (only contract calls do).
    let receipt = match &e.tx {
        TronTx::Trc20 { success, .. } => json!({"energy_usage_total": 14650, "net_usage": 345,
            "result": if *success { "SUCCESS" } else { "REVERT" }}),
        _ => json!({"net_usage": 268}),
    };
    Json(json!({
        "id": id,
        "fee": TX_FEE,
        "blockNumber": e.block,
        "blockTimeStamp": block_time(&s, e.block) * 1000,
        "contractResult": [""],
        "receipt": receipt,
    }))
    .into_response()
}

pub(super) async fn getblockbynum(
    State(state): State<Shared>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    if let Some(fault) = api_request(&state, &headers, "/wallet/getblockbynum") {
        return fault;
    }
    let s = lock(&state);
    let n = body["num"].as_u64().unwrap_or(u64::MAX);
    if n > s.head {
        return Json(json!({})).into_response();
    }
    Json(json!({
        "blockID": block_id(&s, n),
        "block_header": {"raw_data": {"number": n, "timestamp": block_time(&s, n) * 1000,
            "witness_address": "41d376d829440505ea13c9d1c455317d51b62e4ab6", "version": 30}},
    }))
    .into_response()
}

/// Blocks `startNum..endNum` (at most 100, else `{}` as java-tron answers) with their
/// transactions; a block without any has no `transactions` key.
pub(super) async fn getblockbylimitnext(
    State(state): State<Shared>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    if let Some(fault) = api_request(&state, &headers, "/wallet/getblockbylimitnext") {
        return fault;
    }
    let s = lock(&state);
    let start = body["startNum"].as_u64().unwrap_or(0);
    let end = body["endNum"].as_u64().unwrap_or(0).min(s.head + 1);
    if end <= start || end - start > 100 {
        return Json(json!({})).into_response();
    }
    let mut ids: Vec<&String> = s.txs.keys().collect();
    ids.sort();
    let blocks: Vec<Value> = (start..end)
        .map(|n| {
            let txs: Vec<Value> = ids
                .iter()
                .filter(|id| s.txs[**id].block == n)
                .map(|id| tx_json(&s, id, &s.txs[*id]))
                .collect();
            let mut b = json!({
                "blockID": block_id(&s, n),
                "block_header": {"raw_data": {"number": n, "timestamp": block_time(&s, n) * 1000,
                    "witness_address": "41d376d829440505ea13c9d1c455317d51b62e4ab6", "version": 30}},
            });
            if !txs.is_empty() {
                b["transactions"] = Value::Array(txs);
            }
            b
        })
        .collect();
    Json(json!({ "block": blocks })).into_response()
}
