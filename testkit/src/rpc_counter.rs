//! A counting JSON-RPC proxy on loopback: forwards every request to a real node (anvil) and
//! counts the HTTP requests and the calls in them, by method. The tests and the balance
//! benchmark hold what payrecon asked a node for against the cost formulas of
//! docs/operations.md, "Balances".

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::routing::post;
use axum::Router;
use serde_json::Value;

#[derive(Default)]
struct Counts {
    requests: u64,
    /// Per method: (requests it appeared in, calls).
    methods: BTreeMap<String, (u64, u64)>,
}

struct Inner {
    upstream: String,
    client: reqwest::Client,
    counts: Mutex<Counts>,
}

/// The proxy's handle; counts survive until `reset`.
#[derive(Clone)]
pub struct RpcCounter {
    inner: Arc<Inner>,
}

impl RpcCounter {
    /// Starts the proxy in front of `upstream`; returns it and its URL.
    pub async fn start(upstream: &str) -> (RpcCounter, String) {
        let counter = RpcCounter {
            inner: Arc::new(Inner {
                upstream: upstream.to_string(),
                client: reqwest::Client::new(),
                counts: Mutex::new(Counts::default()),
            }),
        };
        let app = Router::new()
            .route("/", post(forward))
            .with_state(counter.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        (counter, url)
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.inner.counts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// HTTP requests forwarded since the start or the last `reset` (a batch counts once).
    pub fn requests(&self) -> u64 {
        self.counts().requests
    }

    /// Calls of `method` (each entry of a batch counts).
    pub fn calls(&self, method: &str) -> u64 {
        self.counts().methods.get(method).map_or(0, |m| m.1)
    }

    /// HTTP requests that carried at least one call of `method`.
    pub fn requests_with(&self, method: &str) -> u64 {
        self.counts().methods.get(method).map_or(0, |m| m.0)
    }

    /// Every method seen, with its (requests, calls), for a failing assertion's message.
    pub fn summary(&self) -> String {
        format!("{:?}", self.counts().methods)
    }

    pub fn reset(&self) {
        *self.counts() = Counts::default();
    }
}

const JSON: [(header::HeaderName, &str); 1] = [(header::CONTENT_TYPE, "application/json")];

type Reply = (StatusCode, [(header::HeaderName, &'static str); 1], String);

async fn forward(State(c): State<RpcCounter>, body: String) -> Reply {
    if let Ok(v) = serde_json::from_str::<Value>(&body) {
        let calls: Vec<&Value> = match &v {
            Value::Array(a) => a.iter().collect(),
            one => vec![one],
        };
        let mut counts = c.counts();
        counts.requests += 1;
        let mut seen = std::collections::BTreeSet::new();
        for call in calls {
            let m = call["method"].as_str().unwrap_or("?").to_string();
            let e = counts.methods.entry(m.clone()).or_default();
            e.1 += 1;
            if seen.insert(m) {
                e.0 += 1;
            }
        }
    }
    let sent = c
        .inner
        .client
        .post(&c.inner.upstream)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await;
    match sent {
        Ok(r) => {
            let status =
                StatusCode::from_u16(r.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
            (status, JSON, r.text().await.unwrap_or_default())
        }
        Err(e) => (StatusCode::BAD_GATEWAY, JSON, e.to_string()),
    }
}
