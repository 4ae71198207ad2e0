//! What the fake JSON providers (Qvard, Paymos) share: the front door (a request log, a bearer
//! token check, 401 otherwise, a per-request latency and a queue of injected faults) and the
//! handle a test holds (records, page size, what was listed and resent).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

/// An injected fault, consumed by the next authenticated request (any path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HttpFault {
    /// 200 with a truncated JSON body.
    MalformedJson,
    /// This status with a small JSON error body.
    Status(u16),
}

struct Gate {
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
    fn new(api_key: &str) -> Arc<Gate> {
        Arc::new(Gate {
            api_key: api_key.to_string(),
            inner: Mutex::default(),
        })
    }

    fn state(&self) -> MutexGuard<'_, GateState> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn set_latency(&self, latency: Duration) {
        self.state().latency = latency;
    }

    fn push_fault(&self, fault: HttpFault, times: usize) {
        self.state()
            .faults
            .extend(std::iter::repeat_n(fault, times));
    }

    fn log(&self) -> Vec<String> {
        self.state().log.clone()
    }
}

pub(crate) fn error(status: StatusCode, text: &str) -> Response {
    (status, Json(json!({"error": text}))).into_response()
}

/// Every request: log, bearer token, latency, then the next queued fault.
async fn front_door(State(gate): State<Arc<Gate>>, req: Request, next: Next) -> Response {
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

/// A fake provider's records and counters, behind the handle and the handlers alike.
pub(crate) struct ApiState {
    /// The records served, in list order (any JSON, well-formed or not).
    pub records: Vec<Value>,
    pub page_size: usize,
    /// List requests answered (faults and refusals not included).
    pub list_requests: u64,
    /// Ids of resends answered 200, in order.
    pub resends: Vec<String>,
}

/// What the handlers are given.
pub(crate) type Shared = Arc<Mutex<ApiState>>;

pub(crate) fn lock(shared: &Shared) -> MutexGuard<'_, ApiState> {
    shared.lock().unwrap_or_else(|p| p.into_inner())
}

/// A running fake provider: add records, set faults, read what it saw. Dropping it stops the
/// server.
pub struct JsonApi {
    shared: Shared,
    gate: Arc<Gate>,
    base_url: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for JsonApi {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl JsonApi {
    /// Serves `routes` behind the front door, `page_size` records a page.
    pub(crate) async fn start(
        api_key: &str,
        page_size: usize,
        what: &str,
        routes: axum::Router<Shared>,
    ) -> JsonApi {
        let gate = Gate::new(api_key);
        let shared = Arc::new(Mutex::new(ApiState {
            records: Vec::new(),
            page_size,
            list_requests: 0,
            resends: Vec::new(),
        }));
        let router = routes
            .with_state(shared.clone())
            .layer(axum::middleware::from_fn_with_state(
                gate.clone(),
                front_door,
            ));
        let (task, base_url) = serve(router, what).await;
        JsonApi {
            shared,
            gate,
            base_url,
            task,
        }
    }

    pub(crate) fn state(&self) -> MutexGuard<'_, ApiState> {
        lock(&self.shared)
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Adds any JSON (well-formed or not) at the end of the list.
    pub fn add_raw(&self, record: Value) {
        self.state().records.push(record);
    }

    pub fn set_page_size(&self, n: usize) {
        self.state().page_size = n.max(1);
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
        self.state().list_requests
    }

    /// Ids of resends answered 200, in order.
    pub fn resends(&self) -> Vec<String> {
        self.state().resends.clone()
    }

    /// How often a resend was answered for `id`.
    pub fn resend_count(&self, id: &str) -> usize {
        self.state().resends.iter().filter(|r| *r == id).count()
    }
}
