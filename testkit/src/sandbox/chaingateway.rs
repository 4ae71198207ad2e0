//! The fake Chaingateway for tests: the demo's (`payrecon_sandbox::chaingateway`, the
//! lists, pages, resend and the bearer and network checks) behind a front door of ours: a
//! request counter, the requests in flight, latency, a queue of injected faults, the pages
//! served and list changes made after the k-th of them (the list moving while it is read), and
//! `blocks/number` in each chain's shape.

use std::collections::{HashMap, VecDeque};
use std::ops::Deref;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::Json;
use payrecon_sandbox::chaingateway::Gateway;
use serde_json::{json, Value};

pub use payrecon_sandbox::chaingateway::{notification, ChainLists};

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

/// A change to a chain's lists, made once a number of pages were served
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

impl ListChange {
    fn apply(self, lists: &mut ChainLists) {
        match self {
            ListChange::InsertAtHead(records) => lists.push_front(records),
            ListChange::Append(records) => records.into_iter().for_each(|r| lists.push(r)),
            ListChange::Remove(ids) => lists.remove(&ids),
            ListChange::MarkFailed(ids) => ids.iter().for_each(|id| {
                lists.mark(id);
            }),
            ListChange::UnmarkFailed(ids) => ids.iter().for_each(|id| lists.unmark(id)),
        }
    }
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

/// The server's handle: configure it, read what it saw. Dropping it stops the server; it
/// derefs to the sandbox crate's `Gateway` (records, failed list, resends, page size, network).
pub struct FakeChaingateway {
    fake: payrecon_sandbox::chaingateway::FakeChaingateway,
    door: Arc<Door>,
}

impl Deref for FakeChaingateway {
    type Target = Gateway;
    fn deref(&self) -> &Gateway {
        &self.fake
    }
}

/// The front door's state.
#[derive(Default)]
struct Door {
    state: Mutex<DoorState>,
    requests: AtomicU64,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
}

#[derive(Default)]
struct DoorState {
    latency: Duration,
    faults: VecDeque<Fault>,
    /// Pages of either list served so far (faults not included).
    pages_served: u64,
    /// `(after this many pages, chain, change)`, not made yet.
    changes: Vec<(u64, String, ListChange)>,
    /// Changes made because their page count was reached (not by `flush_changes`).
    changes_fired: u64,
    blocks: HashMap<String, (u64, BlockShape)>,
}

impl Door {
    fn state(&self) -> MutexGuard<'_, DoorState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts a page served (when `page`) and makes the changes due by now.
    fn apply_due(&self, gateway: &Gateway, page: bool) {
        let due = {
            let mut state = self.state();
            state.pages_served += u64::from(page);
            let served = state.pages_served;
            let (due, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut state.changes)
                .into_iter()
                .partition(|(after, _, _)| *after <= served);
            state.changes = rest;
            state.changes_fired += due.len() as u64;
            due
        };
        for (_, chain, change) in due {
            gateway.with_lists(&chain, |lists| change.apply(lists));
        }
    }
}

impl FakeChaingateway {
    /// Starts the server on `127.0.0.1:0`; returns its handle and base URL
    /// (`http://127.0.0.1:PORT/api/v2`). Expects network `mainnet` and 15 records a page.
    pub async fn start(api_key: &str) -> (FakeChaingateway, String) {
        let door = Arc::new(Door::default());
        let d = door.clone();
        let (fake, url) =
            payrecon_sandbox::chaingateway::FakeChaingateway::start_wrapped(api_key, |r, g| {
                r.layer(middleware::from_fn_with_state((d, g), front_door))
            })
            .await;
        (FakeChaingateway { fake, door }, url)
    }

    /// Makes `change` on `chain` right after the `after`-th page (of either list, counted
    /// from the start) has been served; at once when that many were served already.
    pub fn change_after_pages(&self, after: u64, chain: &str, change: ListChange) {
        self.door
            .state()
            .changes
            .push((after, chain.to_string(), change));
        self.door.apply_due(&self.fake, false);
    }

    /// Makes every change still waiting (the simulator's "faults stop"); returns how many.
    pub fn flush_changes(&self) -> usize {
        let pending = std::mem::take(&mut self.door.state().changes);
        let n = pending.len();
        for (_, chain, change) in pending {
            self.with_lists(&chain, |lists| change.apply(lists));
        }
        n
    }

    /// Pages of either list served so far.
    pub fn pages_served(&self) -> u64 {
        self.door.state().pages_served
    }

    /// Changes made because their page count was reached while a client was paging.
    pub fn changes_fired(&self) -> u64 {
        self.door.state().changes_fired
    }

    /// What `blocks/number` answers for `chain` (404 until set).
    pub fn set_block_number(&self, chain: &str, number: u64, shape: BlockShape) {
        let mut state = self.door.state();
        state.blocks.insert(chain.to_string(), (number, shape));
    }

    /// Removes these ids from the chain's lists (every record after them moves up a place).
    pub fn remove_notifications(&self, chain: &str, ids: &[&str]) {
        let ids: Vec<String> = ids.iter().map(|s| s.to_string()).collect();
        self.with_lists(chain, |lists| lists.remove(&ids));
    }

    /// Notifications on the chain's failed list.
    pub fn failed_count(&self, chain: &str) -> usize {
        self.with_lists(chain, |lists| lists.failed_len())
    }

    /// Records in the chain's notifications list.
    pub fn notification_count(&self, chain: &str) -> usize {
        self.with_lists(chain, |lists| lists.len())
    }

