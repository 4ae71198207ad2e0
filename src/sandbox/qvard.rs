//! A fake Qvard API on loopback: `GET /v1/payments?status=&from=&to=&cursor=` (completed
//! payments whose `completed_at` lies in `[from, to]`, Unix seconds, cursor pages) and
//! `POST /v1/payments/{id}/resend-webhook`, behind a bearer token check.

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

/// A payment as Qvard lists it. `id` is the merchant's order id.
#[derive(Debug, Clone)]
pub struct QvardPayment {
    pub id: String,
    /// `completed` (the only status the list is asked for), or another.
    pub status: String,
    pub chain: String,
    pub tx_hash: Option<String>,
    pub log_index: Option<i64>,
    /// Token contract or `native`.
    pub asset: String,
    /// Decimal amount in whole units, as Qvard writes it (`"25.00"`).
    pub amount: String,
    pub completed_at: jiff::Timestamp,
}

impl QvardPayment {
    /// The JSON Qvard serves (`completed_at` as Unix seconds).
    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "object": "payment",
            "status": self.status,
            "chain": self.chain,
            "tx_hash": self.tx_hash,
            "log_index": self.log_index,
            "asset": self.asset,
            "amount": self.amount,
            "completed_at": self.completed_at.as_second(),
        })
    }
}

/// The server's handle: add payments, read what it saw. Dropping it stops the server.
pub struct FakeQvard {
    inner: Arc<Inner>,
    gate: Arc<Gate>,
    base_url: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeQvard {
    fn drop(&mut self) {
        self.task.abort();
    }
}

struct Inner {
    state: Mutex<QState>,
}

struct QState {
    payments: Vec<Value>,
    page_size: usize,
    list_requests: u64,
    resends: Vec<String>,
}

impl FakeQvard {
    /// Starts the server; 100 payments a page.
    pub async fn start(api_key: &str) -> FakeQvard {
        let gate = Gate::new(api_key);
        let inner = Arc::new(Inner {
            state: Mutex::new(QState {
                payments: Vec::new(),
                page_size: 100,
                list_requests: 0,
                resends: Vec::new(),
            }),
        });
        let router = Router::new()
            .route("/v1/payments", get(list))
            .route("/v1/payments/{id}/resend-webhook", post(resend))
            .with_state(inner.clone())
            .layer(middleware::from_fn_with_state(gate.clone(), gate::gate));
        let (task, base_url) = gate::serve(router, "Qvard").await;
        FakeQvard {
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

    pub fn add_payment(&self, payment: &QvardPayment) {
        self.add_raw(payment.to_json());
    }

    /// Adds any JSON (well-formed or not) at the end of the list.
    pub fn add_raw(&self, payment: Value) {
        self.inner.state().payments.push(payment);
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

    /// How often a resend was answered for `id`.
    pub fn resend_count(&self, id: &str) -> usize {
        self.inner
            .state()
            .resends
            .iter()
            .filter(|r| *r == id)
            .count()
    }
}

impl Inner {
    fn state(&self) -> MutexGuard<'_, QState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[derive(serde::Deserialize)]
struct ListQuery {
    status: Option<String>,
    from: Option<String>,
    to: Option<String>,
    cursor: Option<String>,
}

/// Cursors are `c_<offset>` into the filtered list; `next_cursor` is null on the last page.
async fn list(State(inner): State<Arc<Inner>>, Query(q): Query<ListQuery>) -> Response {
    let bound = |v: &Option<String>| match v.as_deref().map(str::trim) {
        None | Some("") => Ok(None),
        Some(s) => s.parse::<i64>().map(Some).map_err(|_| s.to_string()),
    };
    let (from, to) = match (bound(&q.from), bound(&q.to)) {
        (Ok(f), Ok(t)) => (f, t),
        (Err(bad), _) | (_, Err(bad)) => {
            let text = format!("from/to must be Unix seconds, got {bad:?}");
            return gate::error(StatusCode::BAD_REQUEST, &text);
        }
    };
    let offset = match q.cursor.as_deref().unwrap_or("") {
        "" => 0,
        c => match c.strip_prefix("c_").and_then(|n| n.parse::<usize>().ok()) {
            Some(n) => n,
            None => return gate::error(StatusCode::BAD_REQUEST, "invalid cursor"),
        },
    };
    let mut state = inner.state();
    state.list_requests += 1;
    let matching: Vec<&Value> = state
        .payments
        .iter()
        .filter(|p| {
            let status_ok = q.status.as_deref().is_none_or(|s| {
                p.get("status")
                    .and_then(Value::as_str)
                    .is_none_or(|ps| ps == s)
            });
            // A payment whose time cannot be read is served anyway (malformed-record tests).
            let at = p.get("completed_at").and_then(unix_seconds);
            let in_window =
                at.is_none_or(|t| from.is_none_or(|f| t >= f) && to.is_none_or(|u| t <= u));
            status_ok && in_window
        })
        .collect();
    let page: Vec<Value> = matching
        .iter()
        .skip(offset)
        .take(state.page_size)
        .map(|v| (*v).clone())
        .collect();
    let next = offset + page.len();
    let next_cursor = (next < matching.len()).then(|| format!("c_{next}"));
    Json(json!({"object": "list", "data": page, "next_cursor": next_cursor})).into_response()
}

fn unix_seconds(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s
            .parse::<i64>()
            .ok()
            .or_else(|| s.parse::<jiff::Timestamp>().ok().map(|t| t.as_second())),
        _ => None,
    }
}

async fn resend(State(inner): State<Arc<Inner>>, Path(id): Path<String>) -> Response {
    let mut state = inner.state();
    let known = state
        .payments
        .iter()
        .any(|p| p.get("id").and_then(Value::as_str) == Some(id.as_str()));
    if !known {
        return gate::error(StatusCode::NOT_FOUND, "no such payment");
    }
    state.resends.push(id);
    Json(json!({"ok": true})).into_response()
}
