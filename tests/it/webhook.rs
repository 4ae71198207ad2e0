//! `POST /webhooks/{provider}` served by a real axum server on loopback over a real store
//! (SQLite and PostgreSQL), with a channel as the sink: what is answered, what is stored,
//! what reaches the sink. The inbox table alone is in `webhook/inbox.rs`, each signature
//! scheme end to end in `webhook/schemes.rs`, races and failures in `webhook/faults.rs`.

mod faults;
mod inbox;
mod schemes;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use payrecon::metrics::Metrics;
use payrecon::secret::Secret;
use payrecon::store::{Store, StoredDelivery};
use payrecon::webhook::{self, sign, Encoding, Endpoint, Ingest, Scheme};
use tokio::sync::mpsc;

use crate::serve::series;
use crate::store::open;
use crate::support;
use payrecon_testkit::inspect::Inspect;

pub const SECRET: &str = "whsec_it_5f0c9a7e21";

/// A webhook router served on a free loopback port; the server stops on drop.
pub struct Hook {
    pub base: String,
    pub store: Store,
    pub rx: mpsc::Receiver<StoredDelivery>,
    pub metrics: Arc<Metrics>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for Hook {
    fn drop(&mut self) {
        self.server.abort();
    }
}

pub fn endpoint(provider: &str, scheme: Scheme) -> Endpoint {
    Endpoint {
        provider: provider.into(),
        secret: Secret::new(SECRET),
        scheme,
    }
}

impl Hook {
    /// Serves `endpoints` over a migrated store at `url`, with a sink of `capacity`.
    pub async fn start(url: &str, endpoints: Vec<Endpoint>, capacity: usize) -> Hook {
        let store = open(url).await;
        let (sink, rx) = mpsc::channel(capacity);
        let metrics = Arc::new(Metrics::new(&[], &[]));
        let ingest = Ingest {
            endpoints: endpoints
                .into_iter()
                .map(|e| (e.provider.clone(), e))
                .collect::<HashMap<_, _>>(),
            store: store.clone(),
            sink,
            secrets: vec![Secret::new("api-key-never-shown")],
            metrics: metrics.clone(),
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let router = webhook::router(Arc::new(ingest));
        let server = tokio::spawn(async move {
            axum::serve(listener, router).await.unwrap();
        });
        Hook {
            base,
            store,
            rx,
            metrics,
            server,
        }
    }

    /// POSTs `body` with `headers`; the status and the body text.
    pub async fn post(
        &self,
        provider: &str,
        headers: &[(&str, String)],
        body: impl Into<reqwest::Body>,
    ) -> (u16, String) {
        let mut req = client()
            .post(format!("{}/webhooks/{provider}", self.base))
            .header("content-type", "application/json")
            .body(body);
        for (k, v) in headers {
            req = req.header(*k, v);
        }
        let resp = req.send().await.expect("POST a webhook");
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        assert!(!text.contains(SECRET), "the secret in a response: {text}");
        (status, text)
    }

    /// POSTs `body` as a Qvard delivery with `Transfer-Encoding: chunked` (no Content-Length)
    /// over a raw connection; the status code.
    pub async fn post_chunked(&self, provider: &str, signature: &str, body: &[u8]) -> u16 {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let addr = self.base.trim_start_matches("http://");
        let mut conn = tokio::net::TcpStream::connect(addr).await.unwrap();
        let head = format!(
            "POST /webhooks/{provider} HTTP/1.1\r\nHost: {addr}\r\n\
             Transfer-Encoding: chunked\r\nX-Qvard-Signature: {signature}\r\n\
             Connection: close\r\n\r\n"
        );
        conn.write_all(head.as_bytes()).await.unwrap();
        for chunk in body.chunks(4096) {
            let sent = async {
                conn.write_all(format!("{:x}\r\n", chunk.len()).as_bytes())
                    .await?;
                conn.write_all(chunk).await?;
                conn.write_all(b"\r\n").await
            };
            if sent.await.is_err() {
                break; // the server answered and closed early
            }
        }
        let _ = conn.write_all(b"0\r\n\r\n").await;
        let mut answer = Vec::new();
        let _ = conn.read_to_end(&mut answer).await;
        let text = String::from_utf8_lossy(&answer);
        text.split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0)
    }

