//! Webhook ingest end to end: a real `serve` (in-process, or the binary where it is killed),
//! real anvil, real SQLite and PostgreSQL. A delivery is POSTed, stored, resolved on chain or
//! through the status map, and applied with `source = 'webhook'`; refused deliveries apply
//! nothing; concurrent copies apply once; a delivery stored by a killed serve is applied once
//! by the next run. No secret shows in a response, in `/metrics` or on stderr.
//!
//! Route-level refusals over a bare router are in `webhook/*.rs`; here every case also looks
//! at the ledger and the audit trail.

mod chaingateway;
mod killed;
mod proxy;
mod qvard;
mod refusals;

use std::time::Duration;

use payrecon::app::{App, AppError};
use payrecon::domain::State;
use payrecon::store::Store;
use payrecon::webhook::{sign, Encoding};
use payrecon_testkit::inspect::TransitionRow;
use payrecon_testkit::sandbox::chaingateway::notification;
use tokio::sync::oneshot;

use crate::reconcile::{minutes_ago, World, KEY};
use crate::serve::series;
use crate::support::wait_until;
use payrecon_testkit::inspect::Inspect;

/// The `cg` provider's webhook secret.
pub(crate) const CG_SECRET: &str = "whsec_cg_ingest_7c1e9b24d5f3";
/// The `qvard` provider's webhook secret.
pub(crate) const QV_SECRET: &str = "whsec_qv_ingest_3a8f60e2b1c9";
/// The `qvard` provider's API key.
pub(crate) const QV_KEY: &str = "qk_ingest_51d0e7a93b";
/// Never fires while a test runs: only the webhook consumer applies anything.
pub(crate) const NEVER: &str = "[schedule]\ncron = \"0 0 0 1 1 *\"\n";
/// How long an accepted delivery may take to be applied.
pub(crate) const APPLY_WITHIN: Duration = Duration::from_secs(10);

/// Provider keys appended to the `cg` table of the scenario config (so they belong to `cg`),
/// then a `qvard` table (`kind = "http"`, preset `qvard`) when `qvard_url` is given.
pub(crate) fn providers(qvard_url: Option<&str>) -> String {
    let mut text = format!("webhook_secret = \"{CG_SECRET}\"\n");
    if let Some(url) = qvard_url {
        text.push_str(&format!(
            r#"
[providers.qvard]
kind = "http"
preset = "qvard"
base_url = "{url}"
api_key = "{QV_KEY}"
webhook_secret = "{QV_SECRET}"
chains = ["ethereum"]
timeout = "2s"
max_retries = 1
backoff = "20ms"
"#
        ));
    }
    text
}

/// Every secret of the scenario configs.
pub(crate) fn secrets() -> [&'static str; 4] {
    [CG_SECRET, QV_SECRET, QV_KEY, KEY]
}

/// Panics when `text` (`what`) holds any secret.
pub(crate) fn assert_no_secret(what: &str, text: &str) {
    for s in secrets() {
        assert!(!text.contains(s), "a secret in {what}:\n{text}");
    }
}

/// A Chaingateway notification for a token payment of 25 (JSON text) to `to` in `tx`.
pub(crate) fn cg_body(w: &World, id: &str, tx: &str, to: &str) -> String {
    notification(id, tx, &w.token, to, Some("25"), minutes_ago(1)).to_string()
}

pub(crate) type Headers = Vec<(&'static str, String)>;

/// Chaingateway's signature: base64 HMAC-SHA256(secret, txid).
pub(crate) fn cg_sig(secret: &str, txid: &str) -> Headers {
    vec![(
        "X-Signature",
        sign(secret, txid.as_bytes(), Encoding::Base64),
    )]
}

/// Qvard's signature: hex HMAC-SHA256(secret, raw body).
pub(crate) fn qv_sig(secret: &str, body: &str) -> Headers {
    vec![(
        "X-Qvard-Signature",
        sign(secret, body.as_bytes(), Encoding::Hex),
    )]
}

pub(crate) fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap()
}

