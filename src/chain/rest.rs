//! A chain's REST API (Tron's HTTP API, Esplora): one base URL, the chain's timeout and
//! headers, requests spaced by the chain's `max_requests_per_second` and retried like JSON-RPC
//! ones (connection errors, timeouts, 5xx, 429; backoff from 200 ms), errors naming the chain,
//! the path and the URL without credentials.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::rpc::{default_headers, Limiter};
use super::{shown_url, ChainError, ChainSettings};

pub(super) struct Rest {
    http: reqwest::Client,
    /// Without a trailing `/`.
    base: String,
    chain: String,
    max_retries: u32,
    limiter: Option<Arc<Limiter>>,
}

/// A body that is not JSON (Esplora answers some calls in plain text).
pub(super) enum Body {
    Json(Value),
    Text(String),
}

impl Rest {
    /// `what` names the API in the error when `base` is missing.
    pub(super) fn new(
        settings: &ChainSettings,
        base: Option<&str>,
        what: &str,
        limiter: Option<Arc<Limiter>>,
    ) -> Result<Rest, ChainError> {
        let fail = |reason: String| ChainError::Rpc {
            chain: settings.name.clone(),
            what: "connect",
            reason,
        };
        let base = base
            .ok_or_else(|| fail(format!("no URL configured for {what}")))?
            .trim_end_matches('/')
            .to_string();
        let http = reqwest::Client::builder()
            .timeout(settings.timeout)
            .connect_timeout(settings.timeout)
            .default_headers(default_headers(settings)?)
            .build()
            .map_err(|e| fail(format!("cannot build the HTTP client: {e}")))?;
        Ok(Rest {
            http,
            base,
            chain: settings.name.clone(),
            max_retries: settings.max_retries,
            limiter,
        })
    }

    /// `POST path` with a JSON body; the JSON answer.
    pub(super) async fn post(&self, path: &'static str, body: &Value) -> Result<Value, ChainError> {
        let url = format!("{}{path}", self.base);
        match self.send(path, &url, Some(body)).await? {
            Some(Body::Json(v)) => Ok(v),
            Some(Body::Text(t)) => Err(self.fail(path, &url, format!("not JSON: {t:.80}"))),
            None => Err(self.fail(path, &url, "HTTP 404".into())),
        }
    }

    /// `GET path`: the answer (JSON, or text when it is not JSON); `None` on 404.
    pub(super) async fn get(
        &self,
        what: &'static str,
        path: &str,
    ) -> Result<Option<Body>, ChainError> {
        let url = format!("{}{path}", self.base);
        self.send(what, &url, None).await
    }

    /// The chain's configured name.
    pub(super) fn chain(&self) -> &str {
        &self.chain
    }

    fn fail(&self, what: &'static str, url: &str, reason: String) -> ChainError {
        ChainError::Rpc {
            chain: self.chain.clone(),
            what,
            reason: format!("{}: {reason}", shown_url(url)),
        }
    }

    async fn send(
        &self,
        what: &'static str,
        url: &str,
        body: Option<&Value>,
    ) -> Result<Option<Body>, ChainError> {
        let mut attempt = 0u32;
        loop {
            if let Some(l) = &self.limiter {
                l.wait().await;
            }
            let req = match body {
                Some(b) => self.http.post(url).json(b),
                None => self.http.get(url),
            };
            let sent = req.send().await;
            let retry = match &sent {
                Err(e) => e.is_connect() || e.is_timeout() || e.is_request(),
                Ok(r) => r.status().is_server_error() || r.status().as_u16() == 429,
            };
            if retry && attempt < self.max_retries {
                attempt += 1;
                tokio::time::sleep(Duration::from_millis(100 << attempt.min(6))).await;
                continue;
            }
            let resp = sent.map_err(|e| self.fail(what, url, e.without_url().to_string()))?;
            if resp.status().as_u16() == 404 {
                return Ok(None);
            }
            if !resp.status().is_success() {
                let status = resp.status().as_u16();
                return Err(self.fail(what, url, format!("HTTP {status}")));
            }
            let text = resp
                .text()
                .await
                .map_err(|e| self.fail(what, url, e.without_url().to_string()))?;
            return Ok(Some(match serde_json::from_str(&text) {
                Ok(v) => Body::Json(v),
                Err(_) => Body::Text(text),
            }));
        }
    }
}
