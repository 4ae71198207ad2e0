//! Webhook ingest in the simulator: `POST /webhooks/sandbox` served the way `serve` builds it
//! (`http::router` + `webhook::router`) on loopback, a consumer task applying stored events
//! like `serve`'s, and deliveries (Chaingateway's scheme: base64 HMAC of `txid`) posted in
//! order, reordered, duplicated, late, concurrently, during runs, and tampered.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use payrecon::app::App;
use payrecon::webhook::{sign, Encoding, Ingest};
use payrecon_testkit::sandbox::chaingateway::notification;
use payrecon_testkit::sandbox::{SANDBOX_PROVIDER, SANDBOX_TOKEN};
use tokio::task::JoinHandle;

use crate::world::decimal;

/// The sandbox provider's webhook secret (seeds with ingest).
pub const SECRET: &str = "whsec_sim_cg_5e0d9a71c4";

/// Provider keys that enable ingest: appended to the `[providers.sandbox]` table.
pub fn config_keys() -> String {
    format!("webhook_secret = \"{SECRET}\"\n")
}

/// Counted across the process for the summary line.
pub const NAMES: [&str; 9] = [
    "deliveries",
    "dup_deliveries",
    "concurrent_deliveries",
    "reordered_batches",
    "late_deliveries",
    "deliveries_during_run",
    "tampered",
    "retried_503",
    "webhook_transitions",
];
pub static COUNTS: [AtomicU64; 9] = [const { AtomicU64::new(0) }; 9];
pub const DELIVERIES: usize = 0;
pub const DUP: usize = 1;
pub const CONCURRENT: usize = 2;
pub const REORDERED: usize = 3;
pub const LATE: usize = 4;
pub const DURING_RUN: usize = 5;
pub const TAMPERED: usize = 6;
pub const RETRIED_503: usize = 7;
pub const WEBHOOK_TRANSITIONS: usize = 8;

pub fn count(i: usize, n: u64) {
    COUNTS[i].fetch_add(n, Ordering::Relaxed);
}

/// One POST: its body and signature header, and the answer it must get.
#[derive(Clone)]
pub struct Delivery {
    /// Index in `World::pays` (the payment it reports).
    pub pay: usize,
    pub event_id: String,
    pub body: String,
    /// `X-Signature`, or none (a tampered delivery without one).
    pub signature: Option<String>,
    /// 200 (authentic) or 400 (tampered).
    pub expect: u16,
}

/// The route, the consumer and what was delivered.
pub struct Hooks {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    pub http: reqwest::Client,
    /// Event ids answered 200.
    pub accepted: HashSet<String>,
    /// Event ids of tampered deliveries (answered 400, never stored).
    pub tampered: HashSet<String>,
    /// Pays with an accepted delivery.
    pub delivered: HashSet<usize>,
    /// A 503 is a right answer while the database is cut (the provider retries).
    pub allow_503: bool,
    /// Events the consumer has taken off the queue, and finished with (applied, rejected or
    /// deferred).
    taken: Arc<AtomicU64>,
    done: Arc<AtomicU64>,
    /// The route's end of the consumer's queue (to see it empty).
    queue: tokio::sync::mpsc::Sender<payrecon::store::StoredDelivery>,
    server: JoinHandle<()>,
    consumer: JoinHandle<()>,
}

impl Drop for Hooks {
    fn drop(&mut self) {
        self.server.abort();
        self.consumer.abort();
    }
}

