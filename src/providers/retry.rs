//! One HTTP exchange with retries, shared by the provider clients: exponential backoff with
//! jitter, `Retry-After` on 429, the observer called once per attempt (by the callers), and
//! error text that never carries the API key.

use std::future::Future;
use std::time::Duration;

use rand::Rng;
use reqwest::header::HeaderMap;
use reqwest::{Response, StatusCode};
use serde_json::Value;

use crate::providers::Reason;
use crate::providers::StatusClass;
use crate::secret::{redact, Secret};

/// Longest wait a `Retry-After` header may ask for; longer requests are capped.
pub(super) const RETRY_AFTER_CAP: Duration = Duration::from_secs(60);
/// Longest backoff between two attempts.
const BACKOFF_CAP: Duration = Duration::from_secs(30);

/// What one attempt decided.
pub(super) enum Verdict<T> {
    Done(T),
    /// Try again (if attempts remain) after `after`, or after the backoff when `None`.
    Retry {
        reason: String,
        after: Option<Duration>,
    },
    /// Do not try again.
    Fail(String),
}

impl<T> Verdict<T> {
    pub(super) fn retry(reason: impl Into<String>) -> Self {
        Verdict::Retry {
            reason: reason.into(),
            after: None,
        }
    }
}

/// Runs `attempt(n)` for n = 1..=attempts until it is done or fails; returns the last reason.
pub(super) async fn with_retries<T, F, Fut>(
    attempts: u32,
    backoff: Duration,
    mut attempt: F,
) -> Result<T, Reason>
where
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = Verdict<T>>,
{
    let attempts = attempts.max(1);
    let mut last = String::new();
    for n in 1..=attempts {
        match attempt(n).await {
            Verdict::Done(v) => return Ok(v),
            Verdict::Fail(reason) => return Err(Reason(reason)),
            Verdict::Retry { reason, after } => {
                if n < attempts {
                    let wait = after.unwrap_or_else(|| backoff_delay(backoff, n));
                    tracing::debug!(attempt = n, wait_ms = wait.as_millis() as u64, %reason, "Provider request failed; retrying.");
                    tokio::time::sleep(wait).await;
                }
                last = reason;
            }
        }
    }
    Err(Reason(format!("gave up after {attempts} attempts: {last}")))
}

/// `backoff * 2^(n-1)`, capped, with "equal jitter": uniformly between half and all of it.
pub(super) fn backoff_delay(backoff: Duration, n: u32) -> Duration {
    let full = backoff
        .saturating_mul(2u32.saturating_pow(n.saturating_sub(1)))
        .min(BACKOFF_CAP);
    full.mul_f64(rand::thread_rng().gen_range(0.5..=1.0))
}

pub(super) fn status_class(status: StatusCode) -> StatusClass {
    if status.is_success() {
        StatusClass::Ok2xx
    } else if status.is_client_error() {
        StatusClass::Client4xx
    } else if status.is_server_error() {
        StatusClass::Server5xx
    } else {
        StatusClass::Error
    }
}

/// `Retry-After` in seconds (the HTTP-date form is not used by Laravel's throttle), capped.
pub(super) fn retry_after(resp: &Response) -> Option<Duration> {
    retry_after_secs(resp).map(|d| d.min(RETRY_AFTER_CAP))
}

/// `Retry-After` in seconds, uncapped (an HTTP date is not read). Shared with the event
/// delivery loop, which caps it its own way.
pub(crate) fn retry_after_secs(resp: &Response) -> Option<Duration> {
    let secs: u64 = resp
        .headers()
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(Duration::from_secs(secs))
}

/// A library error with its causes (`... : connection refused`), the key removed.
pub(super) fn describe(err: &reqwest::Error, key: &Secret) -> String {
    let mut text = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    redact(&text, &[key])
}

/// The start of an error response's body, for the error message, the key removed.
pub(super) async fn body_snippet(resp: Response, key: &Secret) -> String {
    let text = resp.text().await.unwrap_or_default();
    let mut cut: String = text.chars().take(200).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    redact(cut.trim(), &[key])
}

/// A request that must not be repeated once it may have been acted on (a resend): retried
/// only when it surely was not processed — connection refused, 429 (its `Retry-After`
/// honoured) or 503. A timeout, a connection lost after sending, or another status is an
/// error and is not repeated. `request` builds a fresh request per attempt; `observer` is
/// called once per attempt.
pub(super) async fn send_unrepeated(
    attempts: u32,
    backoff: Duration,
    key: &Secret,
    observer: &(dyn Fn(StatusClass) + Send + Sync),
    request: impl Fn() -> reqwest::RequestBuilder,
) -> Result<(), Reason> {
    with_retries(attempts, backoff, |_| {
        let sent = request().send();
        async move {
            let resp = match sent.await {
                Ok(resp) => resp,
                Err(e) => {
                    observer(StatusClass::Error);
                    return if e.is_connect() {
                        Verdict::retry(describe(&e, key))
                    } else {
                        Verdict::Fail(format!(
                            "{} (may have been sent; not repeated)",
                            describe(&e, key)
                        ))
                    };
                }
            };
            let status = resp.status();
            observer(status_class(status));
            match status {
                s if s.is_success() => Verdict::Done(()),
                StatusCode::TOO_MANY_REQUESTS => Verdict::Retry {
                    after: retry_after(&resp),
                    reason: format!("HTTP {status}"),
                },
                StatusCode::SERVICE_UNAVAILABLE => Verdict::retry(format!("HTTP {status}")),
                _ => Verdict::Fail(format!("HTTP {status}: {}", body_snippet(resp, key).await)),
            }
        }
    })
    .await
}

#[cfg(test)]
mod tests;

/// An idempotent GET (`request` builds it) with the read retry policy: a connection error, a
/// 5xx, a 429 (after its `Retry-After`), a body that cannot be read or is not JSON, and an
/// `Err` from `extract` (a body not of the expected shape) are tried again; any other status
/// fails at once. `extract` reads the JSON body and the headers. The observer sees each answer.
pub(super) async fn get_json<T>(
    attempts: u32,
    backoff: Duration,
    key: &Secret,
    observer: &(dyn Fn(StatusClass) + Send + Sync),
    request: impl Fn() -> reqwest::RequestBuilder,
    extract: impl Fn(&Value, &HeaderMap) -> Result<T, Reason>,
) -> Result<T, Reason> {
    let (request, extract) = (&request, &extract);
    with_retries(attempts, backoff, |_| async move {
        let resp = match request().send().await {
            Ok(resp) => resp,
            Err(e) => {
                observer(StatusClass::Error);
                return Verdict::retry(describe(&e, key));
            }
        };
        let status = resp.status();
        observer(status_class(status));
        if status == StatusCode::TOO_MANY_REQUESTS {
            return Verdict::Retry {
                after: retry_after(&resp),
                reason: format!("HTTP {status}"),
            };
        }
        if !status.is_success() {
            let text = format!("HTTP {status}: {}", body_snippet(resp, key).await);
            return if status.is_server_error() {
                Verdict::retry(text)
            } else {
                Verdict::Fail(text)
            };
        }
        let headers = resp.headers().clone();
        let body = match resp.bytes().await {
            Ok(b) => b,
            Err(e) => return Verdict::retry(format!("reading the body: {}", describe(&e, key))),
        };
        let json: Value = match serde_json::from_slice(&body) {
            Ok(v) => v,
            Err(e) => return Verdict::retry(format!("the body is not JSON: {e}")),
        };
        match extract(&json, &headers) {
            Ok(v) => Verdict::Done(v),
            Err(reason) => Verdict::retry(reason),
        }
    })
    .await
}
