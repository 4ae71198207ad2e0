//! The expected-payments API (docs/api.md) on `serve`'s listener, on when `[api] token` is set:
//! a shop registers what it expects (`POST /v1/orders`), reads an order with its payments,
//! open exceptions and events (`GET /v1/orders/{order_ref}`), pages through changed orders
//! (`GET /v1/orders`), and hears back by the events of `[events]`. `GET /v1/openapi.json`
//! serves the OpenAPI 3.1 document generated from the handlers below (`doc.rs`).
//!
//! Every `/v1/orders` request carries `Authorization: Bearer <token>`; the token is compared
//! in constant time (digests of equal length) and never logged. Errors are RFC 9457 problem
//! details (`problem.rs`). A body is read up to 64 KiB, never further.

pub mod doc;
pub mod problem;
pub mod request;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::domain::Catalog;
use crate::secret::{redact, Secret};
use crate::store::{
    EventFilter, EventRow, ExceptionFilter, ExceptionRow, OrderView, PaymentView, Registered, Store,
};
use problem::{FieldProblem, Problem};

/// Largest request body; a larger one is a 413 and is not read to the end.
pub const MAX_BODY: usize = 64 * 1024;
/// Bound of one request, from the first byte of the body to the answer (503 past it).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Payments, exceptions and events shown with one order (the newest, at most).
const DETAIL_LIMIT: i64 = 100;

/// What the routes need.
pub struct Api {
    pub store: Store,
    /// The configured chains and tokens an order may name.
    pub catalog: Catalog,
    /// SHA-256 of the token (compared in constant time; the token itself is not kept here).
    token_digest: [u8; 32],
    /// Redacted from every logged error (database password, tokens, keys).
    secrets: Vec<Secret>,
    metrics: Arc<crate::metrics::Metrics>,
}

impl Api {
    pub fn new(
        store: Store,
        catalog: Catalog,
        token: &Secret,
        secrets: Vec<Secret>,
        metrics: Arc<crate::metrics::Metrics>,
    ) -> Api {
        metrics.init_api();
        Api {
            store,
            catalog,
            token_digest: Sha256::digest(token.expose().as_bytes()).into(),
            secrets,
            metrics,
        }
    }

    /// Counts the answer (`payrecon_api_requests_total{route, status}`).
    fn counted(&self, route: &str, r: Response) -> Response {
        self.metrics.api_request(route, r.status().as_u16(), 1);
        r
    }

    /// Whether `headers` carry `Authorization: Bearer <the token>`.
    fn authorized(&self, headers: &HeaderMap) -> bool {
        let Some(value) = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
        else {
            return false;
        };
        let Some((scheme, token)) = value.trim().split_once(' ') else {
            return false;
        };
        let given: [u8; 32] = Sha256::digest(token.trim().as_bytes()).into();
        scheme.eq_ignore_ascii_case("bearer") && bool::from(given.ct_eq(&self.token_digest))
    }

    /// A database failure: logged without secrets, answered 503 (the client retries).
    fn unavailable(&self, doing: &str, e: impl std::fmt::Display) -> Response {
        let refs: Vec<&Secret> = self.secrets.iter().collect();
        tracing::warn!(error = %redact(&e.to_string(), &refs), "API: could not {doing}; answered 503.");
        Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "the database did not answer; try again",
        )
        .into_response()
    }
}

/// The API's routes (merged into `serve`'s listener).
pub fn router(api: Arc<Api>) -> Router {
    Router::new()
        .route("/v1/orders", get(list_orders).post(create_order))
        .route("/v1/orders/{order_ref}", get(get_order))
        .route("/v1/openapi.json", get(openapi))
        .with_state(api)
}

/// An order with what payrecon knows of it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct OrderDetail {
    #[serde(flatten)]
    pub order: OrderView,
    /// The payments credited to it, in chain order.
    pub payments: Vec<PaymentView>,
    /// Its open exceptions (docs/reference.md §8).
    pub exceptions: Vec<ExceptionRow>,
    /// Its events to the shop and their delivery state, oldest first (the newest 100).
    pub events: Vec<EventRow>,
}

/// A page of orders.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct OrderList {
    pub orders: Vec<OrderView>,
    /// Pass as `cursor` for the next page; null when this page is the last.
    pub next_cursor: Option<String>,
}

