//! The JSON-RPC transport under `ChainClient`: one alloy `RpcClient` over HTTP, retries with
//! exponential backoff and jitter, JSON-RPC batches, and error reasons free of URL secrets.

use std::time::Duration;

use alloy::rpc::client::RpcClient;
use alloy::rpc::json_rpc::{RpcRecv, RpcSend};
use alloy::transports::http::reqwest;
use alloy::transports::{RpcError, TransportError, TransportErrorKind};
use rand::Rng;
use serde_json::Value;

use super::{ChainError, ChainSettings};

/// First retry waits about this long; each further retry doubles it (plus jitter).
const BACKOFF_BASE: Duration = Duration::from_millis(100);
/// Longest error reason kept (response bodies can be large).
const MAX_REASON: usize = 300;

/// An alloy RPC client for one chain, with the settings that shape retries and errors.
pub(crate) struct Rpc {
    client: RpcClient,
    chain: String,
    max_retries: u32,
    /// Never shown in an error: the raw URL, replaced by `shown_url`.
    url: String,
    /// Never shown in an error: the URL's password, replaced by `***`.
    password: Option<String>,
    /// The URL with its password replaced, shown instead.
    shown_url: String,
}

/// Whether a failed attempt may succeed when sent again.
#[derive(Debug, PartialEq, Eq)]
enum Retry {
    Yes,
    No,
}

impl Rpc {
    pub(crate) fn new(settings: &ChainSettings) -> Result<Rpc, ChainError> {
        let shown_url = crate::secret::redact_url(&settings.rpc_url);
        let fail = |reason: String| ChainError::Rpc {
            chain: settings.name.clone(),
            what: "connect",
            reason,
        };
        let url: reqwest::Url = settings
            .rpc_url
            .parse()
            .map_err(|e| fail(format!("rpc_url {shown_url} is not a URL: {e}")))?;
        let http = reqwest::Client::builder()
            .timeout(settings.timeout)
            .connect_timeout(settings.timeout)
            .build()
            .map_err(|e| fail(format!("cannot build the HTTP client: {e}")))?;
        let client = RpcClient::new_http_with_client(http, url);
        Ok(Rpc {
            client,
            chain: settings.name.clone(),
            max_retries: settings.max_retries,
            url: settings.rpc_url.clone(),
            password: url_password(&settings.rpc_url),
            shown_url,
        })
    }

