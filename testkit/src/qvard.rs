//! A fake Qvard API on loopback: `GET /v1/payments?status=&from=&to=&cursor=` (completed
//! payments whose `completed_at` lies in `[from, to]`, Unix seconds, cursor pages) and
//! `POST /v1/payments/{id}/resend-webhook`, behind a bearer token check.

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::json_api::{self, lock, JsonApi, Shared};

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

/// The fake Qvard: the shared handle (`JsonApi`) plus Qvard's own record shape.
pub struct FakeQvard(JsonApi);

impl std::ops::Deref for FakeQvard {
    type Target = JsonApi;
    fn deref(&self) -> &JsonApi {
        &self.0
    }
}

impl FakeQvard {
    /// Starts the server; 100 payments a page.
    pub async fn start(api_key: &str) -> FakeQvard {
        let routes = Router::new()
            .route("/v1/payments", get(list))
            .route("/v1/payments/{id}/resend-webhook", post(resend));
        FakeQvard(JsonApi::start(api_key, 100, "Qvard", routes).await)
    }

    pub fn add_payment(&self, payment: &QvardPayment) {
        self.add_raw(payment.to_json());
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
async fn list(State(shared): State<Shared>, Query(q): Query<ListQuery>) -> Response {
    let bound = |v: &Option<String>| match v.as_deref().map(str::trim) {
        None | Some("") => Ok(None),
        Some(s) => s.parse::<i64>().map(Some).map_err(|_| s.to_string()),
    };
    let (from, to) = match (bound(&q.from), bound(&q.to)) {
        (Ok(f), Ok(t)) => (f, t),
        (Err(bad), _) | (_, Err(bad)) => {
            let text = format!("from/to must be Unix seconds, got {bad:?}");
            return json_api::error(StatusCode::BAD_REQUEST, &text);
        }
    };
    let offset = match q.cursor.as_deref().unwrap_or("") {
        "" => 0,
        c => match c.strip_prefix("c_").and_then(|n| n.parse::<usize>().ok()) {
            Some(n) => n,
            None => return json_api::error(StatusCode::BAD_REQUEST, "invalid cursor"),
        },
    };
    let mut state = lock(&shared);
    state.list_requests += 1;
    let matching: Vec<&Value> = state
        .records
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

async fn resend(State(shared): State<Shared>, Path(id): Path<String>) -> Response {
    let mut state = lock(&shared);
    let known = state
        .records
        .iter()
        .any(|p| p.get("id").and_then(Value::as_str) == Some(id.as_str()));
    if !known {
        return json_api::error(StatusCode::NOT_FOUND, "no such payment");
    }
    state.resends.push(id);
    Json(json!({"ok": true})).into_response()
}
