//! The fake's HTTP answers, in Esplora's shapes: the tip, a transaction, a block's status and an
//! address's stats and history pages, each noting its request and answering a queued fault
//! first.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use super::{block_hash, lock, Entry, EsploraState, Shared, BLOCK_SECONDS};

/// Confirmed transactions per history page, as Esplora serves them.
const CHAIN_PAGE: usize = 25;

/// Notes the request; the queued fault it answers, if any.
fn begin(state: &Shared, path: String) -> Option<Response> {
    let mut s = lock(state);
    s.requests.push(path);
    let status = s.faults.pop_front()?;
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    Some((status, "injected fault").into_response())
}

pub(super) async fn tip_height(State(state): State<Shared>) -> Response {
    if let Some(f) = begin(&state, "/blocks/tip/height".into()) {
        return f;
    }
    lock(&state).tip.to_string().into_response()
}

pub(super) async fn tip_hash(State(state): State<Shared>) -> Response {
    if let Some(f) = begin(&state, "/blocks/tip/hash".into()) {
        return f;
    }
    let s = lock(&state);
    block_hash(&s, s.tip).into_response()
}

/// A scriptPubKey of the address's type (the shape Esplora serves; payrecon reads only the
/// address and the value).
fn script(address: &str) -> (String, &'static str) {
    let l = address.to_ascii_lowercase();
    if l.starts_with("bc1p") || l.starts_with("tb1p") {
        (format!("5120{}", "ab".repeat(32)), "v1_p2tr")
    } else if l.starts_with("bc1q") || l.starts_with("tb1q") {
        (format!("0014{}", "ab".repeat(20)), "v0_p2wpkh")
    } else if address.starts_with('3') || address.starts_with('2') {
        (format!("a914{}87", "ab".repeat(20)), "p2sh")
    } else {
        (format!("76a914{}88ac", "ab".repeat(20)), "p2pkh")
    }
}

pub(super) async fn tx(State(state): State<Shared>, Path(txid): Path<String>) -> Response {
    if let Some(f) = begin(&state, format!("/tx/{txid}")) {
        return f;
    }
    let s = lock(&state);
    let Some(e) = s.txs.get(&txid.to_lowercase()) else {
        return (StatusCode::NOT_FOUND, "Transaction not found").into_response();
    };
    if let Some(raw) = &e.raw {
        return ([("content-type", "application/json")], raw.clone()).into_response();
    }
    Json(tx_json(&s, &txid.to_lowercase(), e)).into_response()
}

/// A transaction as Esplora serves it.
fn tx_json(s: &EsploraState, txid: &str, e: &Entry) -> Value {
    let vout: Vec<Value> = e
        .outputs
        .iter()
        .map(|o| {
            let (spk, kind) = script(&o.address);
            json!({"scriptpubkey": spk, "scriptpubkey_asm": "OP_0 OP_PUSHBYTES_20", "scriptpubkey_type": kind,
                   "scriptpubkey_address": o.address, "value": o.sats})
        })
        .collect();
    let status = match confirmed(s, e) {
        Some(b) => {
            let hash = e.cited.clone().unwrap_or_else(|| block_hash(s, b));
            json!({"confirmed": true, "block_height": b, "block_hash": hash,
                   "block_time": s.genesis + b * BLOCK_SECONDS})
        }
        None => json!({"confirmed": false}),
    };
    json!({
        "txid": txid,
        "version": 2,
        "locktime": 0,
        "vin": [{"txid": "9f".repeat(32), "vout": 1, "prevout": {"scriptpubkey": "0014cd", "scriptpubkey_type": "v0_p2wpkh",
                 "scriptpubkey_address": e.spends.as_deref().unwrap_or("bc1qxy2kgdygjrsqtzq2n0yrf2493p83kkfjhx0wlh"), "value": e.spent},
                 "scriptsig": "", "scriptsig_asm": "", "witness": ["3044", "02ab"], "is_coinbase": false, "sequence": 4_294_967_293u64}],
        "vout": vout,
        "size": 222,
        "weight": 561,
        "fee": e.spent.saturating_sub(e.outputs.iter().map(|o| o.sats).sum::<u64>()),
        "status": status,
    })
}

/// The block a transaction is confirmed in, if it is at or below the tip.
pub(super) fn confirmed(s: &EsploraState, e: &Entry) -> Option<u64> {
    e.block.filter(|b| *b <= s.tip)
}