    /// One call, retried on connection errors, timeouts, HTTP 5xx and rate limits.
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
        let mut attempt = 0;
        loop {
            match self.client.request(method, params.clone()).await {
                Ok(r) => return Ok(r),
                Err(e) => self.after_failure(what, &e, &mut attempt).await?,
            }
        }
    }

    /// A call whose JSON-RPC error response is returned as `Ok(Err(message))` (not retried),
    /// for callers that give such errors a meaning (an unknown block tag).
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
        let mut attempt = 0;
        loop {
            match self.client.request(method, params.clone()).await {
                Ok(r) => return Ok(Ok(r)),
                Err(RpcError::ErrorResp(p)) if !is_rate_limit(p.code, &p.message) => {
                    return Ok(Err(self.clean(&format!("{} (code {})", p.message, p.code))))
                }
                Err(e) => self.after_failure(what, &e, &mut attempt).await?,
            }
        }
    }

    /// Sends `calls` (method, params) as one JSON-RPC batch request and returns the results
    /// in the same order, as raw JSON (decoded by the caller, so that one malformed result
    /// spoils only its own query). The whole batch is retried like a single call.
    pub(crate) async fn batch(
        &self,
        what: &'static str,
        calls: &[(&'static str, Value)],
    ) -> Result<Vec<Value>, ChainError> {
        let mut attempt = 0;
        loop {
            match self.try_batch(calls).await {
                Ok(values) => return Ok(values),
                Err(e) => self.after_failure(what, &e, &mut attempt).await?,
            }
        }
    }

    async fn try_batch(
        &self,
        calls: &[(&'static str, Value)],
    ) -> Result<Vec<Value>, TransportError> {
        let mut batch = self.client.new_batch();
        let mut waiters = Vec::with_capacity(calls.len());
        for (method, params) in calls {
            waiters.push(batch.add_call::<Value, Value>(*method, params)?);
        }
        batch.send().await?;
        let mut out = Vec::with_capacity(waiters.len());
        for w in waiters {
            out.push(w.await?);
        }
        Ok(out)
    }

    /// Sleeps before the next attempt, or turns the error into a `ChainError`.
    async fn after_failure(
        &self,
        what: &'static str,
        e: &TransportError,
        attempt: &mut u32,
    ) -> Result<(), ChainError> {
        if classify(e) == Retry::No || *attempt >= self.max_retries {
            let tries = *attempt + 1;
            let suffix = if tries > 1 {
                format!(" (after {tries} attempts)")
            } else {
                String::new()
            };
            return Err(ChainError::Rpc {
                chain: self.chain.clone(),
                what,
                reason: format!("{}{suffix}", self.clean(&describe(e))),
            });
        }
        let base = BACKOFF_BASE.saturating_mul(1 << (*attempt).min(10));
        let jitter = rand::thread_rng().gen_range(0..=base.as_millis() as u64 / 2);
        tracing::debug!(chain = %self.chain, what, attempt = *attempt + 1, error = %self.clean(&describe(e)),
            "Chain RPC attempt failed; retrying.");
        tokio::time::sleep(base + Duration::from_millis(jitter)).await;
        *attempt += 1;
        Ok(())
    }

    /// Removes the URL and its password from a message, and bounds its length.
    pub(crate) fn clean(&self, text: &str) -> String {
        let mut out = text.replace(self.url.as_str(), &self.shown_url);
        if let Some(pw) = &self.password {
            out = out.replace(pw.as_str(), "***");
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

fn classify(e: &TransportError) -> Retry {
    match e {
        RpcError::Transport(kind) => match kind {
            TransportErrorKind::HttpError(h) if h.status >= 500 || h.status == 429 => Retry::Yes,
            TransportErrorKind::HttpError(_) => Retry::No,
            // Connection refused/reset, timeouts, a body cut short, a missing batch entry.
            TransportErrorKind::Custom(_)
            | TransportErrorKind::BackendGone
            | TransportErrorKind::MissingBatchResponse(_) => Retry::Yes,
            _ => Retry::No,
        },
        RpcError::ErrorResp(p) if is_rate_limit(p.code, &p.message) => Retry::Yes,
        _ => Retry::No,
    }
}

/// JSON-RPC errors that say "slow down" rather than "no".
fn is_rate_limit(code: i64, message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    code == 429 || code == -32005 || m.contains("rate limit") || m.contains("too many requests")
}

/// The error with its sources ("error sending request: connection refused").
fn describe(e: &TransportError) -> String {
    match e {
        RpcError::Transport(TransportErrorKind::HttpError(h)) => {
            format!("HTTP {}: {}", h.status, h.body.trim())
        }
        RpcError::ErrorResp(p) => format!("JSON-RPC error {}: {}", p.code, p.message),
        other => {
            let mut text = other.to_string();
            let mut source = std::error::Error::source(other);
            while let Some(s) = source {
                let s_text = s.to_string();
                if !text.contains(&s_text) {
                    text.push_str(": ");
                    text.push_str(&s_text);
                }
                source = s.source();
            }
            text
        }
    }
}

/// The password in `scheme://user:password@host/...`, if any.
fn url_password(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split('/').next()?;
    let userinfo = authority.rsplit_once('@')?.0;
    let pw = userinfo.split_once(':')?.1;
    (!pw.is_empty()).then(|| pw.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_found_in_urls() {
        assert_eq!(
            url_password("https://user:pw1@host:8545/v3/key").as_deref(),
            Some("pw1")
        );
        assert_eq!(url_password("http://127.0.0.1:8545"), None);
        assert_eq!(url_password("http://user@host"), None);
    }

    #[test]
    fn rate_limits_are_recognised() {
        assert!(is_rate_limit(-32005, "limit exceeded"));
        assert!(is_rate_limit(-32000, "Rate limit reached"));
        assert!(!is_rate_limit(-32601, "method not found"));
    }
}
