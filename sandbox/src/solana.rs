//! A sandbox Solana node on loopback (docs/configuration.md, "Solana"): the demo's Solana
//! chain, and for the tests what a real local cluster cannot do on request: forget a signature
//! (its fork dropped before `finalized`), keep a signature's status after pruning its
//! transaction, answer 429 with `Retry-After`. It answers Solana's JSON-RPC as documented
//! (single calls and batches) for the methods payrecon sends: `getSlot`,
//! `getSignatureStatuses`, `getTransaction` (`jsonParsed` shapes), `getSignaturesForAddress`
//! (newest first, `before`, `until`, `limit`), `getTokenAccountsByOwner`, `getBlockTime`. Token
//! accounts are derived from their owner and mint. Counts HTTP requests and calls by method.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};

use sha3::{Digest, Keccak256};

const SYSTEM: &str = "11111111111111111111111111111111";
const TOKEN: &str = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA";
/// Every slot's time: a minute ago (inside any run's window).
fn block_time() -> i64 {
    jiff::Timestamp::now().as_second() - 60
}

#[derive(Default)]
struct Node {
    confirmed: u64,
    finalized: u64,
    /// signature → (slot, transaction JSON without `slot`)
    txs: HashMap<String, (u64, Value)>,
    /// Signatures whose transaction is pruned: a status, no transaction.
    pruned: Vec<String>,
    /// address → signatures, oldest first.
    lists: HashMap<String, Vec<String>>,
    /// Requests still to refuse with 429.
    refuse: u32,
    /// owner → (token account, mint)
    accounts: HashMap<String, Vec<(String, String)>>,
    /// Calls by method; HTTP requests (a batch counts once); batches.
    calls: HashMap<String, u64>,
    requests: u64,
    batches: u64,
    refused: u64,
    /// When the last refusal was sent, and how long after it the next request came.
    refused_at: Option<std::time::Instant>,
    retried_after: Option<std::time::Duration>,
}

type Shared = Arc<Mutex<Node>>;

fn lock(s: &Shared) -> MutexGuard<'_, Node> {
    s.lock().unwrap_or_else(|p| p.into_inner())
}

pub struct SandboxSolana {
    state: Shared,
    pub url: String,
}

impl SandboxSolana {
    /// Serves on a free loopback port; confirmed slot 1,000, finalized 968.
    pub async fn start() -> std::io::Result<SandboxSolana> {
        let state: Shared = Arc::new(Mutex::new(Node {
            confirmed: 1_000,
            finalized: 968,
            ..Node::default()
        }));
        let app = Router::new()
            .route("/", post(rpc))
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        tokio::spawn(async move { axum::serve(listener, app).await });
        Ok(SandboxSolana { state, url })
    }

    /// A SOL transfer of `lamports` from `from` to `to` (top-level instruction 0) in `slot`,
    /// listed on both addresses; the signature is `sig`.
    pub fn pay_sol(&self, sig: &str, slot: u64, from: &str, to: &str, lamports: u64) {
        let tx = json!({
            "blockTime": block_time(),
            "meta": {"err": null, "fee": 5000, "preBalances": [10_000_000_000u64, 0, 1],
                     "postBalances": [10_000_000_000u64 - lamports - 5000, lamports, 1],
                     "innerInstructions": [], "preTokenBalances": [], "postTokenBalances": []},
            "transaction": {"signatures": [sig], "message": {
                "accountKeys": [{"pubkey": from}, {"pubkey": to}, {"pubkey": SYSTEM}],
                "instructions": [{"programId": SYSTEM, "program": "system", "parsed": {
                    "type": "transfer",
                    "info": {"source": from, "destination": to, "lamports": lamports}}}]}}
        });
        let mut s = lock(&self.state);
        s.txs.insert(sig.to_string(), (slot, tx));
        for a in [from, to] {
            s.lists
                .entry(a.to_string())
                .or_default()
                .push(sig.to_string());
        }
    }

    /// `owner`'s token account for `mint` (derived from both, created when first asked).
    pub fn token_account(&self, owner: &str, mint: &str) -> String {
        let mut h = Keccak256::new();
        h.update(owner.as_bytes());
        h.update(mint.as_bytes());
        let account = base58(&h.finalize());
        let mut s = lock(&self.state);
        let list = s.accounts.entry(owner.to_string()).or_default();
        if !list.iter().any(|(a, _)| *a == account) {
            list.push((account.clone(), mint.to_string()));
        }
        account
    }

