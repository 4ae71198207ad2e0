//! The JSON-RPC transport under `ChainClient`: one alloy `RpcClient` per configured URL,
//! failover between them, bounded retries with exponential backoff and jitter, an optional
//! request-rate limit, JSON-RPC batches, and error reasons free of URL credentials.
//!
//! Failover is sticky and ordered: requests go to the *active* URL (the first at start); a
//! connection error, timeout, HTTP 5xx/429 or JSON-RPC rate limit moves the active URL to the
//! next one in the list (wrapping around), logged once per switch. A call makes at most
//! `max(max_retries + 1, number of URLs)` attempts in all; a backoff sleep comes before each
//! retry on a single URL, and after each full round over several.

use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use reqwest::header::{HeaderMap, HeaderValue};
use std::time::Duration;

use alloy::rpc::client::RpcClient;
use alloy::rpc::json_rpc::{RpcRecv, RpcSend};
use alloy::transports::{RpcError, TransportError};
use rand::Rng;
use serde_json::value::RawValue;
use serde_json::Value;
use tokio::time::Instant;

use super::{ChainError, ChainSettings};

mod errors;
mod transport;
pub use errors::shown_url;
use errors::{classify, describe, is_rate_limit, url_password, Retry};

/// First retry waits about this long; each further retry doubles it (plus jitter).
const BACKOFF_BASE: Duration = Duration::from_millis(100);
/// Longest error reason kept (response bodies can be large).
const MAX_REASON: usize = 300;

/// One configured URL.
struct Endpoint {
    client: RpcClient,
    /// What its last throttled answer asked to wait (`Retry-After`).
    wait: Arc<AtomicU64>,
    /// Never shown: the raw URL and its parsed (normalised) form, replaced by `shown`.
    raw: Vec<String>,
    /// Never shown: the URL's password, replaced by `***`.
    password: Option<String>,
    /// `scheme://host:port`, plus `/…` when the URL has a path (which may hold an API key).
    shown: String,
}

/// An alloy RPC client per URL of one chain, with the settings that shape retries and errors.
pub(crate) struct Rpc {
    chain: String,
    endpoints: Vec<Endpoint>,
    /// Index of the URL requests go to.
    active: AtomicUsize,
    failovers: AtomicU64,
    max_retries: u32,
    limiter: Option<Arc<Limiter>>,
}

/// At most one HTTP request per `interval` (`max_requests_per_second`), no burst: each
/// request takes the next free slot.
pub(crate) struct Limiter {
    interval: Duration,
    next: Mutex<Instant>,
}

impl Limiter {
    /// The chain's `max_requests_per_second`, when set.
    pub(crate) fn of(settings: &ChainSettings) -> Option<Arc<Limiter>> {
        settings
            .max_requests_per_second
            .filter(|r| *r > 0)
            .map(|r| {
                Arc::new(Limiter {
                    interval: Duration::from_secs(1) / r,
                    next: Mutex::new(Instant::now()),
                })
            })
    }

    pub(crate) async fn wait(&self) {
        let at = {
            let mut next = self.next.lock().unwrap_or_else(|e| e.into_inner());
            let at = (*next).max(Instant::now());
            *next = at + self.interval;
            at
        };
        tokio::time::sleep_until(at).await;
    }
}

/// The headers every request to a chain carries: `api_key` as `TRON-PRO-API-KEY`
/// (docs/configuration.md, "Tron") when set, marked sensitive so that no Debug output shows it.
pub(crate) fn default_headers(settings: &ChainSettings) -> Result<HeaderMap, ChainError> {
    let mut headers = HeaderMap::new();
    if let Some(key) = &settings.api_key {
        let mut v = HeaderValue::from_str(key.expose()).map_err(|_| ChainError::Rpc {
            chain: settings.name.clone(),
            what: "connect",
            reason: "api_key: not a valid HTTP header value".into(),
        })?;
        v.set_sensitive(true);
        headers.insert("TRON-PRO-API-KEY", v);
    }
    Ok(headers)
}