    /// Added before every answer.
    pub fn set_latency(&self, latency: Duration) {
        self.door.state().latency = latency;
    }

    /// Queues `fault` for the next `times` requests (after those already queued).
    pub fn push_fault(&self, fault: Fault, times: usize) {
        let mut state = self.door.state();
        state.faults.extend(std::iter::repeat_n(fault, times));
    }

    /// Drops every queued fault (the simulator's "faults stop"); returns how many were left.
    pub fn clear_faults(&self) -> usize {
        let mut state = self.door.state();
        let n = state.faults.len();
        state.faults.clear();
        n
    }

    /// Requests received (all paths, faults and refusals included).
    pub fn requests(&self) -> u64 {
        self.door.requests.load(Ordering::SeqCst)
    }

    /// Most requests in progress at one time since the start or the last reset.
    pub fn max_in_flight(&self) -> usize {
        self.door.max_in_flight.load(Ordering::SeqCst)
    }

    pub fn reset_counters(&self) {
        self.door.requests.store(0, Ordering::SeqCst);
        self.door.max_in_flight.store(0, Ordering::SeqCst);
    }
}

/// Counts requests in progress (also when the client goes away mid-request).
struct InFlight(Arc<Door>);

impl InFlight {
    fn enter(door: &Arc<Door>) -> InFlight {
        let now = door.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        door.max_in_flight.fetch_max(now, Ordering::SeqCst);
        InFlight(door.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Every request: counted; one the API refuses goes on to be refused; otherwise latency,
/// the next queued fault, `blocks/number`, then the product's routes (a page served makes
/// the changes due).
async fn front_door(
    State((door, gateway)): State<(Arc<Door>, Arc<Gateway>)>,
    req: Request,
    next: Next,
) -> Response {
    door.requests.fetch_add(1, Ordering::SeqCst);
    let _in_flight = InFlight::enter(&door);
    if gateway.refusal(req.headers()).is_some() {
        return next.run(req).await;
    }
    let (latency, fault) = {
        let mut state = door.state();
        (state.latency, state.faults.pop_front())
    };
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    match fault {
        None => {}
        Some(Fault::Hang(d)) => tokio::time::sleep(d).await,
        Some(fault) => return fault_response(fault, req.headers()),
    }
    let path = req.uri().path().to_string();
    if let Some(chain) = block_number_chain(&path) {
        let block = door.state().blocks.get(chain).copied();
        return block_number(block);
    }
    let resp = next.run(req).await;
    let list = path.ends_with("/webhooks/notifications") || path.ends_with("/notifications/failed");
    if list && resp.status() == StatusCode::OK {
        door.apply_due(&gateway, true);
    }
    resp
}

fn message(status: StatusCode, text: &str) -> Response {
    let body = json!({"status": status.as_u16(), "ok": status.is_success(), "message": text});
    (status, Json(body)).into_response()
}

fn fault_response(fault: Fault, headers: &HeaderMap) -> Response {
    let json_body = |status: StatusCode, body: &'static str| {
        (status, [("content-type", "application/json")], body).into_response()
    };
    match fault {
        Fault::ServerError => message(StatusCode::INTERNAL_SERVER_ERROR, "Server Error"),
        Fault::Unavailable => message(StatusCode::SERVICE_UNAVAILABLE, "Service Unavailable"),
        Fault::TooManyRequests { retry_after_secs } => {
            let mut resp = message(StatusCode::TOO_MANY_REQUESTS, "Too Many Attempts.");
            resp.headers_mut()
                .insert("retry-after", retry_after_secs.to_string().parse().unwrap());
            resp
        }
        Fault::MalformedJson => {
            json_body(StatusCode::OK, r#"{"status":200,"ok":true,"data":[{"id":"#)
        }
        Fault::MissingData => {
            json_body(StatusCode::OK, r#"{"status":200,"ok":true,"message":"?"}"#)
        }
        Fault::CloseConnection => {
            let failing = futures::stream::once(async {
                Err::<String, _>(std::io::Error::other("fault: connection closed"))
            });
            (StatusCode::OK, Body::from_stream(failing)).into_response()
        }
        Fault::EchoHeaders => {
            let echoed: Vec<String> = headers
                .iter()
                .map(|(k, v)| format!("{k}: {}", v.to_str().unwrap_or("?")))
                .collect();
            message(
                StatusCode::BAD_REQUEST,
                &format!("bad request; headers: {echoed:?}"),
            )
        }
        Fault::Hang(_) => unreachable!("handled in front_door"),
    }
}

/// The chain of `/api/v2/{chain}/blocks/number`.
fn block_number_chain(path: &str) -> Option<&str> {
    let chain = path
        .strip_prefix("/api/v2/")?
        .strip_suffix("/blocks/number")?;
    (!chain.is_empty() && !chain.contains('/')).then_some(chain)
}

fn block_number(block: Option<(u64, BlockShape)>) -> Response {
    let Some((n, shape)) = block else {
        return message(StatusCode::NOT_FOUND, "Not Found");
    };
    let data = match shape {
        BlockShape::Integer => json!(n),
        BlockShape::Object => json!({"blocknumber": n}),
        BlockShape::ObjectString => json!({"blocknumber": n.to_string()}),
    };
    let body =
        json!({"status": 200, "ok": true, "message": "Latest block number fetched", "data": data});
    Json(body).into_response()
}
