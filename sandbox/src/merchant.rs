//! A sandbox merchant endpoint on loopback for the demo: receives payrecon's events, checks
//! each Standard Webhooks signature (with the official library, `standardwebhooks`), answers
//! 200, and keeps what it received to show.

use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use standardwebhooks::Webhook;

/// The demo's events secret (a sandbox value; never use it for a real endpoint).
pub const SANDBOX_EVENTS_SECRET: &str = "whsec_c2FuZGJveC1ldmVudHMtc2VjcmV0LWRlbW8tb25seQ==";

/// One event as the endpoint received it.
#[derive(Debug, Clone)]
pub struct ReceivedEvent {
    pub id: String,
    pub kind: String,
    pub order_ref: String,
    pub from_state: String,
    pub to_state: String,
    /// What the event says in a line: `unpaid -> final`, or for a payment
    /// `paid 20000000 of 25000000, held: underpaid`.
    pub summary: String,
    pub signature_ok: bool,
}

#[derive(Clone)]
struct Shared {
    /// `None` for a secret the library refuses (no signature is then accepted).
    webhook: Option<Arc<Webhook>>,
    received: Arc<Mutex<Vec<ReceivedEvent>>>,
}

pub struct SandboxMerchant {
    received: Arc<Mutex<Vec<ReceivedEvent>>>,
}

impl SandboxMerchant {
    /// Starts the endpoint; returns it and its URL.
    pub async fn start() -> std::io::Result<(SandboxMerchant, String)> {
        let webhook = Webhook::new(SANDBOX_EVENTS_SECRET).ok().map(Arc::new);
        let received = Arc::new(Mutex::new(Vec::new()));
        let shared = Shared {
            webhook,
            received: received.clone(),
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}/events", listener.local_addr()?);
        let app = axum::Router::new()
            .route("/events", axum::routing::post(receive))
            .with_state(shared);
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok((SandboxMerchant { received }, url))
    }

    pub fn received(&self) -> Vec<ReceivedEvent> {
        self.received.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

async fn receive(State(s): State<Shared>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let h = |n: &str| {
        headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    };
    let id = h("webhook-id");
    let signature_ok = s
        .webhook
        .as_ref()
        .is_some_and(|w| w.verify(&body, &headers).is_ok());
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let field = |p: &str| {
        v.pointer(p)
            .and_then(|x| x.as_str())
            .unwrap_or("?")
            .to_string()
    };
    let summary = if v.pointer("/data/payment").is_some() {
        let held = v
            .pointer("/data/held")
            .and_then(|h| h.as_str())
            .map(|h| format!(", held: {h}"))
            .unwrap_or_default();
        format!(
            "paid {} of {}{held}",
            field("/data/order/amount_paid"),
            field("/data/order/amount_due")
        )
    } else {
        format!(
            "{} -> {}",
            field("/data/from_state"),
            field("/data/to_state")
        )
    };
    let event = ReceivedEvent {
        id,
        kind: field("/type"),
        order_ref: field("/data/order_ref"),
        from_state: field("/data/from_state"),
        to_state: field("/data/to_state"),
        summary,
        signature_ok,
    };
    if let Ok(mut r) = s.received.lock() {
        r.push(event);
    }
    if signature_ok {
        StatusCode::OK
    } else {
        StatusCode::BAD_REQUEST
    }
}