/// Register an expected payment.
///
/// `201` with the new order; the same request again is `200` with the order as it is now
/// (idempotent, nothing written); the same `order_ref` with other fields is `409`.
#[utoipa::path(
    post,
    path = "/v1/orders",
    tag = "orders",
    request_body(content = request::OrderRequest, content_type = "application/json"),
    responses(
        (status = 201, description = "Registered", body = OrderView,
            headers(("location" = String, description = "/v1/orders/{order_ref}"))),
        (status = 200, description = "Registered before with the same fields", body = OrderView),
        (status = 400, description = "The body broke off before its end", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "No token, or a wrong one", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The order_ref is registered with other fields", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body over 64 KiB", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Body not declared as application/json", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid: every bad field named", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The database did not answer", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn create_order(State(api): State<Arc<Api>>, headers: HeaderMap, body: Body) -> Response {
    let r = create(&api, headers, body).await;
    api.counted("POST /v1/orders", r)
}

async fn create(api: &Api, headers: HeaderMap, body: Body) -> Response {
    if !api.authorized(&headers) {
        return Problem::unauthorized().into_response();
    }
    tokio::time::timeout(REQUEST_TIMEOUT, register(api, &headers, body))
        .await
        .unwrap_or_else(|_| {
            tracing::warn!(
                "API: a registration took longer than {} s (database busy?); answered 503.",
                REQUEST_TIMEOUT.as_secs()
            );
            Problem::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "the request took too long; try again",
            )
            .into_response()
        })
}

async fn register(api: &Api, headers: &HeaderMap, body: Body) -> Response {
    let raw = match crate::body::read_limited(headers, body, MAX_BODY).await {
        Ok(raw) => raw,
        Err(crate::body::BodyError::TooLarge) => {
            return Problem::new(StatusCode::PAYLOAD_TOO_LARGE, "the body is over 64 KiB")
                .into_response()
        }
        Err(crate::body::BodyError::Broken) => {
            return Problem::new(
                StatusCode::BAD_REQUEST,
                "the body could not be read to its end",
            )
            .into_response()
        }
    };
    if !json_content(headers) {
        return Problem::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "send the body as content-type: application/json",
        )
        .into_response();
    }
    let order = match request::order(&raw, &api.catalog) {
        Ok(o) => o,
        Err(problems) => return Problem::invalid(problems).into_response(),
    };
    let outcome = match api
        .store
        .register_orders(
            std::slice::from_ref(&order),
            &crate::store::Retries::to(&api.metrics.database_retries),
        )
        .await
    {
        Ok(mut v) if v.len() == 1 => v.remove(0),
        Ok(_) => return api.unavailable("register an order", "no outcome"),
        Err(e) => return api.unavailable("register an order", e),
    };
    match outcome {
        Registered::Created(view) => {
            tracing::info!(order_ref = %view.order_ref, "API: order registered.");
            let location = format!("/v1/orders/{}", path_segment(&view.order_ref));
            let mut r = (StatusCode::CREATED, Json(view)).into_response();
            if let Ok(v) = HeaderValue::from_str(&location) {
                r.headers_mut().insert(header::LOCATION, v);
            }
            r
        }
        Registered::Same(view) => (StatusCode::OK, Json(view)).into_response(),
        Registered::Conflict(view, fields) => Problem {
            conflicting_fields: fields.iter().map(|f| f.to_string()).collect(),
            ..Problem::new(
                StatusCode::CONFLICT,
                format!(
                    "order {:?} is registered with another {}; nothing was written",
                    view.order_ref,
                    fields.join(", ")
                ),
            )
        }
        .into_response(),
    }
}

/// No content type (curl's `-d` without `-H` sends a form type: refused), or JSON.
fn json_content(headers: &HeaderMap) -> bool {
    match headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    {
        None => true,
        Some(v) => {
            let essence = v.split(';').next().unwrap_or("").trim();
            essence.eq_ignore_ascii_case("application/json")
        }
    }
}