impl Hooks {
    /// Serves `app`'s webhook endpoints as `serve` does and starts the consumer.
    pub async fn start(app: &App) -> Hooks {
        let (sink, mut events) = tokio::sync::mpsc::channel(1024);
        let queue = sink.clone();
        let ingest = Ingest {
            endpoints: app.webhooks.clone(),
            store: app.engine.store.clone(),
            sink,
            secrets: app.engine.secrets.clone(),
            metrics: app.engine.metrics.clone(),
        };
        let webhooks = payrecon::webhook::router(Arc::new(ingest));
        let router = payrecon::daemon::listener::router(app.engine.clone(), Some(webhooks));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port for webhooks");
        let base = format!("http://{}", listener.local_addr().expect("local address"));
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        let engine = app.engine.clone();
        let done = Arc::new(AtomicU64::new(0));
        let taken = Arc::new(AtomicU64::new(0));
        let (finished, took) = (done.clone(), taken.clone());
        let consumer = tokio::spawn(async move {
            while let Some(first) = events.recv().await {
                let mut batch = vec![first];
                while batch.len() < 200 {
                    match events.try_recv() {
                        Ok(e) => batch.push(e),
                        Err(_) => break,
                    }
                }
                let n = batch.len() as u64;
                took.fetch_add(n, Ordering::SeqCst);
                engine.process_webhook_deliveries(batch).await;
                finished.fetch_add(n, Ordering::SeqCst);
            }
        });
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(20))
            .build()
            .expect("an HTTP client");
        Hooks {
            base,
            http,
            accepted: HashSet::new(),
            tampered: HashSet::new(),
            delivered: HashSet::new(),
            allow_503: false,
            taken,
            done,
            queue,
            server,
            consumer,
        }
    }

    /// Waits until the consumer is idle (its queue empty, every batch it took finished,
    /// twice a few ms apart), so that nothing it does overlaps what comes next.
    pub async fn settle(&self) -> Result<(), String> {
        let idle = || {
            self.queue.capacity() == self.queue.max_capacity()
                && self.taken.load(Ordering::SeqCst) == self.done.load(Ordering::SeqCst)
        };
        let t0 = std::time::Instant::now();
        loop {
            if idle() {
                tokio::time::sleep(Duration::from_millis(3)).await;
                if idle() {
                    return Ok(());
                }
            }
            if t0.elapsed() > Duration::from_secs(20) {
                return Err("the webhook consumer did not go idle within 20 s".into());
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
}

/// An authentic delivery of `pay` (`tx`, `to`, native or token, `amount` base units).
pub fn delivery(
    pay: usize,
    event_id: &str,
    tx: &str,
    to: &str,
    native: bool,
    amount: u128,
) -> Delivery {
    let (asset, dec) = if native {
        ("native", 18)
    } else {
        (SANDBOX_TOKEN, 6)
    };
    let created = jiff::Timestamp::now() - jiff::SignedDuration::from_mins(5);
    let body = notification(
        event_id,
        tx,
        asset,
        to,
        Some(&decimal(amount, dec)),
        created,
    )
    .to_string();
    Delivery {
        pay,
        event_id: event_id.to_string(),
        body,
        signature: Some(sign(SECRET, tx.as_bytes(), Encoding::Base64)),
        expect: 200,
    }
}

/// `d` spoiled in one of three ways under a fresh event id: signed with another secret, a
/// `txid` changed under the original signature, or no signature header. Expects a 400.
pub fn tamper(d: &Delivery, how: u32, event_id: &str, other_tx: &str) -> Delivery {
    let mut json: serde_json::Value = serde_json::from_str(&d.body).expect("our own JSON");
    json["id"] = serde_json::Value::String(event_id.to_string());
    let txid = json["txid"].as_str().unwrap_or_default().to_string();
    let signature = match how % 3 {
        0 => Some(sign(
            "whsec_not_the_secret",
            txid.as_bytes(),
            Encoding::Base64,
        )),
        1 => {
            json["txid"] = serde_json::Value::String(other_tx.to_string());
            d.signature.clone()
        }
        _ => None,
    };
    count(TAMPERED, 1);
    Delivery {
        pay: d.pay,
        event_id: event_id.to_string(),
        body: json.to_string(),
        signature,
        expect: 400,
    }
}

/// POSTs `d`; checks the answer (200 and an empty body, or 400 for a tampered one). A 503
/// is retried when the database is being cut. Records what was accepted.
pub async fn post(h: &Hooks, d: &Delivery) -> Result<(), String> {
    let url = format!("{}/webhooks/{SANDBOX_PROVIDER}", h.base);
    for attempt in 0.. {
        let mut req = h
            .http
            .post(&url)
            .header("content-type", "application/json")
            .body(d.body.clone());
        if let Some(s) = &d.signature {
            req = req.header("X-Signature", s);
        }
        let resp = req
            .send()
            .await
            .map_err(|e| format!("POST webhook {}: {e}", d.event_id))?;
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap_or_default();
        if text.contains(SECRET) || text.contains(payrecon_testkit::sandbox::SANDBOX_API_KEY) {
            return Err(format!("a secret in a webhook answer: {text}"));
        }
        if status == 503 && h.allow_503 && attempt < 50 {
            count(RETRIED_503, 1);
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        }
        if status != d.expect || (status == 200 && !text.is_empty()) {
            return Err(format!(
                "webhook {} answered {status} {text:?}, expected {} with an empty body",
                d.event_id, d.expect
            ));
        }
        break;
    }
    Ok(())
}

/// Posts `ds` one after the other, or all at once.
pub async fn post_all(h: &Hooks, ds: &[Delivery], at_once: bool) -> Result<(), String> {
    if at_once {
        let all = futures::future::join_all(ds.iter().map(|d| post(h, d))).await;
        all.into_iter().collect::<Result<Vec<()>, String>>()?;
    } else {
        for d in ds {
            post(h, d).await?;
        }
    }
    Ok(())
}

/// Records the authentic deliveries of `ds` as accepted (after they were answered 200).
pub fn accept(h: &mut Hooks, ds: &[Delivery]) {
    for d in ds {
        if d.expect == 200 {
            h.accepted.insert(d.event_id.clone());
            h.delivered.insert(d.pay);
        } else {
            h.tampered.insert(d.event_id.clone());
        }
    }
}
