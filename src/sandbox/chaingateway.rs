//! A fake Chaingateway API v2 on loopback for the demo, benchmarks and tests: the
//! notification lists with Laravel pagination, the failed list, resend and block number,
//! a bearer token and `X-Network` check, per-request latency, a queue of injected faults,
//! and list changes made after the k-th page served (the list moving while it is read).
//!
//! Records are kept serialized, in a `Vec` per chain (pages are slices; ids are indexed), so
//! 100,000+ records serve in O(page) time and about their JSON size in memory.

mod lists;
mod server;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{json, Value};

use lists::ChainData;

/// Chain path names the fake answers for without any setup.
const KNOWN_CHAINS: &[&str] = &["ethereum", "bsc", "polygon", "tron", "bitcoin"];

/// An injected fault, consumed by the next authenticated request (any path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// 500 with a Laravel error body.
    ServerError,
    /// 503 (maintenance mode).
    Unavailable,
    /// 429 with `Retry-After: secs`.
    TooManyRequests { retry_after_secs: u64 },
    /// Waits this long, then answers normally (past the client's timeout).
    Hang(Duration),
    /// 200 with a truncated JSON body.
    MalformedJson,
    /// 200 with JSON that has no `data`.
    MissingData,
    /// The connection is dropped before a complete response.
    CloseConnection,
    /// 400 whose body echoes the request headers (the `Authorization` too), to test that
    /// error messages redact the key.
    EchoHeaders,
}

/// A change to a chain's lists, made by the fake itself once a number of pages were served
/// (`change_after_pages`): the list moves while a client reads it.
#[derive(Debug, Clone, PartialEq)]
pub enum ListChange {
    /// These records go to the head of the list, in this order: Laravel pages by offset, so
    /// every record already there moves further down (seen twice, or past the last page).
    InsertAtHead(Vec<Value>),
    /// These records go to the end of the list (its newest, as Chaingateway lists them).
    Append(Vec<Value>),
    /// These ids leave the list (and the failed list): every record after them moves up.
    Remove(Vec<String>),
    /// These known ids go on the failed list.
    MarkFailed(Vec<String>),
    /// These ids leave the failed list (a delivery that succeeded meanwhile).
    UnmarkFailed(Vec<String>),
}

/// How `blocks/number` spells its `data` on a chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockShape {
    /// `"data": 19151363` (bsc, ethereum, polygon).
    Integer,
    /// `"data": {"blocknumber": 44776190}` (tron).
    Object,
    /// `"data": {"blocknumber": "44776190"}`.
    ObjectString,
}

/// The server's handle: configure it, read what it saw. Dropping it stops the server.
pub struct FakeChaingateway {
    inner: Arc<Inner>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeChaingateway {
    fn drop(&mut self) {
        self.task.abort();
    }
}

struct Inner {
    api_key: String,
    /// `http://127.0.0.1:PORT/api/v2`.
    base_url: String,
    state: Mutex<State>,
    requests: AtomicU64,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
}

struct State {
    network: String,
    per_page: usize,
    latency: Duration,
    faults: VecDeque<Fault>,
    chains: HashMap<String, ChainData>,
    retries: Vec<(String, String)>,
    /// Pages of either list served so far (faults not included).
    pages_served: u64,
    /// `(after this many pages, chain, change)`, not made yet.
    changes: Vec<(u64, String, ListChange)>,
    /// Changes made because their page count was reached (not by `flush_changes`).
    changes_fired: u64,
    /// The notifications list is served last record first (newest first).
    newest_first: bool,
}

impl FakeChaingateway {
    /// Starts the server on `127.0.0.1:0`; returns its handle and base URL
    /// (`http://127.0.0.1:PORT/api/v2`). Expects network `mainnet` and 15 records a page.
    pub async fn start(api_key: &str) -> (FakeChaingateway, String) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port for the fake Chaingateway");
        let addr = listener.local_addr().expect("local address");
        let base_url = format!("http://{addr}/api/v2");
        let inner = Arc::new(Inner {
            api_key: api_key.to_string(),
            base_url: base_url.clone(),
            state: Mutex::new(State {
                network: "mainnet".into(),
                per_page: 15,
                latency: Duration::ZERO,
                faults: VecDeque::new(),
                chains: HashMap::new(),
                retries: Vec::new(),
                pages_served: 0,
                changes: Vec::new(),
                changes_fired: 0,
                newest_first: false,
            }),
            requests: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
        });
        let app = server::router(inner.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        (FakeChaingateway { inner, task }, base_url)
    }

    pub fn base_url(&self) -> &str {
        &self.inner.base_url
    }

    /// Adds a record (any JSON, well-formed or not) at the end of the chain's list; a record
    /// whose `id` already exists replaces it in place.
    pub fn add_notification(&self, chain: &str, record: Value) {
        let mut state = self.state();
        state
            .chains
            .entry(chain.to_string())
            .or_default()
            .push(record);
    }

    /// Puts a known notification on the failed list (once). Returns false for an unknown id.
    pub fn mark_failed(&self, chain: &str, id: &str) -> bool {
        let mut state = self.state();
        state.chains.get_mut(chain).is_some_and(|d| d.mark(id))
    }

    /// Takes a notification off the failed list (as a successful resend would).
    pub fn unmark_failed(&self, chain: &str, id: &str) {
        if let Some(data) = self.state().chains.get_mut(chain) {
            data.unmark(id);
        }
    }