impl Rpc {
    pub(crate) fn new(settings: &ChainSettings) -> Result<Rpc, ChainError> {
        let fail = |reason: String| ChainError::Rpc {
            chain: settings.name.clone(),
            what: "connect",
            reason,
        };
        if settings.rpc_urls.is_empty() {
            return Err(fail("no RPC URL configured".into()));
        }
        let http = reqwest::Client::builder()
            .timeout(settings.timeout)
            .connect_timeout(settings.timeout)
            .default_headers(default_headers(settings)?)
            .build()
            .map_err(|e| fail(format!("cannot build the HTTP client: {e}")))?;
        let mut endpoints = Vec::with_capacity(settings.rpc_urls.len());
        for (i, raw) in settings.rpc_urls.iter().enumerate() {
            let shown = shown_url(raw);
            let url: reqwest::Url = raw
                .parse()
                .map_err(|e| fail(format!("rpc_urls[{i}] {shown} is not a URL: {e}")))?;
            // Forms a library may print: as given, normalised, and without the user info.
            let mut bare = url.clone();
            let _ = bare.set_username("");
            let _ = bare.set_password(None);
            let mut forms = vec![raw.clone(), url.to_string(), bare.to_string()];
            forms.sort_by_key(|f| std::cmp::Reverse(f.len()));
            let is_local = alloy::transports::utils::guess_local_url(url.as_str());
            let transport = transport::Http::new(http.clone(), url);
            endpoints.push(Endpoint {
                raw: forms,
                wait: transport.wait_cell(),
                client: RpcClient::new(transport, is_local),
                password: url_password(raw),
                shown,
            });
        }
        let limiter = Limiter::of(settings);
        Ok(Rpc {
            chain: settings.name.clone(),
            endpoints,
            active: AtomicUsize::new(0),
            failovers: AtomicU64::new(0),
            max_retries: settings.max_retries,
            limiter,
        })
    }

    /// The request budget (`max_requests_per_second`), for another interface of the same
    /// chain to share (Tron's HTTP API).
    pub(crate) fn limiter(&self) -> Option<Arc<Limiter>> {
        self.limiter.clone()
    }

    /// Number of configured URLs.
    pub(crate) fn len(&self) -> usize {
        self.endpoints.len()
    }

    /// The URL at `i` without credentials (`https://host:port/…`).
    pub(crate) fn shown(&self, i: usize) -> &str {
        &self.endpoints[i].shown
    }

    /// Index of the URL requests go to now.
    pub(crate) fn active(&self) -> usize {
        self.active.load(Ordering::Acquire)
    }

    /// Switches of the active URL so far.
    pub(crate) fn failovers(&self) -> u64 {
        self.failovers.load(Ordering::Relaxed)
    }

    /// One call, retried (and failed over) on connection errors, timeouts, HTTP 5xx and rate
    /// limits.
    pub(crate) async fn call<P, R>(
        &self,
        what: &'static str,
        method: &'static str,
        params: P,
    ) -> Result<R, ChainError>
    where
        P: RpcSend + Clone,
        R: RpcRecv,
    {
        self.with_failover(what, |c| {
            let params = params.clone();
            async move { c.request(method, params).await }
        })
        .await
    }

    /// One attempt at one URL, without failover or retry (the start-of-run checks ask each
    /// URL in turn).
    pub(crate) async fn call_at<P, R>(
        &self,
        i: usize,
        what: &'static str,
        method: &'static str,
        params: P,
    ) -> Result<R, ChainError>
    where
        P: RpcSend + Clone,
        R: RpcRecv,
    {
        self.throttle().await;
        let client = self.endpoints[i].client.clone();
        client
            .request(method, params)
            .await
            .map_err(|e| ChainError::Rpc {
                chain: self.chain.clone(),
                what,
                reason: self.clean(&format!("{}: {}", self.shown(i), describe(&e))),
            })
    }

    /// A call whose JSON-RPC error response is returned as `Ok(Err(message))` (not retried),
    /// for callers that give such errors a meaning (an unknown block tag). The message is the
    /// node's text as it sent it (a `String`): no caller tells one message from another.
    pub(crate) async fn call_or_reply_error<P, R>(
        &self,
        what: &'static str,
        method: &'static str,
        params: P,
    ) -> Result<Result<R, String>, ChainError>
    where
        P: RpcSend + Clone,
        R: RpcRecv,
    {
        let reply = self
            .with_failover(what, |c| {
                let params = params.clone();
                async move {
                    match c.request(method, params).await {
                        Ok(r) => Ok(Ok(r)),
                        Err(RpcError::ErrorResp(p)) if !is_rate_limit(p.code, &p.message) => {
                            Ok(Err(format!("{} (code {})", p.message, p.code)))
                        }
                        Err(e) => Err(e),
                    }
                }
            })
            .await?;
        Ok(reply.map_err(|m| self.clean(&m)))
    }

