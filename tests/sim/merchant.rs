//! The merchant's application (docs/reference.md §6): a receiver of payrecon's events on
//! loopback that fulfils an order on `order.final`, deduplicating on `webhook-id` as the
//! reference receiver does, and the merchant's own webhook handler, which fulfils when *its*
//! conditional update (the Qvard guide's `UPDATE … WHERE state <> 'paid'`) moved the order to
//! `final`. The invariant: each order that ends `final` is fulfilled exactly once, whoever won.
//!
//! The receiver refuses some requests (500, deterministic per seed), so retries, and a
//! second instance claiming the same outbox, are part of every seed that has events.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State as AxState;
use axum::http::{HeaderMap, StatusCode};

/// The events secret of the simulated merchant.
pub const SECRET: &str = "whsec_c2ltdWxhdG9yLW1lcmNoYW50LXNlY3JldC0wMDE=";

/// Counters for the summary line.
pub static EVENTS_RECEIVED: AtomicU64 = AtomicU64::new(0);
pub static EVENTS_REFUSED: AtomicU64 = AtomicU64::new(0);
pub static EVENTS_REDELIVERED: AtomicU64 = AtomicU64::new(0);
pub static HANDLER_FULFILMENTS: AtomicU64 = AtomicU64::new(0);

#[derive(Default)]
struct Inner {
    /// webhook-ids recorded with their effect (the receiver's unique index).
    seen: HashSet<String>,
    /// order_ref -> who fulfilled it, in order (`event` or `handler`).
    fulfilled: HashMap<String, Vec<&'static str>>,
    /// Requests so far (every `refuse_every`-th is answered 500).
    requests: u64,
    bad_signatures: u64,
    /// Per order, the rank of the highest `to_state` acknowledged (2xx) so far.
    acked: HashMap<String, u8>,
    /// Violations of the per-order order of events (docs/reference.md §6) seen (an order's
    /// later event acknowledged first).
    out_of_order: Vec<String>,
    /// Orders whose handler's update to `final` failed with its connection cut: whether it
    /// committed is unknown (a real handler fulfils in the transaction of its update, so
    /// there the effect commits or not with it; here the fulfilment is not recorded).
    commit_unknown: HashSet<String>,
}

#[derive(Clone)]
pub struct Merchant {
    pub url: String,
    inner: Arc<Mutex<Inner>>,
}

#[derive(Clone)]
struct Shared {
    inner: Arc<Mutex<Inner>>,
    key: Vec<u8>,
    refuse_every: u64,
}

impl Merchant {
    /// `refuse_every` = 0: never refuse.
    pub async fn start(refuse_every: u64) -> Merchant {
        let inner = Arc::new(Mutex::new(Inner::default()));
        let shared = Shared {
            inner: inner.clone(),
            key: payrecon::config::decode_secret(SECRET).expect("a valid secret"),
            refuse_every,
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/payrecon/events", listener.local_addr().unwrap());
        let app = axum::Router::new()
            .route("/payrecon/events", axum::routing::post(receive))
            .with_state(shared);
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Merchant { url, inner }
    }

    /// The `[events]` table pointing at this receiver (short delays: a seed lasts seconds).
    pub fn config_keys(&self) -> String {
        format!(
            "\n[events]\nurl = \"{}\"\nsecret = \"{SECRET}\"\ntimeout = \"2s\"\n\
             max_concurrency = 4\nretry_schedule = [\"10ms\", \"10ms\", \"20ms\", \"20ms\", \
             \"50ms\", \"50ms\"]\nflush_timeout = \"5s\"\n",
            self.url
        )
    }

    /// The merchant's own handler won its conditional update to `final`: it fulfils.
    pub fn fulfil_by_handler(&self, order_ref: &str) {
        HANDLER_FULFILMENTS.fetch_add(1, Ordering::Relaxed);
        let mut g = self.inner.lock().unwrap();
        g.fulfilled
            .entry(order_ref.to_string())
            .or_default()
            .push("handler");
    }

    /// The handler's update to `final` of `order_ref` failed mid-flight (connection cut).
    pub fn commit_unknown(&self, order_ref: &str) {
        let mut g = self.inner.lock().unwrap();
        g.commit_unknown.insert(order_ref.to_string());
    }

    pub fn commits_unknown(&self) -> HashSet<String> {
        self.inner.lock().unwrap().commit_unknown.clone()
    }

    pub fn fulfilments(&self) -> HashMap<String, Vec<&'static str>> {
        self.inner.lock().unwrap().fulfilled.clone()
    }

    pub fn bad_signatures(&self) -> u64 {
        self.inner.lock().unwrap().bad_signatures
    }

    /// Events acknowledged out of their order's transition order (must stay empty).
    pub fn out_of_order(&self) -> Vec<String> {
        self.inner.lock().unwrap().out_of_order.clone()
    }
}

async fn receive(AxState(s): AxState<Shared>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let h = |n: &str| {
        headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    };
    let id = h("webhook-id");
    let ts: i64 = h("webhook-timestamp").parse().unwrap_or_default();
    let good = payrecon::events::sign::verify(&s.key, &id, ts, &body, &h("webhook-signature"));
    let mut g = s.inner.lock().unwrap();
    g.requests += 1;
    if !good {
        g.bad_signatures += 1;
        return StatusCode::BAD_REQUEST;
    }
    if s.refuse_every > 0 && g.requests % s.refuse_every == 0 {
        EVENTS_REFUSED.fetch_add(1, Ordering::Relaxed);
        return StatusCode::INTERNAL_SERVER_ERROR;
    }
    EVENTS_RECEIVED.fetch_add(1, Ordering::Relaxed);
    // One "transaction": the id and the effect together.
    if !g.seen.insert(id) {
        EVENTS_REDELIVERED.fetch_add(1, Ordering::Relaxed);
        return StatusCode::OK;
    }
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let order_ref = v["data"]["order_ref"].as_str().unwrap_or("?").to_string();
    if v["type"] == "order.payment_received" {
        // A payment's event comes before the transition it causes: the order it names is
        // never behind what was acknowledged before it.
        let prev = g.acked.get(&order_ref).copied().unwrap_or(0);
        let rank = match v["data"]["order"]["state"].as_str() {
            Some("pending") => 1,
            Some("confirmed") => 2,
            Some("final") => 3,
            _ => 0,
        };
        if rank < prev {
            g.out_of_order.push(format!(
                "{order_ref}: a payment at rank {rank} after rank {prev}"
            ));
        }
        return StatusCode::OK;
    }
    // An order's events arrive in the order of its transitions: each acknowledged event
    // goes further than every one acknowledged before it.
    let rank = match v["data"]["to_state"].as_str() {
        Some("pending") => 1,
        Some("confirmed") => 2,
        Some("final") => 3,
        _ => 0,
    };
    let prev = g.acked.get(&order_ref).copied().unwrap_or(0);
    if rank <= prev {
        let kind = v["type"].as_str().unwrap_or("?").to_string();
        g.out_of_order
            .push(format!("{order_ref}: {kind} after an event to rank {prev}"));
    }
    g.acked.insert(order_ref.clone(), rank.max(prev));
    if v["type"] == "order.final" {
        g.fulfilled.entry(order_ref).or_default().push("event");
    }
    StatusCode::OK
}