/// Transactions by id, in a history's order.
type Listed<'a> = Vec<(&'a str, &'a Entry)>;

/// The address's transactions (well-formed ones), newest first: the mempool's, then the
/// confirmed by height and arrival, both descending.
pub(super) fn history<'a>(s: &'a EsploraState, address: &str) -> (Listed<'a>, Listed<'a>) {
    let mut mempool = Vec::new();
    let mut chain = Vec::new();
    for (id, e) in &s.txs {
        let pays = e.outputs.iter().any(|o| o.address == address);
        if e.raw.is_some() || e.unlisted || !(pays || e.spends.as_deref() == Some(address)) {
            continue;
        }
        match confirmed(s, e) {
            Some(_) => chain.push((id.as_str(), e)),
            None => mempool.push((id.as_str(), e)),
        }
    }
    mempool.sort_by_key(|(_, e)| std::cmp::Reverse(e.seq));
    chain.sort_by_key(|(_, e)| std::cmp::Reverse((e.block, e.seq)));
    (mempool, chain)
}

/// `GET /address/:address`: what its confirmed (`chain_stats`) and mempool transactions
/// funded and spent, in satoshis.
pub(super) async fn address_stats(
    State(state): State<Shared>,
    Path(address): Path<String>,
) -> Response {
    if let Some(f) = begin(&state, format!("/address/{address}")) {
        return f;
    }
    let s = lock(&state);
    let mut stats = [[0u64; 5]; 2]; // [chain, mempool] × funded count/sum, spent count/sum, txs
    for e in s.txs.values().filter(|e| e.raw.is_none()) {
        let at = usize::from(confirmed(&s, e).is_none());
        let paid: Vec<u64> = e
            .outputs
            .iter()
            .filter(|o| o.address == address)
            .map(|o| o.sats)
            .collect();
        let spends = e.spends.as_deref() == Some(address.as_str());
        stats[at][0] += paid.len() as u64;
        stats[at][1] += paid.iter().sum::<u64>();
        if spends {
            stats[at][2] += 1;
            stats[at][3] += e.spent;
        }
        stats[at][4] += u64::from(spends || !paid.is_empty());
    }
    let of = |v: [u64; 5]| {
        json!({"funded_txo_count": v[0], "funded_txo_sum": v[1], "spent_txo_count": v[2],
               "spent_txo_sum": v[3], "tx_count": v[4]})
    };
    Json(json!({"address": address, "chain_stats": of(stats[0]), "mempool_stats": of(stats[1])}))
        .into_response()
}

pub(super) async fn address_txs(
    State(state): State<Shared>,
    Path(address): Path<String>,
) -> Response {
    if let Some(f) = begin(&state, format!("/address/{address}/txs")) {
        return f;
    }
    let mut s = lock(&state);
    if let Some((status, raw)) = s.raw_history.pop_front() {
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
        return (status, [("content-type", "text/html")], raw).into_response();
    }
    let (mempool, chain) = history(&s, &address);
    let page: Vec<Value> = mempool
        .into_iter()
        .take(50)
        .chain(chain.into_iter().take(CHAIN_PAGE))
        .map(|(id, e)| tx_json(&s, id, e))
        .collect();
    Json(page).into_response()
}

pub(super) async fn address_chain(
    State(state): State<Shared>,
    Path((address, last)): Path<(String, String)>,
) -> Response {
    if let Some(f) = begin(&state, format!("/address/{address}/txs/chain/{last}")) {
        return f;
    }
    let s = lock(&state);
    let (_, chain) = history(&s, &address);
    // electrs answers `[]` for a txid it does not know in the history (dropped by a reorg).
    let Some(at) = chain.iter().position(|(id, _)| *id == last.to_lowercase()) else {
        return Json(Vec::<Value>::new()).into_response();
    };
    let page: Vec<Value> = chain[at + 1..]
        .iter()
        .take(CHAIN_PAGE)
        .map(|(id, e)| tx_json(&s, id, e))
        .collect();
    Json(page).into_response()
}

pub(super) async fn block_status(
    State(state): State<Shared>,
    Path(hash): Path<String>,
) -> Response {
    if let Some(f) = begin(&state, format!("/block/{hash}/status")) {
        return f;
    }
    let s = lock(&state);
    let best = !s.stale.contains(&hash.to_lowercase());
    Json(json!({"in_best_chain": best})).into_response()
}
