//! serve's listener (axum) and every route it serves: `/metrics`, `/healthz`, `/readyz`, the
//! webhook ingest routes (`crate::webhook::router`, with the consumer that applies what they
//! store), with `[api] token` the API (`crate::api::router`), and with `[console] enabled` the
//! operator console (`crate::console::router`).

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;

use tokio::task::JoinHandle;

use crate::app::App;
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

/// The routes (webhooks, the listener's own, the API if set) and the spawned delivery consumer.
pub(super) fn routes(
    app: &App,
    console: Option<Arc<crate::console::Console>>,
) -> (axum::Router, JoinHandle<()>) {
    // Webhook deliveries: stored by the route, applied by one consumer task in batches.
    let (sink, deliveries) = tokio::sync::mpsc::channel(super::DELIVERY_QUEUE);
    let ingest = crate::webhook::Ingest {
        endpoints: app.webhooks.clone(),
        store: app.engine.store.clone(),
        sink,
        secrets: app.engine.secrets.clone(),
        metrics: app.engine.metrics.clone(),
    };
    let webhooks = crate::webhook::router(Arc::new(ingest));
    let consumer = tokio::spawn(super::apply_deliveries(app.engine.clone(), deliveries));
    let mut router = router(app.engine.clone(), Some(webhooks));
    if let Some(api) = &app.config.api {
        let secrets = app.engine.secrets.clone();
        let api = crate::api::Api::new(
            app.engine.store.clone(),
            app.config
                .catalog()
                .with_max_amount(app.engine.store.max_amount()),
            &api.token,
            secrets,
            app.engine.metrics.clone(),
        );
        router = router.merge(crate::api::router(Arc::new(api)));
    }
    if let Some(c) = console {
        router = router.merge(crate::console::router(c));
    }
    (router, consumer)
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
