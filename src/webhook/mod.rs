//! Webhook ingest: `POST /webhooks/{provider}` (docs/configuration.md, "Webhook ingest"). A
//! delivery is read (at most 64 KiB), its signature checked on the raw bytes, its JSON parsed,
//! its event id taken, and it is stored in the inbox (`payrecon_webhook_events`) before the
//! answer: 200 with an empty body for a new and a duplicate event alike. A new event is then
//! offered to `sink` without waiting; one the sink cannot take stays unprocessed in the table
//! for the next run.
//!
//! Applying the event is the engine's job (`Engine::process_webhook_deliveries`).

mod endpoint;
mod verify;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use tokio::sync::mpsc;

use crate::metrics::{Metrics, WebhookOutcome};
use crate::secret::{redact, Secret};
use crate::store::{Store, StoredDelivery};

pub use endpoint::endpoint;
pub use verify::{
    event_id, sign, verify, verify_at, Encoding, Endpoint, Scheme, Signed, VerifyError,
    DEFAULT_TOLERANCE, MAX_EVENT_ID_LEN,
};

/// Largest body accepted; a larger one is a 413 and is not read to the end.
pub const MAX_BODY: usize = 64 * 1024;
/// Bound of one delivery, from the first body byte to the answer (a slow client or a locked
/// database gets a 503; the provider retries).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// What the route needs.
pub struct Ingest {
    /// By provider name (the `{provider}` path segment).
    pub endpoints: HashMap<String, Endpoint>,
    pub store: Store,
    /// Receives each newly stored event (`try_send`: never waited for).
    pub sink: mpsc::Sender<StoredDelivery>,
    /// Redacted from every error text (webhook secrets, API keys, database password).
    pub secrets: Vec<Secret>,
    pub metrics: Arc<Metrics>,
}

impl Ingest {
    fn redact(&self, text: &str) -> String {
        let mut refs: Vec<&Secret> = self.secrets.iter().collect();
        refs.extend(self.endpoints.values().map(|e| &e.secret));
        redact(text, &refs)
    }
}

/// `POST /webhooks/{provider}`. Creates the `payrecon_webhooks_total` series of every
/// endpoint at 0.
pub fn router(ingest: Arc<Ingest>) -> Router {
    let mut names: Vec<String> = ingest
        .endpoints
        .values()
        .map(|e| e.provider.clone())
        .collect();
    names.sort();
    ingest.metrics.init_webhooks(&names);
    Router::new()
        .route("/webhooks/{provider}", post(deliver))
        .with_state(ingest)
}

/// The answer to one delivery, and what it counts as.
struct Answer {
    status: StatusCode,
    text: &'static str,
    outcome: WebhookOutcome,
}

impl Answer {
    const fn new(status: StatusCode, text: &'static str, outcome: WebhookOutcome) -> Answer {
        Answer {
            status,
            text,
            outcome,
        }
    }
}

const OK: Answer = Answer::new(StatusCode::OK, "", WebhookOutcome::accepted);
const DUPLICATE: Answer = Answer::new(StatusCode::OK, "", WebhookOutcome::duplicate);
const NOT_FOUND: Answer = Answer::new(
    StatusCode::NOT_FOUND,
    "no webhook endpoint for this provider\n",
    WebhookOutcome::unknown_provider,
);
const TOO_LARGE: Answer = Answer::new(
    StatusCode::PAYLOAD_TOO_LARGE,
    "body over 64 KiB\n",
    WebhookOutcome::too_large,
);
const BAD_SIGNATURE: Answer = Answer::new(
    StatusCode::BAD_REQUEST,
    "signature missing or invalid\n",
    WebhookOutcome::bad_signature,
);
const BAD_REQUEST: Answer = Answer::new(
    StatusCode::BAD_REQUEST,
    "body unreadable: not UTF-8 JSON, or no event id\n",
    WebhookOutcome::bad_request,
);
const UNAVAILABLE: Answer = Answer::new(
    StatusCode::SERVICE_UNAVAILABLE,
    "not stored; try again later\n",
    WebhookOutcome::error,
);