    /// A `transferChecked` of `amount` of `mint` (`decimals`) from `from`'s token account to
    /// `to`'s (top-level instruction 0), carrying `reference` when given, in `slot`; listed on
    /// `from`, both token accounts and the reference (not on `to`, as on a real cluster).
    #[allow(clippy::too_many_arguments)]
    pub fn pay_token(
        &self,
        sig: &str,
        slot: u64,
        from: &str,
        to: &str,
        mint: &str,
        decimals: u8,
        amount: u64,
        reference: Option<&str>,
    ) {
        let (src, dst) = (self.token_account(from, mint), self.token_account(to, mint));
        let balance = |i: u64, owner: &str, v: u64| {
            json!({"accountIndex": i, "mint": mint, "owner": owner, "programId": TOKEN,
                   "uiTokenAmount": {"amount": v.to_string(), "decimals": decimals}})
        };
        let mut keys = vec![
            json!({"pubkey": from}),
            json!({"pubkey": src}),
            json!({"pubkey": dst}),
            json!({"pubkey": TOKEN}),
        ];
        keys.extend(reference.map(|r| json!({"pubkey": r})));
        let tx = json!({
            "blockTime": block_time(),
            "meta": {"err": null, "fee": 5000, "preBalances": [1_000_000_000u64, 2_039_280, 2_039_280, 1],
                     "postBalances": [999_995_000u64, 2_039_280, 2_039_280, 1],
                     "innerInstructions": [],
                     "preTokenBalances": [balance(1, from, amount * 10), balance(2, to, 0)],
                     "postTokenBalances": [balance(1, from, amount * 9), balance(2, to, amount)]},
            "transaction": {"signatures": [sig], "message": {
                "accountKeys": keys,
                "instructions": [{"programId": TOKEN, "program": "spl-token", "parsed": {
                    "type": "transferChecked",
                    "info": {"source": src, "destination": dst, "mint": mint, "authority": from,
                             "tokenAmount": {"amount": amount.to_string(), "decimals": decimals}}}}]}}
        });
        let mut s = lock(&self.state);
        s.txs.insert(sig.to_string(), (slot, tx));
        for a in [
            Some(from),
            Some(src.as_str()),
            Some(dst.as_str()),
            reference,
        ]
        .into_iter()
        .flatten()
        {
            s.lists
                .entry(a.to_string())
                .or_default()
                .push(sig.to_string());
        }
    }

    /// The cluster forgets `sig` (its fork was dropped): no status, no transaction, unlisted.
    pub fn forget(&self, sig: &str) {
        let mut s = lock(&self.state);
        s.txs.remove(sig);
        for list in s.lists.values_mut() {
            list.retain(|x| x != sig);
        }
    }

    /// `sig` keeps its status, but its transaction is pruned from the node's history.
    pub fn prune(&self, sig: &str) {
        lock(&self.state).pruned.push(sig.to_string());
    }

    /// Moves both commitment levels forward by `n` slots.
    pub fn advance(&self, n: u64) {
        let mut s = lock(&self.state);
        s.confirmed += n;
        s.finalized += n;
    }

    /// The next `n` HTTP requests are answered 429 with `Retry-After: 1`.
    pub fn refuse(&self, n: u32) {
        lock(&self.state).refuse = n;
    }

    /// Calls of `method` so far (in batches or alone).
    pub fn calls(&self, method: &str) -> u64 {
        lock(&self.state).calls.get(method).copied().unwrap_or(0)
    }

    /// How long after the last 429 the next request came.
    pub fn retried_after(&self) -> Option<std::time::Duration> {
        lock(&self.state).retried_after
    }

    /// HTTP requests, batch requests among them, and requests refused with 429.
    pub fn requests(&self) -> (u64, u64, u64) {
        let s = lock(&self.state);
        (s.requests, s.batches, s.refused)
    }
}

