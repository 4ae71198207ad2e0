//! The sandbox EVM node for tests: the demo's (`payrecon_sandbox::chain`: blocks, receipts,
//! transactions, the demo's world) behind a front door of ours: HTTP requests and JSON-RPC
//! calls counted, latency, the next requests (or every batch carrying a given method) failed
//! with 500, and the `finalized` and `safe` tags answered as an older node does. Its transfers
//! take and give payrecon's domain types (`Address`, `TxHash`), where the sandbox crate's
//! speak alloy's.

use std::io;
use std::ops::Deref;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use alloy::primitives::{Address as EvmAddress, B256, U256};
use axum::body::{to_bytes, Body, Bytes};
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use payrecon::domain::{Address, TxHash};
use serde_json::{json, Value};

pub use payrecon_sandbox::chain::{TRANSFER_TOPIC, TX_FEE_WEI};

/// How the node answers the `finalized` and `safe` block tags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tags {
    /// head - 64 and head - 32, like anvil (the sandbox crate's node).
    Served,
    /// `null`, like a node that has no such block.
    Null,
    /// A JSON-RPC error (-32602), like a node that does not know the tag.
    Refused,
}

/// A sandbox chain. Clones share the same state and server; it derefs to the sandbox crate's
/// chain (blocks, serving), its transfers here in payrecon's domain types.
#[derive(Clone)]
pub struct SandboxChain {
    chain: payrecon_sandbox::chain::SandboxChain,
    door: Arc<Door>,
}

impl Deref for SandboxChain {
    type Target = payrecon_sandbox::chain::SandboxChain;
    fn deref(&self) -> &Self::Target {
        &self.chain
    }
}

struct Door {
    /// HTTP requests answered (a batch counts once).
    requests: AtomicU64,
    /// JSON-RPC calls answered (each entry of a batch counts).
    calls: AtomicU64,
    /// HTTP requests still to fail with 500.
    fail_next: AtomicU64,
    /// Delay before each HTTP answer, in microseconds.
    latency_us: AtomicU64,
    tags: Mutex<Tags>,
    /// Batches carrying a call of this method fail with 500.
    fail_batches_of: Mutex<Option<String>>,
}

impl SandboxChain {
    /// An empty chain (genesis block 0 only) with `finalized` = head - 64, `safe` = head - 32.
    pub fn new(chain_id: u64) -> SandboxChain {
        SandboxChain::wrap(payrecon_sandbox::chain::SandboxChain::new(chain_id))
    }

    /// As `new`, its genesis block at `genesis_time` (Unix seconds), the next ones 12 s apart.
    pub fn starting_at(chain_id: u64, genesis_time: u64) -> SandboxChain {
        let chain = payrecon_sandbox::chain::SandboxChain::starting_at(chain_id, genesis_time);
        SandboxChain::wrap(chain)
    }

    fn wrap(chain: payrecon_sandbox::chain::SandboxChain) -> SandboxChain {
        SandboxChain {
            chain,
            door: Arc::new(Door {
                requests: AtomicU64::new(0),
                calls: AtomicU64::new(0),
                fail_next: AtomicU64::new(0),
                latency_us: AtomicU64::new(0),
                tags: Mutex::new(Tags::Served),
                fail_batches_of: Mutex::new(None),
            }),
        }
    }

    /// Starts serving on `127.0.0.1:0` (once; later calls return the same URL) until the last
    /// clone is dropped. Returns the JSON-RPC URL.
    pub async fn serve(&self) -> io::Result<String> {
        let door = self.door.clone();
        self.chain
            .serve_wrapped(|routes| routes.layer(middleware::from_fn_with_state(door, front_door)))
            .await
    }

    /// How the node answers the `finalized` and `safe` tags (to play an older node).
    pub fn set_tags(&self, tags: Tags) {
        *lock(&self.door.tags) = tags;
    }

    /// Delay added before each HTTP answer.
    pub fn set_latency(&self, latency: Duration) {
        let us = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        self.door.latency_us.store(us, Ordering::Relaxed);
    }

