//! serve's listener (axum): `/metrics`, `/healthz`, `/readyz`, and the webhook ingest
//! routes (`crate::webhook::router`) when given.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;

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
