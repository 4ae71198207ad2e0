//! serve's listener (axum): `/metrics`, `/healthz`, `/readyz`, and the webhook ingest
//! routes (`crate::webhook::router`) when given.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use futures::StreamExt as _;

use crate::engine::Engine;

/// The listener's routes; `webhooks` (`POST /webhooks/{provider}`) is merged in when given.
pub fn router(engine: Arc<Engine>, webhooks: Option<Router>) -> Router {
    let router = Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .with_state(engine);
    match webhooks {
        Some(w) => router.merge(w),
        None => router,
    }
}

async fn metrics(State(engine): State<Arc<Engine>>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        engine.metrics.encode(),
    )
}

/// How long `/readyz` waits for the database: under Kubernetes' default probe timeout (1 s),
/// so that a database that does not answer is a 503, not a probe timeout.
const READY_WITHIN: Duration = Duration::from_millis(800);

/// 200 when the database answers a round trip within `READY_WITHIN`, 503 otherwise.
async fn readyz(State(engine): State<Arc<Engine>>) -> impl IntoResponse {
    match tokio::time::timeout(READY_WITHIN, engine.store.ping()).await {
        Ok(Ok(())) => (StatusCode::OK, "ready\n".to_string()),
        Ok(Err(e)) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("database: {}\n", engine.redact(&e)),
        ),
        Err(_) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "database: no answer within {} ms\n",
                READY_WITHIN.as_millis()
            ),
        ),
    }
}

/// Why a request body was not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyError {
    /// Over the limit (announced by `Content-Length`, or counted): answer 413.
    TooLarge,
    /// The client broke off before the end.
    Broken,
}

/// After a 413, at most this much of the rest of the body is read and dropped, so that the
/// client gets the answer instead of a connection reset.
const DRAIN_LIMIT: usize = 1024 * 1024;

/// The whole body, at most `max` bytes: a larger one is refused without being read whole
/// (by its `Content-Length` before any byte, else as soon as the count passes `max`).
pub async fn read_limited(
    headers: &HeaderMap,
    body: Body,
    max: usize,
) -> Result<Vec<u8>, BodyError> {
    let announced = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let mut stream = body.into_data_stream();
    if announced.is_some_and(|n| n > max as u64) {
        if announced.is_some_and(|n| n <= DRAIN_LIMIT as u64) {
            drain(stream).await;
        }
        return Err(BodyError::TooLarge);
    }
    let mut raw = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|_| BodyError::Broken)?;
        if raw.len() + chunk.len() > max {
            drain(stream).await;
            return Err(BodyError::TooLarge);
        }
        raw.extend_from_slice(&chunk);
    }
    Ok(raw)
}

/// Reads and drops up to `DRAIN_LIMIT` more bytes (within the caller's timeout).
async fn drain(mut stream: axum::body::BodyDataStream) {
    let mut seen = 0usize;
    while let Some(Ok(chunk)) = stream.next().await {
        seen += chunk.len();
        if seen > DRAIN_LIMIT {
            break;
        }
    }
}
