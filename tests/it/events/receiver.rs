//! A real HTTP receiver on loopback for payrecon's events: records every request (headers and
//! body, in arrival order) and answers from a script (status, delay, `Retry-After`,
//! `Location`), then 200 once the script is spent. It can be stopped and started again on
//! the same port (an endpoint that is down, then up).

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

#[derive(Debug, Clone)]
pub struct Received {
    pub id: String,
    pub timestamp: String,
    pub signature: String,
    pub content_type: String,
    pub body: String,
    pub at: Instant,
    /// The status this request was answered with.
    pub answered: u16,
}

impl Received {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).expect("a JSON body")
    }
}

#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub delay: Duration,
    pub retry_after: Option<u64>,
    pub location: Option<String>,
}

impl Reply {
    pub fn status(status: u16) -> Reply {
        Reply {
            status,
            delay: Duration::ZERO,
            retry_after: None,
            location: None,
        }
    }
}

#[derive(Default)]
struct Inner {
    received: Vec<Received>,
    script: VecDeque<Reply>,
    /// Replies for events of one order_ref (checked before the shared script).
    by_order: std::collections::HashMap<String, VecDeque<Reply>>,
}

#[derive(Clone)]
pub struct Receiver {
    inner: Arc<Mutex<Inner>>,
    pub addr: SocketAddr,
    server: Arc<Mutex<Option<tokio::task::JoinHandle<()>>>>,
}

impl Receiver {
    pub async fn start() -> Receiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let r = Receiver {
            inner: Arc::default(),
            addr,
            server: Arc::default(),
        };
        r.serve(listener);
        r
    }

    pub fn url(&self) -> String {
        format!("http://{}/payrecon/events", self.addr)
    }

    fn serve(&self, listener: tokio::net::TcpListener) {
        let app = axum::Router::new()
            .route("/payrecon/events", axum::routing::post(handle))
            .route("/elsewhere", axum::routing::post(handle))
            .with_state(self.inner.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        *self.server.lock().unwrap() = Some(task);
    }

    /// The endpoint goes down: connections are refused.
    pub fn stop(&self) {
        if let Some(t) = self.server.lock().unwrap().take() {
            t.abort();
        }
    }

    /// Up again on the same port.
    pub async fn restart(&self) {
        let mut tries = 0;
        let listener = loop {
            match tokio::net::TcpListener::bind(self.addr).await {
                Ok(l) => break l,
                Err(e) if tries < 50 => {
                    tries += 1;
                    let _ = e;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(e) => panic!("rebind {}: {e}", self.addr),
            }
        };
        self.serve(listener);
    }

    pub fn script(&self, replies: impl IntoIterator<Item = Reply>) {
        self.inner.lock().unwrap().script.extend(replies);
    }

    pub fn script_order(&self, order_ref: &str, replies: impl IntoIterator<Item = Reply>) {
        self.inner
            .lock()
            .unwrap()
            .by_order
            .entry(order_ref.to_string())
            .or_default()
            .extend(replies);
    }

    pub fn received(&self) -> Vec<Received> {
        self.inner.lock().unwrap().received.clone()
    }

    /// Requests answered 2xx.
    pub fn delivered(&self) -> Vec<Received> {
        self.received()
            .into_iter()
            .filter(|r| (200..300).contains(&r.answered))
            .collect()
    }
}

async fn handle(
    State(inner): State<Arc<Mutex<Inner>>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let text = String::from_utf8_lossy(&body).to_string();
    let order_ref = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v["data"]["order_ref"].as_str().map(str::to_string))
        .unwrap_or_default();
    let reply = {
        let mut g = inner.lock().unwrap();
        let from_order = g.by_order.get_mut(&order_ref).and_then(|q| q.pop_front());
        from_order
            .or_else(|| g.script.pop_front())
            .unwrap_or(Reply::status(200))
    };
    let h = |n: &str| {
        headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    };
    let rec = Received {
        id: h("webhook-id"),
        timestamp: h("webhook-timestamp"),
        signature: h("webhook-signature"),
        content_type: h("content-type"),
        body: text,
        at: Instant::now(),
        answered: reply.status,
    };
    // Recorded on arrival (a slow answer is still a request the receiver got).
    inner.lock().unwrap().received.push(rec);
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    let mut resp = (StatusCode::from_u16(reply.status).unwrap(), "").into_response();
    if let Some(s) = reply.retry_after {
        resp.headers_mut()
            .insert("retry-after", s.to_string().parse().unwrap());
    }
    if let Some(l) = reply.location {
        resp.headers_mut().insert("location", l.parse().unwrap());
    }
    resp
}