    /// Sends `calls` (method, params) as one JSON-RPC batch request and returns the results
    /// in the same order, as raw JSON text (decoded by the caller straight into the fields it
    /// needs, so that one malformed result spoils only its own query, and no `Value` tree is
    /// built per receipt). The whole batch is retried like a single call.
    pub(crate) async fn batch(
        &self,
        what: &'static str,
        calls: &[(&'static str, Value)],
    ) -> Result<Vec<Box<RawValue>>, ChainError> {
        self.with_failover(what, |c| try_batch(c, calls)).await
    }

    /// Runs `attempt` against the active URL until it succeeds, fails for good, or the
    /// attempt budget is spent; fails over to the next URL after each retryable failure.
    async fn with_failover<T, F, Fut>(
        &self,
        what: &'static str,
        mut attempt: F,
    ) -> Result<T, ChainError>
    where
        F: FnMut(RpcClient) -> Fut,
        Fut: Future<Output = Result<T, TransportError>>,
    {
        let n = self.endpoints.len();
        let budget = (self.max_retries as usize + 1).max(n);
        let mut idx = self.active.load(Ordering::Acquire);
        let mut tries = 0;
        loop {
            self.throttle().await;
            let e = match attempt(self.endpoints[idx].client.clone()).await {
                Ok(v) => return Ok(v),
                Err(e) => e,
            };
            tries += 1;
            if classify(&e) == Retry::No || tries >= budget {
                let mut reason = describe(&e);
                if n > 1 {
                    reason = format!("{}: {reason}", self.shown(idx));
                }
                if tries > 1 {
                    reason.push_str(&format!(" (after {tries} attempts"));
                    if n > 1 {
                        reason.push_str(&format!(" over {n} URLs"));
                    }
                    reason.push(')');
                }
                return Err(ChainError::Rpc {
                    chain: self.chain.clone(),
                    what,
                    reason: self.clean(&reason),
                });
            }
            tracing::debug!(chain = %self.chain, what, attempt = tries, url = %self.shown(idx),
                error = %self.clean(&describe(&e)), "Chain RPC attempt failed; retrying.");
            if n > 1 {
                idx = self.fail_over(idx, &e);
            }
            if n == 1 || tries % n == 0 {
                let round = (tries / n).saturating_sub(1).min(10) as u32;
                let base = BACKOFF_BASE.saturating_mul(1 << round);
                let jitter = rand::thread_rng().gen_range(0..=base.as_millis() as u64 / 2);
                // At least what the URL asked for (`Retry-After`), when it did.
                let asked = transport::waited(&self.endpoints[idx].wait);
                tokio::time::sleep(asked.max(base + Duration::from_millis(jitter))).await;
            }
        }
    }

    /// Moves the active URL from `from` to the next one, unless another request already
    /// moved it; logs the switch once. Returns the URL to try next.
    fn fail_over(&self, from: usize, e: &TransportError) -> usize {
        let to = (from + 1) % self.endpoints.len();
        match self
            .active
            .compare_exchange(from, to, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => {
                self.failovers.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(chain = %self.chain, from = from, from_url = %self.shown(from),
                    to = to, to_url = %self.shown(to), error = %self.clean(&describe(e)),
                    "Chain RPC URL failed; failing over to the next URL.");
                to
            }
            // Someone else switched already: follow, unless they switched back to `from`.
            Err(current) if current != from => current,
            Err(_) => to,
        }
    }

    async fn throttle(&self) {
        if let Some(l) = &self.limiter {
            l.wait().await;
        }
    }

    /// Removes every URL and password from a message, and bounds its length.
    pub(crate) fn clean(&self, text: &str) -> String {
        let mut out = text.to_string();
        for ep in &self.endpoints {
            for raw in &ep.raw {
                if !raw.is_empty() {
                    out = out.replace(raw.as_str(), &ep.shown);
                }
            }
            if let Some(pw) = &ep.password {
                out = out.replace(pw.as_str(), "***");
            }
        }
        if out.len() > MAX_REASON {
            let mut cut = MAX_REASON;
            while !out.is_char_boundary(cut) {
                cut -= 1;
            }
            out.truncate(cut);
            out.push('…');
        }
        out
    }
}

async fn try_batch(
    client: RpcClient,
    calls: &[(&'static str, Value)],
) -> Result<Vec<Box<RawValue>>, TransportError> {
    let mut batch = client.new_batch();
    let mut waiters = Vec::with_capacity(calls.len());
    for (method, params) in calls {
        waiters.push(batch.add_call::<Value, Box<RawValue>>(*method, params)?);
    }
    batch.send().await?;
    let mut out = Vec::with_capacity(waiters.len());
    for w in waiters {
        out.push(w.await?);
    }
    Ok(out)
}