    /// The next `n` HTTP requests fail with status 500.
    pub fn fail_next(&self, n: u64) {
        self.door.fail_next.store(n, Ordering::SeqCst);
    }

    /// Every JSON-RPC batch that carries a call of `method` fails with status 500 from now on
    /// (`None`: none); single calls are answered (e.g. block times read in a batch, while the
    /// head's block is read alone).
    pub fn fail_batches_of(&self, method: Option<&str>) {
        *lock(&self.door.fail_batches_of) = method.map(str::to_string);
    }

    /// HTTP requests answered so far (a batch counts once; injected failures count).
    pub fn requests(&self) -> u64 {
        self.door.requests.load(Ordering::SeqCst)
    }

    /// JSON-RPC calls answered so far (each entry of a batch counts).
    pub fn calls(&self) -> u64 {
        self.door.calls.load(Ordering::SeqCst)
    }
}

/// The sandbox crate's transfers, in payrecon's domain types (see it for what each does).
impl SandboxChain {
    pub fn fund_native(&self, holder: &Address, value: U256) {
        self.chain.fund_native(evm(holder), value);
    }

    pub fn fund_token(&self, contract: &Address, holder: &Address, amount: U256) {
        self.chain.fund_token(evm(contract), evm(holder), amount);
    }

    pub fn add_internal_transfer(
        &self,
        from: &Address,
        contract: &Address,
        to: &Address,
        value: U256,
    ) -> TxHash {
        tx_hash(
            self.chain
                .add_internal_transfer(evm(from), evm(contract), evm(to), value),
        )
    }

    pub fn add_token_transfer(
        &self,
        contract: &Address,
        from: &Address,
        to: &Address,
        amount: U256,
    ) -> (TxHash, i64) {
        let (tx, log_index) =
            self.chain
                .add_token_transfer(evm(contract), evm(from), evm(to), amount);
        (tx_hash(tx), log_index)
    }

    pub fn add_token_transfers(
        &self,
        contract: &Address,
        from: &Address,
        payments: &[(Address, U256)],
    ) -> Vec<(TxHash, i64)> {
        let payments: Vec<(EvmAddress, U256)> =
            payments.iter().map(|(to, a)| (evm(to), *a)).collect();
        self.chain
            .add_token_transfers(evm(contract), evm(from), &payments)
            .into_iter()
            .map(|(tx, log_index)| (tx_hash(tx), log_index))
            .collect()
    }

    pub fn add_nft_transfer(
        &self,
        contract: &Address,
        from: &Address,
        to: &Address,
        token_id: U256,
    ) -> (TxHash, i64) {
        let (tx, log_index) =
            self.chain
                .add_nft_transfer(evm(contract), evm(from), evm(to), token_id);
        (tx_hash(tx), log_index)
    }

    pub fn add_native_transfer(&self, from: &Address, to: &Address, value: U256) -> TxHash {
        tx_hash(self.chain.add_native_transfer(evm(from), evm(to), value))
    }

    pub fn add_reverted(
        &self,
        contract: &Address,
        from: &Address,
        to: &Address,
        amount: U256,
    ) -> TxHash {
        tx_hash(
            self.chain
                .add_reverted(evm(contract), evm(from), evm(to), amount),
        )
    }

    pub fn block_of(&self, tx: &TxHash) -> Option<u64> {
        self.chain.block_of(tx.as_str().parse().ok()?)
    }
}

fn evm(a: &Address) -> EvmAddress {
    a.as_str()
        .parse()
        .expect("an EVM address on the sandbox chain")
}

fn tx_hash(h: B256) -> TxHash {
    TxHash::parse(&format!("{h:#x}")).expect("32 bytes always make a tx hash")
}