    /// Events on the sink now (without waiting for more).
    pub fn drain_sink(&mut self) -> Vec<StoredDelivery> {
        let mut out = Vec::new();
        while let Ok(e) = self.rx.try_recv() {
            out.push(e);
        }
        out
    }

    pub async fn stored(&self, provider: &str) -> i64 {
        self.store.webhook_delivery_count(provider).await.unwrap()
    }

    pub fn counted(&self, provider: &str, outcome: &str) -> f64 {
        let text = self.metrics.encode();
        series(
            &text,
            "payrecon_webhooks_total",
            &[("provider", provider), ("outcome", outcome)],
        )
        .unwrap_or_else(|| panic!("no series {provider}/{outcome} in\n{text}"))
    }
}

pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

pub type Headers = Vec<(&'static str, String)>;

/// A Qvard delivery: the body and its signature header.
pub fn qvard(body: &str) -> Headers {
    vec![(
        "X-Qvard-Signature",
        sign(SECRET, body.as_bytes(), Encoding::Hex),
    )]
}

pub const BODY: &str = r#"{"id":"ord_1001","status":"completed"}"#;

#[tokio::test]
async fn webhook_valid_delivery_is_stored_once_and_answered_200_empty() {
    let (_dir, urls) = support::all_backends().await;
    for url in &urls {
        let mut hook = Hook::start(url, vec![endpoint("qvard", Scheme::Qvard)], 16).await;
        assert_eq!(hook.counted("qvard", "accepted"), 0.0);
        assert_eq!(
            hook.post("qvard", &qvard(BODY), BODY).await,
            (200, String::new()),
            "{url}"
        );
        assert_eq!(hook.stored("qvard").await, 1);
        let sent = hook.drain_sink();
        assert_eq!(sent.len(), 1, "{url}");
        assert_eq!(sent[0].event_id, "ord_1001:completed");
        assert_eq!(sent[0].body, BODY);
        // The same event again: 200, nothing new stored or sent.
        assert_eq!(
            hook.post("qvard", &qvard(BODY), BODY).await,
            (200, String::new())
        );
        assert_eq!(hook.stored("qvard").await, 1);
        assert!(hook.drain_sink().is_empty());
        assert_eq!(hook.counted("qvard", "accepted"), 1.0);
        assert_eq!(hook.counted("qvard", "duplicate"), 1.0);
        let unprocessed = hook
            .store
            .unprocessed_webhook_deliveries(Some("qvard"), 10)
            .await
            .unwrap();
        assert_eq!(unprocessed, sent, "{url}");
    }
}

/// Valid JSON whose id PostgreSQL could not store: refused as unreadable, not a 503.
const NUL_ID: &str = r#"{"id":"a\u0000b","status":"completed"}"#;

#[tokio::test]
async fn webhook_refused_deliveries_store_nothing() {
    let (_dir, urls) = support::all_backends().await;
    for url in &urls {
        let mut hook = Hook::start(url, vec![endpoint("qvard", Scheme::Qvard)], 16).await;
        let tampered = BODY.replace("1001", "1002");
        let wrong_secret = vec![(
            "X-Qvard-Signature",
            sign("wrong", BODY.as_bytes(), Encoding::Hex),
        )];
        let reserialised = "{ \"status\": \"completed\", \"id\": \"ord_1001\" }";
        let cases: Vec<(&str, Headers, String)> = vec![
            ("tampered", qvard(BODY), tampered),
            ("wrong secret", wrong_secret, BODY.into()),
            ("missing header", vec![], BODY.into()),
            (
                "garbage header",
                vec![("X-Qvard-Signature", "zz".into())],
                BODY.into(),
            ),
            ("re-serialised", qvard(BODY), reserialised.into()),
            ("invalid JSON", qvard("{\"id\":"), "{\"id\":".into()),
            ("no status", qvard(r#"{"id":"x"}"#), r#"{"id":"x"}"#.into()),
            ("NUL in the id", qvard(NUL_ID), NUL_ID.into()),
        ];
        for (what, headers, body) in &cases {
            let (status, _) = hook.post("qvard", headers, body.clone()).await;
            assert_eq!(status, 400, "{url} {what}");
        }
        // Not UTF-8, validly signed.
        let latin1 = b"{\"id\":\"caf\xe9\",\"status\":\"x\"}".to_vec();
        let sig = vec![("X-Qvard-Signature", sign(SECRET, &latin1, Encoding::Hex))];
        assert_eq!(
            hook.post("qvard", &sig, latin1).await.0,
            400,
            "{url} latin-1"
        );
        assert_eq!(hook.stored("qvard").await, 0, "{url}");
        assert!(hook.drain_sink().is_empty());
        assert_eq!(hook.counted("qvard", "bad_signature"), 5.0);
        assert_eq!(hook.counted("qvard", "bad_request"), 4.0);
        assert_eq!(hook.counted("qvard", "accepted"), 0.0);
    }
}

#[tokio::test]
async fn webhook_oversized_bodies_are_refused_with_413() {
    let (_dir, urls) = support::all_backends().await;
    for url in &urls {
        let hook = Hook::start(url, vec![endpoint("qvard", Scheme::Qvard)], 16).await;
        // Validly signed JSON of 65 KiB + 1 bytes.
        let pad = "x".repeat(65 * 1024 + 1 - r#"{"id":"big","status":"s","pad":""}"#.len());
        let big = format!(r#"{{"id":"big","status":"s","pad":"{pad}"}}"#);
        assert_eq!(big.len(), 65 * 1024 + 1);
        assert_eq!(
            hook.post("qvard", &qvard(&big), big.clone()).await.0,
            413,
            "{url}"
        );
        // Streamed without a Content-Length (chunked): refused while reading.
        let sig = qvard(&big).remove(0).1;
        assert_eq!(
            hook.post_chunked("qvard", &sig, big.as_bytes()).await,
            413,
            "{url} chunked"
        );
        // Announced as 10 MiB: refused before reading.
        let huge = "y".repeat(10 * 1024 * 1024);
        assert_eq!(
            hook.post("qvard", &qvard(&huge), huge).await.0,
            413,
            "{url} 10 MiB"
        );
        // Exactly 64 KiB is fine.
        let pad = "x".repeat(64 * 1024 - r#"{"id":"max","status":"s","pad":""}"#.len());
        let max = format!(r#"{{"id":"max","status":"s","pad":"{pad}"}}"#);
        assert_eq!(
            hook.post("qvard", &qvard(&max), max.clone()).await.0,
            200,
            "{url}"
        );
        assert_eq!(hook.stored("qvard").await, 1, "{url}");
        assert_eq!(hook.counted("qvard", "too_large"), 3.0);
    }
}

#[tokio::test]
async fn webhook_unknown_provider_is_404_under_a_fixed_label() {
    let (dir, url) = support::sqlite_url();
    let hook = Hook::start(&url, vec![endpoint("qvard", Scheme::Qvard)], 16).await;
    assert_eq!(hook.counted("unknown", "unknown_provider"), 0.0);
    assert_eq!(hook.post("stranger", &qvard(BODY), BODY).await.0, 404);
    // An endpoint without a secret is not enabled.
    let mut open_door = endpoint("nosecret", Scheme::Qvard);
    open_door.secret = Secret::new("");
    let hook2 = Hook::start(&url, vec![open_door], 16).await;
    let unsigned = vec![(
        "X-Qvard-Signature",
        sign("", BODY.as_bytes(), Encoding::Hex),
    )];
    assert_eq!(hook2.post("nosecret", &unsigned, BODY).await.0, 404);
    assert_eq!(hook.counted("unknown", "unknown_provider"), 1.0);
    assert!(!hook.metrics.encode().contains("stranger"));
    // GET is not a delivery.
    let resp = client()
        .get(format!("{}/webhooks/qvard", hook.base))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 405);
    assert_eq!(
        hook.stored("qvard").await + hook.stored("nosecret").await,
        0
    );
    drop(dir);
}