/// POSTs a delivery to `{base}/webhooks/{provider}`; the status and the body, which must not
/// hold a secret.
pub(crate) async fn post(
    http: &reqwest::Client,
    base: &str,
    provider: &str,
    headers: &[(&str, String)],
    body: impl Into<reqwest::Body>,
) -> (u16, String) {
    let mut req = http
        .post(format!("{base}/webhooks/{provider}"))
        .header("content-type", "application/json")
        .body(body);
    for (k, v) in headers {
        req = req.header(*k, v);
    }
    let resp = req.send().await.expect("POST a webhook");
    let status = resp.status().as_u16();
    let text = resp.text().await.expect("read the answer");
    assert_no_secret("a webhook answer", &text);
    (status, text)
}

/// `payrecon::daemon::serve` in this process, on a free loopback port; stopped on drop.
pub(crate) struct Daemon {
    pub base: String,
    pub http: reqwest::Client,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<Result<(), AppError>>,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Daemon {
    /// Serves `app` (its `http.listen` is `127.0.0.1:0`) and waits until it is bound.
    pub async fn start(app: App) -> Daemon {
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let (ready_tx, ready_rx) = oneshot::channel();
        let task = tokio::spawn(payrecon::daemon::serve(
            app,
            async move {
                let _ = stop_rx.await;
            },
            move |addr| {
                let _ = ready_tx.send(addr);
            },
        ));
        let addr = tokio::time::timeout(Duration::from_secs(30), ready_rx)
            .await
            .expect("serve bound its listener in time")
            .expect("serve is ready");
        assert!(addr.ip().is_loopback(), "{addr}");
        Daemon {
            base: format!("http://{addr}"),
            http: client(),
            stop: Some(stop_tx),
            task,
        }
    }

    pub async fn post(
        &self,
        provider: &str,
        headers: &[(&str, String)],
        body: impl Into<reqwest::Body>,
    ) -> (u16, String) {
        post(&self.http, &self.base, provider, headers, body).await
    }

    /// `/metrics`, checked for secrets.
    pub async fn metrics(&self) -> String {
        let resp = self
            .http
            .get(format!("{}/metrics", self.base))
            .send()
            .await
            .expect("GET /metrics");
        assert_eq!(resp.status().as_u16(), 200);
        let text = resp.text().await.unwrap();
        assert_no_secret("/metrics", &text);
        text
    }

    /// `payrecon_webhooks_total{provider, outcome}`.
    pub async fn webhooks(&self, provider: &str, outcome: &str) -> f64 {
        let m = self.metrics().await;
        series(
            &m,
            "payrecon_webhooks_total",
            &[("provider", provider), ("outcome", outcome)],
        )
        .unwrap_or_else(|| panic!("no webhooks series {provider}/{outcome}:\n{m}"))
    }

    /// Graceful shutdown; serve must return Ok.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let r = tokio::time::timeout(Duration::from_secs(30), &mut self.task)
            .await
            .expect("serve stopped in time")
            .expect("serve task");
        assert!(r.is_ok(), "serve returned {r:?}");
    }
}

/// Every audit row.
pub(crate) async fn audit(store: &Store) -> Vec<TransitionRow> {
    store.transitions().await.expect("transitions")
}

/// Waits until no delivery of `provider` is left unprocessed in the inbox.
pub(crate) async fn wait_processed(store: &Store, provider: &str) {
    wait_until(
        &format!("the {provider} inbox to be processed"),
        APPLY_WITHIN,
        || async {
            store
                .unprocessed_webhook_deliveries(Some(provider), 10)
                .await
                .expect("list the inbox")
                .is_empty()
        },
    )
    .await;
}

/// Waits until `order_ref` has left `unpaid`.
pub(crate) async fn wait_applied(w: &World, order_ref: &str) {
    wait_until(
        &format!("{order_ref} to be applied"),
        APPLY_WITHIN,
        || async { w.order(order_ref).await.state != State::Unpaid },
    )
    .await;
}

/// The one audit row there must be: `(order_ref, unpaid -> to)`, from a webhook of `provider`,
/// outside any run.
pub(crate) fn assert_one_webhook_transition(
    rows: &[TransitionRow],
    order_ref: &str,
    to: State,
    provider: &str,
) {
    assert_eq!(rows.len(), 1, "exactly one audit row: {rows:?}");
    let t = &rows[0];
    assert_eq!(t.order_ref, order_ref, "{t:?}");
    assert_eq!((t.from_state, t.to_state), (State::Unpaid, to), "{t:?}");
    assert_eq!(t.source, "webhook", "{t:?}");
    assert_eq!(t.provider, provider, "{t:?}");
}
