//! A fake Paymos API on loopback: `GET /v1/events?status=failed&created_after=<rfc3339>&page=N`
//! (events by delivery status, created at or after the time, numbered pages with `has_more`)
//! and `POST /v1/events/{event_id}/resend` (resets the event's attempts to 0), behind a
//! bearer token check.

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::json_api::{self, lock, JsonApi, Shared};

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

/// The fake Paymos: the shared handle (`JsonApi`) plus Paymos's own record shape.
pub struct FakePaymos(JsonApi);

impl std::ops::Deref for FakePaymos {
    type Target = JsonApi;
    fn deref(&self) -> &JsonApi {
        &self.0
    }
}

impl FakePaymos {
    /// Starts the server; 50 events a page.
    pub async fn start(api_key: &str) -> FakePaymos {
        let routes = Router::new()
            .route("/v1/events", get(list))
            .route("/v1/events/{id}/resend", post(resend));
        FakePaymos(JsonApi::start(api_key, 50, "Paymos", routes).await)
    }

    pub fn add_event(&self, event: &PaymosEvent) {
        self.add_raw(event.to_json());
    }

    /// An event's `attempts` now (`None`: unknown id).
    pub fn attempts(&self, id: &str) -> Option<u64> {
        let state = self.state();
        find(&state.records, id).and_then(|e| e.get("attempts")?.as_u64())
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

async fn list(State(shared): State<Shared>, Query(q): Query<ListQuery>) -> Response {
    let after = match q.created_after.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(s) => match s.parse::<jiff::Timestamp>() {
            Ok(t) => Some(t),
            Err(_) => {
                let text = format!("created_after must be RFC 3339, got {s:?}");
                return json_api::error(StatusCode::BAD_REQUEST, &text);
            }
        },
    };
    let page = match q.page.as_deref().unwrap_or("1").parse::<usize>() {
        Ok(n) if n >= 1 => n,
        _ => return json_api::error(StatusCode::BAD_REQUEST, "page must be a number from 1"),
    };
    let mut state = lock(&shared);
    state.list_requests += 1;
    let matching: Vec<&Value> = state
        .records
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

async fn resend(State(shared): State<Shared>, Path(id): Path<String>) -> Response {
    let mut state = lock(&shared);
    let Some(event) = state
        .records
        .iter_mut()
        .find(|e| e.get("event_id").and_then(Value::as_str) == Some(id.as_str()))
    else {
        return json_api::error(StatusCode::NOT_FOUND, "no such event");
    };
    event["attempts"] = json!(0);
    state.resends.push(id);
    Json(json!({"ok": true})).into_response()
}
