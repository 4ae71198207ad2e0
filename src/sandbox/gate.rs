//! The front door shared by the fake JSON providers (Qvard, Paymos): a request log, a bearer
//! token check (401 otherwise), a per-request latency and a queue of injected faults.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

/// An injected fault, consumed by the next authenticated request (any path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HttpFault {
    /// 200 with a truncated JSON body.
    MalformedJson,
    /// This status with a small JSON error body.
    Status(u16),
}

pub(crate) struct Gate {
    api_key: String,
    inner: Mutex<GateState>,
}

#[derive(Default)]
struct GateState {
    latency: Duration,
    faults: VecDeque<HttpFault>,
    /// `METHOD /path?query` of every request, refused ones included.
    log: Vec<String>,
}

impl Gate {
    pub(crate) fn new(api_key: &str) -> Arc<Gate> {
        Arc::new(Gate {
            api_key: api_key.to_string(),
            inner: Mutex::default(),
        })
    }

    fn state(&self) -> MutexGuard<'_, GateState> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn set_latency(&self, latency: Duration) {
        self.state().latency = latency;
    }

    pub(crate) fn push_fault(&self, fault: HttpFault, times: usize) {
        self.state()
            .faults
            .extend(std::iter::repeat_n(fault, times));
    }

    pub(crate) fn log(&self) -> Vec<String> {
        self.state().log.clone()
    }
}

pub(crate) fn error(status: StatusCode, text: &str) -> Response {
    (status, Json(json!({"error": text}))).into_response()
}

/// Every request: log, bearer token, latency, then the next queued fault.
pub(crate) async fn gate(State(gate): State<Arc<Gate>>, req: Request, next: Next) -> Response {
    let line = format!(
        "{} {}",
        req.method(),
        req.uri()
            .path_and_query()
            .map_or_else(|| req.uri().path().to_string(), |p| p.to_string())
    );
    gate.state().log.push(line);
    let bearer = format!("Bearer {}", gate.api_key);
    let auth = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok());
    if auth != Some(bearer.as_str()) {
        return error(StatusCode::UNAUTHORIZED, "invalid or missing API key");
    }
    let (latency, fault) = {
        let mut state = gate.state();
        (state.latency, state.faults.pop_front())
    };
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    match fault {
        None => next.run(req).await,
        Some(HttpFault::MalformedJson) => (
            StatusCode::OK,
            [("content-type", "application/json")],
            r#"{"data":[{"id":"#,
        )
            .into_response(),
        Some(HttpFault::Status(code)) => {
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            error(status, "injected fault")
        }
    }
}

/// Serves `router` on `127.0.0.1:0`; returns the task and `http://127.0.0.1:PORT`.
pub(crate) async fn serve(
    router: axum::Router,
    what: &str,
) -> (tokio::task::JoinHandle<()>, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("bind a loopback port for the fake {what}: {e}"));
    let addr = listener.local_addr().expect("local address");
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    (task, format!("http://{addr}"))
}