    /// Makes `change` on `chain` right after the `after`-th page (of either list, counted
    /// from the start) has been served; at once when that many were served already.
    pub fn change_after_pages(&self, after: u64, chain: &str, change: ListChange) {
        let mut state = self.state();
        state.changes.push((after, chain.to_string(), change));
        state.apply_due_changes();
    }

    /// Makes every change still waiting (the simulator's "faults stop"); returns how many.
    pub fn flush_changes(&self) -> usize {
        let mut state = self.state();
        let pending = std::mem::take(&mut state.changes);
        let n = pending.len();
        for (_, chain, change) in pending {
            state.chains.entry(chain).or_default().apply(change);
        }
        n
    }

    /// Pages of either list served so far.
    pub fn pages_served(&self) -> u64 {
        self.state().pages_served
    }

    /// Changes made because their page count was reached while a client was paging.
    pub fn changes_fired(&self) -> u64 {
        self.state().changes_fired
    }

    pub fn set_block_number(&self, chain: &str, number: u64, shape: BlockShape) {
        let mut state = self.state();
        state.chains.entry(chain.to_string()).or_default().block = Some((number, shape));
    }

    /// The `X-Network` value the fake accepts (a missing header means `mainnet`).
    pub fn set_network(&self, network: &str) {
        self.state().network = network.to_string();
    }

    /// Serves the notifications list last record first: a record added with
    /// `add_notification` (or `ListChange::Append`) appears at the head of page 1, and every
    /// other moves down (the failed list keeps its order).
    pub fn set_newest_first(&self, newest_first: bool) {
        self.state().newest_first = newest_first;
    }

    /// Removes these ids from the chain's lists (every record after them moves up a place).
    pub fn remove_notifications(&self, chain: &str, ids: &[&str]) {
        if let Some(data) = self.state().chains.get_mut(chain) {
            data.remove(&ids.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        }
    }

    /// Records a page.
    pub fn per_page(&self) -> usize {
        self.state().per_page
    }

    /// Notifications on the chain's failed list.
    pub fn failed_count(&self, chain: &str) -> usize {
        self.state().chains.get(chain).map_or(0, |d| d.failed.len())
    }

    /// Records in the chain's notifications list.
    pub fn notification_count(&self, chain: &str) -> usize {
        self.state()
            .chains
            .get(chain)
            .map_or(0, |d| d.records.len())
    }

    pub fn set_per_page(&self, per_page: usize) {
        self.state().per_page = per_page.max(1);
    }

    /// Added before every answer.
    pub fn set_latency(&self, latency: Duration) {
        self.state().latency = latency;
    }

    /// Queues `fault` for the next `times` requests (after those already queued).
    pub fn push_fault(&self, fault: Fault, times: usize) {
        let mut state = self.state();
        state.faults.extend(std::iter::repeat_n(fault, times));
    }

    /// Drops every queued fault (the simulator's "faults stop"); returns how many were left.
    pub fn clear_faults(&self) -> usize {
        let mut state = self.state();
        let n = state.faults.len();
        state.faults.clear();
        n
    }

    /// `(chain, id)` of every resend answered 200, in order.
    pub fn retries(&self) -> Vec<(String, String)> {
        self.state().retries.clone()
    }

    /// Requests received (all paths, faults and refusals included).
    pub fn requests(&self) -> u64 {
        self.inner.requests.load(Ordering::SeqCst)
    }

    /// Most requests in progress at one time since the start or the last reset.
    pub fn max_in_flight(&self) -> usize {
        self.inner.max_in_flight.load(Ordering::SeqCst)
    }

    pub fn reset_counters(&self) {
        self.inner.requests.store(0, Ordering::SeqCst);
        self.inner.max_in_flight.store(0, Ordering::SeqCst);
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.inner.state()
    }
}

impl Inner {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts a page served and makes the changes now due.
    fn page_served(&self) {
        let mut state = self.state();
        state.pages_served += 1;
        state.apply_due_changes();
    }
}

impl State {
    fn apply_due_changes(&mut self) {
        let served = self.pages_served;
        let (due, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.changes)
            .into_iter()
            .partition(|(after, _, _)| *after <= served);
        self.changes = rest;
        for (_, chain, change) in due {
            self.changes_fired += 1;
            self.chains.entry(chain).or_default().apply(change);
        }
    }
}

/// A well-formed notification as Chaingateway lists it. `contract_or_native` is a token
/// contract (`type` ERC20) or `"native"` (`type` ETH, no contract); `amount` is the decimal
/// amount as a string, or `None` for `null`.
pub fn notification(
    id: &str,
    txid: &str,
    contract_or_native: &str,
    to: &str,
    amount: Option<&str>,
    created_at: jiff::Timestamp,
) -> Value {
    let native = contract_or_native.eq_ignore_ascii_case("native");
    let time = format!("{}.000000Z", created_at.strftime("%Y-%m-%dT%H:%M:%S"));
    json!({
        "id": id,
        "webhook_id": "9ba897da-7651-4df6-80ef-11c898b195e5",
        "txid": txid,
        "type": if native { "ETH" } else { "ERC20" },
        "contractaddress": if native { Value::Null } else { json!(contract_or_native) },
        "from": "0xb23360ccdd9ed1b15d45e5d3824bb409c8d7c460",
        "to": to,
        "tokenid": null,
        "amount": amount,
        "blocknumber": "19499380",
        "status": "success",
        "url": "https://merchant.example/webhooks/chaingateway",
        "success": true,
        "attempts": 1,
        "created_at": time,
        "updated_at": time,
        "network": "mainnet",
        "blockchain": "ethereum",
    })
}

fn id_of(record: &Value) -> Option<String> {
    match record.get("id")? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}
