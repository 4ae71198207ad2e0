//! JSON-RPC over HTTP for one URL, as alloy's reqwest transport sends and answers, plus
//! `Retry-After`: the wait a throttled answer (429, 503) asks for is kept for the retry loop
//! (`Rpc::with_failover`), which sleeps at least that long (at most `RETRY_AFTER_CAP`) before
//! asking the same URL again.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use alloy::rpc::json_rpc::{RequestPacket, ResponsePacket};
use alloy::transports::{TransportError, TransportErrorKind, TransportFut, TransportResult};
use reqwest::header::RETRY_AFTER;

/// The longest `Retry-After` honoured: a node asking for more fails the attempt budget first.
pub(super) const RETRY_AFTER_CAP: Duration = Duration::from_secs(30);

#[derive(Clone)]
pub(super) struct Http {
    client: reqwest::Client,
    url: reqwest::Url,
    /// Milliseconds the last throttled answer asked to wait (0: none), taken by `waited`.
    wait: Arc<AtomicU64>,
}

impl Http {
    pub fn new(client: reqwest::Client, url: reqwest::Url) -> Http {
        Http {
            client,
            url,
            wait: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Where the retry loop reads what the URL last asked for.
    pub fn wait_cell(&self) -> Arc<AtomicU64> {
        self.wait.clone()
    }

    async fn send(self, req: RequestPacket) -> TransportResult<ResponsePacket> {
        let resp = self
            .client
            .post(self.url)
            .json(&req)
            .headers(req.headers())
            .send()
            .await
            .map_err(TransportErrorKind::custom)?;
        let status = resp.status();
        let asked = retry_after(resp.headers());
        let body = resp.bytes().await.map_err(TransportErrorKind::custom)?;
        if !status.is_success() {
            if let Some(d) = asked {
                let ms = d.min(RETRY_AFTER_CAP).as_millis() as u64;
                self.wait.store(ms, Ordering::Relaxed);
            }
            return Err(TransportErrorKind::http_error(
                status.as_u16(),
                String::from_utf8_lossy(&body).into_owned(),
            ));
        }
        serde_json::from_slice(&body)
            .map_err(|err| TransportError::deser_err(err, String::from_utf8_lossy(&body)))
    }
}

/// `Retry-After` in seconds (an HTTP date is not read).
fn retry_after(h: &reqwest::header::HeaderMap) -> Option<Duration> {
    let secs = h.get(RETRY_AFTER)?.to_str().ok()?.trim().parse().ok()?;
    Some(Duration::from_secs(secs))
}

/// What the URL behind `cell` last asked to wait, cleared.
pub(super) fn waited(cell: &AtomicU64) -> Duration {
    Duration::from_millis(cell.swap(0, Ordering::Relaxed))
}

impl tower::Service<RequestPacket> for Http {
    type Response = ResponsePacket;
    type Error = TransportError;
    type Future = TransportFut<'static>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: RequestPacket) -> Self::Future {
        Box::pin(self.clone().send(req))
    }
}