/// A poisoned lock only means another thread panicked mid-update of test state: go on.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Every request: counted, latency, an injected failure, calls counted, the tags answered as
/// set, the rest by the sandbox crate's node.
async fn front_door(State(door): State<Arc<Door>>, req: Request, next: Next) -> Response {
    door.requests.fetch_add(1, Ordering::SeqCst);
    let latency = door.latency_us.load(Ordering::Relaxed);
    if latency > 0 {
        tokio::time::sleep(Duration::from_micros(latency)).await;
    }
    let failing = door
        .fail_next
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok();
    if failing {
        return (
            StatusCode::INTERNAL_SERVER_ERROR,
            "sandbox: injected failure",
        )
            .into_response();
    }
    let (parts, body) = req.into_parts();
    let Ok(body) = to_bytes(body, usize::MAX).await else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let parsed = serde_json::from_slice::<Value>(&body).ok();
    if let (Some(m), Some(Value::Array(calls))) = (&*lock(&door.fail_batches_of), &parsed) {
        if calls.iter().any(|c| c["method"] == m.as_str()) {
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                "sandbox: injected failure",
            )
                .into_response();
        }
    }
    door.calls
        .fetch_add(call_count(parsed.as_ref()), Ordering::SeqCst);
    let tags = *lock(&door.tags);
    let forward = |body: Bytes| next.run(Request::from_parts(parts, Body::from(body)));
    match (tags, parsed) {
        (Tags::Served, _) | (_, None) => forward(body).await,
        (tags, Some(parsed)) => answer_tags(tags, parsed, body, forward).await,
    }
}

/// JSON-RPC calls in a request body (0 for one that does not parse or an empty batch).
fn call_count(parsed: Option<&Value>) -> u64 {
    match parsed {
        None => 0,
        Some(Value::Array(calls)) => calls.len() as u64,
        Some(_) => 1,
    }
}

/// The `finalized`/`safe` calls answered here, the others by the node, in the request's order.
async fn answer_tags<F: std::future::Future<Output = Response>>(
    tags: Tags,
    parsed: Value,
    body: Bytes,
    forward: impl FnOnce(Bytes) -> F,
) -> Response {
    let batch = parsed.is_array();
    let calls = match parsed {
        Value::Array(calls) => calls,
        single => vec![single],
    };
    let mine: Vec<Option<Value>> = calls.iter().map(|c| tag_answer(tags, c)).collect();
    if mine.iter().all(Option::is_none) {
        return forward(body).await;
    }
    let rest: Vec<&Value> = calls
        .iter()
        .zip(&mine)
        .filter(|(_, m)| m.is_none())
        .map(|(c, _)| c)
        .collect();
    let mut theirs = Vec::new().into_iter();
    if !rest.is_empty() {
        let resp = forward(Bytes::from(json!(rest).to_string())).await;
        let Ok(bytes) = to_bytes(resp.into_body(), usize::MAX).await else {
            return StatusCode::BAD_GATEWAY.into_response();
        };
        let Ok(Value::Array(answers)) = serde_json::from_slice::<Value>(&bytes) else {
            return StatusCode::BAD_GATEWAY.into_response();
        };
        theirs = answers.into_iter();
    }
    let mut answers: Vec<Value> = mine
        .into_iter()
        .map(|m| m.or_else(|| theirs.next()).unwrap_or(Value::Null))
        .collect();
    let reply = if batch {
        Value::Array(answers)
    } else {
        answers.remove(0)
    };
    axum::Json(reply).into_response()
}

/// This node's answer to `eth_getBlockByNumber` on `finalized` or `safe`; None for any other
/// call.
fn tag_answer(tags: Tags, call: &Value) -> Option<Value> {
    let tagged = call.get("method").and_then(Value::as_str) == Some("eth_getBlockByNumber")
        && matches!(
            call.pointer("/params/0").and_then(Value::as_str),
            Some("finalized" | "safe")
        );
    if !tagged {
        return None;
    }
    let id = call.get("id").cloned().unwrap_or(Value::Null);
    Some(match tags {
        Tags::Served => return None,
        Tags::Null => json!({"jsonrpc": "2.0", "id": id, "result": null}),
        Tags::Refused => {
            let tag = call.pointer("/params/0").cloned().unwrap_or(Value::Null);
            json!({"jsonrpc": "2.0", "id": id,
                   "error": {"code": -32602, "message": format!("unknown block tag {tag}")}})
        }
    })
}