async fn deliver(
    State(ingest): State<Arc<Ingest>>,
    Path(provider): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let Some(endpoint) = ingest
        .endpoints
        .get(&provider)
        .filter(|e| !e.secret.is_empty())
    else {
        tracing::debug!("A webhook for an unknown provider was refused.");
        ingest
            .metrics
            .webhook("unknown", WebhookOutcome::unknown_provider);
        return respond(NOT_FOUND);
    };
    let answer = tokio::time::timeout(REQUEST_TIMEOUT, ingest_one(&ingest, endpoint, &headers, body))
        .await
        .unwrap_or_else(|_| {
            tracing::warn!(provider = %endpoint.provider, "A webhook delivery took too long and was not acknowledged.");
            UNAVAILABLE
        });
    ingest.metrics.webhook(&endpoint.provider, answer.outcome);
    respond(answer)
}

fn respond(a: Answer) -> Response {
    if a.text.is_empty() {
        return (a.status, Body::empty()).into_response();
    }
    (
        a.status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        a.text,
    )
        .into_response()
}

#[tracing::instrument(skip_all, fields(provider = %endpoint.provider))]
async fn ingest_one(
    ingest: &Ingest,
    endpoint: &Endpoint,
    headers: &HeaderMap,
    body: Body,
) -> Answer {
    let raw = match crate::body::read_limited(headers, body, MAX_BODY).await {
        Ok(raw) => raw,
        Err(crate::body::BodyError::TooLarge) => {
            tracing::info!("A webhook body over 64 KiB was refused.");
            return TOO_LARGE;
        }
        Err(crate::body::BodyError::Broken) => {
            tracing::info!("A webhook body could not be read to its end.");
            return BAD_REQUEST;
        }
    };
    if let Err(e) = verify(&endpoint.scheme, &endpoint.secret, headers, &raw) {
        tracing::info!(reason = %e, "A webhook delivery was refused.");
        return if e.is_signature() {
            BAD_SIGNATURE
        } else {
            BAD_REQUEST
        };
    }
    let Ok(text) = std::str::from_utf8(&raw) else {
        tracing::info!("A signed webhook body that is not UTF-8 was refused.");
        return BAD_REQUEST;
    };
    let event = serde_json::from_str(text)
        .map_err(|_| VerifyError::BadJson)
        .and_then(|json| event_id(&endpoint.scheme, headers, &json));
    let event = match event {
        Ok(id) => id,
        Err(e) => {
            tracing::info!(reason = %e, "A signed webhook delivery was refused.");
            return BAD_REQUEST;
        }
    };
    store(ingest, endpoint, &event, text).await
}

/// Stores the event, then offers a new one to the sink without waiting.
async fn store(ingest: &Ingest, endpoint: &Endpoint, event: &str, body: &str) -> Answer {
    let inserted = ingest
        .store
        .insert_webhook_delivery(&endpoint.provider, event, body, jiff::Timestamp::now())
        .await;
    match inserted {
        Ok(Some(stored)) => {
            tracing::info!(event_id = %event, "Webhook event stored (new).");
            match ingest.sink.try_send(stored) {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Full(_)) => tracing::debug!(event_id = %event,
                    "The webhook queue is full; the event waits in the inbox for the next run."),
                Err(mpsc::error::TrySendError::Closed(_)) => tracing::debug!(event_id = %event,
                    "No one takes webhook events now; the event waits in the inbox for the next run."),
            }
            OK
        }
        Ok(None) => {
            tracing::info!(event_id = %event, "Webhook event already stored (duplicate).");
            DUPLICATE
        }
        Err(e) => {
            tracing::warn!(event_id = %event, error = %ingest.redact(&e.to_string()),
                "A webhook event could not be stored; answered 503 so that the provider retries.");
            UNAVAILABLE
        }
    }
}