async fn rpc(State(state): State<Shared>, Json(body): Json<Value>) -> Response {
    let mut s = lock(&state);
    s.requests += 1;
    if let Some(at) = s.refused_at.take() {
        s.retried_after = Some(at.elapsed());
    }
    if s.refuse > 0 {
        s.refuse -= 1;
        s.refused += 1;
        s.refused_at = Some(std::time::Instant::now());
        let mut h = HeaderMap::new();
        h.insert("retry-after", axum::http::HeaderValue::from_static("1"));
        let body = json!({"jsonrpc": "2.0", "id": null,
            "error": {"code": 429, "message": "Too many requests for a specific RPC call"}});
        return (StatusCode::TOO_MANY_REQUESTS, h, Json(body)).into_response();
    }
    let mut one = |req: &Value| {
        let method = req["method"].as_str().unwrap_or_default().to_string();
        *s.calls.entry(method.clone()).or_default() += 1;
        let id = req["id"].clone();
        match call(&s, &method, &req["params"]) {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err((code, message)) => {
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
            }
        }
    };
    let answer = match &body {
        Value::Array(reqs) => Value::Array(reqs.iter().map(&mut one).collect()),
        req => one(req),
    };
    if body.is_array() {
        s.batches += 1;
    }
    Json(answer).into_response()
}

/// Base58 of `bytes` (a signature is 64 bytes).
pub fn base58(bytes: &[u8]) -> String {
    bs58::encode(bytes).into_string()
}

fn status(s: &Node, slot: u64) -> &'static str {
    if slot <= s.finalized {
        "finalized"
    } else if slot <= s.confirmed {
        "confirmed"
    } else {
        "processed"
    }
}

fn call(s: &Node, method: &str, params: &Value) -> Result<Value, (i64, String)> {
    match method {
        "getSlot" => Ok(match params[0]["commitment"].as_str() {
            Some("finalized") | None => json!(s.finalized),
            _ => json!(s.confirmed),
        }),
        "getSignatureStatuses" => {
            let sigs = params[0].as_array().cloned().unwrap_or_default();
            let value: Vec<Value> = sigs
                .iter()
                .map(|sig| match s.txs.get(sig.as_str().unwrap_or_default()) {
                    Some((slot, _)) => json!({"slot": slot, "confirmations": null,
                        "err": null, "status": {"Ok": null},
                        "confirmationStatus": status(s, *slot)}),
                    None => Value::Null,
                })
                .collect();
            Ok(json!({"context": {"slot": s.confirmed}, "value": value}))
        }
        "getTransaction" => {
            let sig = params[0].as_str().unwrap_or_default();
            if s.pruned.iter().any(|p| p == sig) {
                return Ok(Value::Null);
            }
            Ok(match s.txs.get(sig) {
                Some((slot, tx)) => {
                    let mut tx = tx.clone();
                    tx["slot"] = json!(slot);
                    tx
                }
                None => Value::Null,
            })
        }
        "getSignaturesForAddress" => {
            let list = s.lists.get(params[0].as_str().unwrap_or_default());
            let limit = params[1]["limit"].as_u64().unwrap_or(1000) as usize;
            let before = params[1]["before"].as_str();
            let until = params[1]["until"].as_str();
            let mut out = Vec::new();
            let mut open = before.is_none();
            for sig in list.into_iter().flatten().rev() {
                if Some(sig.as_str()) == until {
                    break;
                }
                if !open {
                    open = Some(sig.as_str()) == before;
                    continue;
                }
                let slot = s.txs.get(sig).map_or(0, |t| t.0);
                out.push(
                    json!({"signature": sig, "slot": slot, "err": null, "memo": null,
                    "blockTime": block_time(), "confirmationStatus": status(s, slot)}),
                );
                if out.len() == limit {
                    break;
                }
            }
            Ok(Value::Array(out))
        }
        "getTokenAccountsByOwner" => {
            let owner = params[0].as_str().unwrap_or_default();
            let program = params[1]["programId"].as_str();
            let value: Vec<Value> = s
                .accounts
                .get(owner)
                .into_iter()
                .flatten()
                .filter(|_| program.is_none_or(|p| p == TOKEN))
                .map(|(account, mint)| {
                    json!({"pubkey": account, "account": {
                    "owner": TOKEN, "lamports": 2_039_280, "data": {"program": "spl-token",
                    "parsed": {"type": "account", "info": {"mint": mint, "owner": owner}}}}})
                })
                .collect();
            Ok(json!({"context": {"slot": s.confirmed}, "value": value}))
        }
        "getBlockTime" => Ok(json!(block_time())),
        other => Err((-32601, format!("Method not found: {other}"))),
    }
}
