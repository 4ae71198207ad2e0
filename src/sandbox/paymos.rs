//! A fake Paymos API on loopback: `GET /v1/events?status=failed&created_after=<rfc3339>&page=N`
//! (events by delivery status, created at or after the time, numbered pages with `has_more`)
//! and `POST /v1/events/{event_id}/resend` (resets the event's attempts to 0), behind a
//! bearer token check.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

use super::gate::{self, Gate, HttpFault};

/// A webhook event as Paymos lists it.
#[derive(Debug, Clone)]
pub struct PaymosEvent {
    pub event_id: String,
    /// `payment.updated`, …
    pub event_type: String,
    pub created_at: jiff::Timestamp,
    /// Delivery attempts so far.
    pub attempts: u32,
    /// Delivery status: `failed`, `delivered`, `pending`.
    pub status: String,
    pub data: PaymosData,
}

/// The payment an event is about.
#[derive(Debug, Clone)]
pub struct PaymosData {
    pub order_ref: String,
    pub chain: String,
    pub tx_hash: Option<String>,
    pub log_index: Option<i64>,
    /// Base units, as a decimal integer string.
    pub amount: String,
    /// `pending`, `confirmed`, `final`, `completed`, `failed`, `expired`.
    pub state: String,
}

impl PaymosEvent {
    /// The JSON Paymos serves (`created_at` in RFC 3339).
    pub fn to_json(&self) -> Value {
        let d = &self.data;
        json!({
            "event_id": self.event_id,
            "type": self.event_type,
            "created_at": self.created_at.to_string(),
            "attempts": self.attempts,
            "status": self.status,
            "data": {
                "order_ref": d.order_ref,
                "chain": d.chain,
                "tx_hash": d.tx_hash,
                "log_index": d.log_index,
                "amount": d.amount,
                "state": d.state,
            },
        })
    }
}

/// The server's handle: add events, read what it saw. Dropping it stops the server.
pub struct FakePaymos {
    inner: Arc<Inner>,
    gate: Arc<Gate>,
    base_url: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakePaymos {
    fn drop(&mut self) {
        self.task.abort();
    }
}

struct Inner {
    state: Mutex<PState>,
}

struct PState {
    events: Vec<Value>,
    page_size: usize,
    list_requests: u64,
    resends: Vec<String>,
}

impl FakePaymos {
    /// Starts the server; 50 events a page.
    pub async fn start(api_key: &str) -> FakePaymos {
        let gate = Gate::new(api_key);
        let inner = Arc::new(Inner {
            state: Mutex::new(PState {
                events: Vec::new(),
                page_size: 50,
                list_requests: 0,
                resends: Vec::new(),
            }),
        });
        let router = Router::new()
            .route("/v1/events", get(list))
            .route("/v1/events/{id}/resend", post(resend))
            .with_state(inner.clone())
            .layer(middleware::from_fn_with_state(gate.clone(), gate::gate));
        let (task, base_url) = gate::serve(router, "Paymos").await;
        FakePaymos {
            inner,
            gate,
            base_url,
            task,
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    pub fn add_event(&self, event: &PaymosEvent) {
        self.add_raw(event.to_json());
    }

    /// Adds any JSON (well-formed or not) at the end of the list.
    pub fn add_raw(&self, event: Value) {
        self.inner.state().events.push(event);
    }

    pub fn set_page_size(&self, n: usize) {
        self.inner.state().page_size = n.max(1);
    }

    /// Added before every answer.
    pub fn set_latency(&self, latency: Duration) {
        self.gate.set_latency(latency);
    }

    /// Queues `fault` for the next `times` authenticated requests.
    pub fn push_fault(&self, fault: HttpFault, times: usize) {
        self.gate.push_fault(fault, times);
    }

    /// `METHOD /path?query` of every request received, refused ones included.
    pub fn requests(&self) -> Vec<String> {
        self.gate.log()
    }

    /// List requests answered (faults and refusals not included).
    pub fn list_requests(&self) -> u64 {
        self.inner.state().list_requests
    }

    /// Ids of resends answered 200, in order.
    pub fn resends(&self) -> Vec<String> {
        self.inner.state().resends.clone()
    }

    pub fn resend_count(&self, id: &str) -> usize {
        self.inner
            .state()
            .resends
            .iter()
            .filter(|r| *r == id)
            .count()
    }

    /// An event's `attempts` now (`None`: unknown id).
    pub fn attempts(&self, id: &str) -> Option<u64> {
        let state = self.inner.state();
        find(&state.events, id).and_then(|e| e.get("attempts")?.as_u64())
    }
}

impl Inner {
    fn state(&self) -> MutexGuard<'_, PState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn find<'a>(events: &'a [Value], id: &str) -> Option<&'a Value> {
    events
        .iter()
        .find(|e| e.get("event_id").and_then(Value::as_str) == Some(id))
}

#[derive(serde::Deserialize)]
struct ListQuery {
    status: Option<String>,
    created_after: Option<String>,
    page: Option<String>,
}

async fn list(State(inner): State<Arc<Inner>>, Query(q): Query<ListQuery>) -> Response {
    let after = match q.created_after.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(s) => match s.parse::<jiff::Timestamp>() {
            Ok(t) => Some(t),
            Err(_) => {
                let text = format!("created_after must be RFC 3339, got {s:?}");
                return gate::error(StatusCode::BAD_REQUEST, &text);
            }
        },
    };
    let page = match q.page.as_deref().unwrap_or("1").parse::<usize>() {
        Ok(n) if n >= 1 => n,
        _ => return gate::error(StatusCode::BAD_REQUEST, "page must be a number from 1"),
    };
    let mut state = inner.state();
    state.list_requests += 1;
    let matching: Vec<&Value> = state
        .events
        .iter()
        .filter(|e| {
            let status = e.get("status").and_then(Value::as_str);
            let status_ok = q.status.as_deref().is_none_or(|s| status == Some(s));
            let at = e
                .get("created_at")
                .and_then(Value::as_str)
                .and_then(|s| s.parse::<jiff::Timestamp>().ok());
            // An event whose time cannot be read is served anyway (malformed-record tests).
            let in_window = at.is_none_or(|t| after.is_none_or(|a| t >= a));
            status_ok && in_window
        })
        .collect();
    let start = (page - 1).saturating_mul(state.page_size);
    let events: Vec<Value> = matching
        .iter()
        .skip(start)
        .take(state.page_size)
        .map(|v| (*v).clone())
        .collect();
    let has_more = start + events.len() < matching.len();
    Json(json!({"events": events, "has_more": has_more, "page": page})).into_response()
}

async fn resend(State(inner): State<Arc<Inner>>, Path(id): Path<String>) -> Response {
    let mut state = inner.state();
    let Some(event) = state
        .events
        .iter_mut()
        .find(|e| e.get("event_id").and_then(Value::as_str) == Some(id.as_str()))
    else {
        return gate::error(StatusCode::NOT_FOUND, "no such event");
    };
    event["attempts"] = json!(0);
    state.resends.push(id);
    Json(json!({"ok": true})).into_response()
}