/// `order_ref` percent-encoded for a path segment (RFC 3986 unreserved characters kept).
fn path_segment(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// Read an order: its payments, open exceptions and events.
#[utoipa::path(
    get,
    path = "/v1/orders/{order_ref}",
    tag = "orders",
    params(("order_ref" = String, Path, description = "The shop's order id (percent-encoded)")),
    responses(
        (status = 200, description = "The order", body = OrderDetail),
        (status = 401, description = "No token, or a wrong one", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No order has this ref", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The database did not answer", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn get_order(
    State(api): State<Arc<Api>>,
    path: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
) -> Response {
    let r = read_order(&api, path, headers).await;
    api.counted("GET /v1/orders/{order_ref}", r)
}

async fn read_order(
    api: &Api,
    path: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
) -> Response {
    if !api.authorized(&headers) {
        return Problem::unauthorized().into_response();
    }
    // A ref that does not decode (not UTF-8) names no order.
    let Ok(Path(order_ref)) = path else {
        return Problem::new(StatusCode::NOT_FOUND, "no order has this ref").into_response();
    };
    let order = match api.store.order_view(&order_ref).await {
        Ok(Some(o)) => o,
        Ok(None) => {
            return Problem::new(StatusCode::NOT_FOUND, format!("no order {order_ref:?}"))
                .into_response()
        }
        Err(e) => return api.unavailable("read an order", e),
    };
    let exceptions = ExceptionFilter {
        status: Some("open".into()),
        order_ref: Some(order_ref.clone()),
        limit: DETAIL_LIMIT,
        ..Default::default()
    };
    let events = EventFilter {
        order_ref: Some(order_ref.clone()),
        limit: DETAIL_LIMIT,
        ..Default::default()
    };
    let read = async {
        Ok::<_, crate::store::StoreError>((
            api.store.order_payments(order.id).await?,
            api.store.list_exceptions(&exceptions).await?,
            api.store.list_events(&events).await?,
        ))
    };
    match read.await {
        Ok((payments, exceptions, events)) => Json(OrderDetail {
            order,
            payments,
            exceptions,
            events,
        })
        .into_response(),
        Err(e) => api.unavailable("read an order", e),
    }
}

/// List orders by when they last changed.
///
/// Pages in a stable order, `(updated_at, id)`; pass `next_cursor` back as `cursor` with the
/// same filters. An order that changes again moves to a later page. To follow changes, keep
/// the `updated_at` of the last order seen and ask again with `updated_since` a minute before
/// it: a change committed late with an earlier time is then not missed.
#[utoipa::path(
    get,
    path = "/v1/orders",
    tag = "orders",
    params(
        ("state" = Option<String>, Query, description = "unpaid, pending, confirmed or final"),
        ("updated_since" = Option<String>, Query, description = "RFC 3339: orders changed at or after this time"),
        ("limit" = Option<i64>, Query, description = "1 to 1000 (default 100)"),
        ("cursor" = Option<String>, Query, description = "next_cursor of the previous page"),
    ),
    responses(
        (status = 200, description = "A page of orders", body = OrderList),
        (status = 401, description = "No token, or a wrong one", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A bad parameter, named", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The database did not answer", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn list_orders(
    State(api): State<Arc<Api>>,
    query: Result<Query<HashMap<String, String>>, QueryRejection>,
    headers: HeaderMap,
) -> Response {
    let r = list(&api, query, headers).await;
    api.counted("GET /v1/orders", r)
}

async fn list(
    api: &Api,
    query: Result<Query<HashMap<String, String>>, QueryRejection>,
    headers: HeaderMap,
) -> Response {
    if !api.authorized(&headers) {
        return Problem::unauthorized().into_response();
    }
    let Ok(Query(query)) = query else {
        return Problem::invalid(vec![FieldProblem::query(
            "",
            "the query string is malformed",
        )])
        .into_response();
    };
    let page = match request::page(&query) {
        Ok(p) => p,
        Err(problems) => return Problem::invalid(problems).into_response(),
    };
    match api.store.order_page(&page).await {
        Err(crate::store::StoreError::Invalid(_)) => Problem::invalid(vec![FieldProblem::query(
            "cursor",
            "not a cursor this API returned (pass next_cursor as it is)",
        )])
        .into_response(),
        Ok(orders) => {
            let next_cursor = (orders.len() as i64 == page.limit)
                .then(|| orders.last())
                .flatten()
                .and_then(|o| Some(request::encode_cursor(o.position.as_deref()?, o.id)));
            Json(OrderList {
                orders,
                next_cursor,
            })
            .into_response()
        }
        Err(e) => api.unavailable("list orders", e),
    }
}

/// The OpenAPI 3.1 document of this API.
#[utoipa::path(
    get,
    path = "/v1/openapi.json",
    tag = "meta",
    responses((status = 200, description = "The OpenAPI 3.1 document", content_type = "application/json"))
)]
pub async fn openapi() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], doc::json()).into_response()
}
