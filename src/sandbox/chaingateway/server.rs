//! The fake's HTTP side: routes, the gate (auth, network, latency, faults) and Laravel pages.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

use super::{BlockShape, Fault, Inner, KNOWN_CHAINS};

pub(super) fn router(inner: Arc<Inner>) -> Router {
    Router::new()
        .route("/api/v2/{chain}/webhooks/notifications", get(list_all))
        .route(
            "/api/v2/{chain}/webhooks/notifications/failed",
            get(list_failed),
        )
        .route(
            "/api/v2/{chain}/webhooks/notifications/{id}/retry",
            post(retry),
        )
        .route("/api/v2/{chain}/blocks/number", get(block_number))
        .layer(middleware::from_fn_with_state(inner.clone(), gate))
        .with_state(inner)
}

/// Counts requests in progress (also when the client goes away mid-request).
struct InFlight(Arc<Inner>);

impl InFlight {
    fn enter(inner: &Arc<Inner>) -> InFlight {
        let now = inner.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        inner.max_in_flight.fetch_max(now, Ordering::SeqCst);
        InFlight(inner.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

fn message(status: StatusCode, text: &str) -> Response {
    let body = json!({"status": status.as_u16(), "ok": status.is_success(), "message": text});
    (status, Json(body)).into_response()
}

/// Every request: count, bearer token, `X-Network`, latency, then the next queued fault.
async fn gate(State(inner): State<Arc<Inner>>, req: Request, next: Next) -> Response {
    inner.requests.fetch_add(1, Ordering::SeqCst);
    let _in_flight = InFlight::enter(&inner);
    let headers = req.headers();
    let bearer = format!("Bearer {}", inner.api_key);
    if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some(bearer.as_str()) {
        return message(StatusCode::UNAUTHORIZED, "Unauthenticated.");
    }
    let network = headers
        .get("x-network")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("mainnet")
        .to_string();
    let (expected, latency, fault) = {
        let mut state = inner.state();
        (
            state.network.clone(),
            state.latency,
            state.faults.pop_front(),
        )
    };
    if network != expected {
        return message(
            StatusCode::BAD_REQUEST,
            &format!("unknown network {network:?}"),
        );
    }
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    match fault {
        None => next.run(req).await,
        Some(Fault::Hang(d)) => {
            tokio::time::sleep(d).await;
            next.run(req).await
        }
        Some(fault) => fault_response(fault, req.headers()),
    }
}

fn fault_response(fault: Fault, headers: &HeaderMap) -> Response {
    let json_body = |status: StatusCode, body: &'static str| {
        (status, [("content-type", "application/json")], body).into_response()
    };
    match fault {
        Fault::ServerError => message(StatusCode::INTERNAL_SERVER_ERROR, "Server Error"),
        Fault::Unavailable => message(StatusCode::SERVICE_UNAVAILABLE, "Service Unavailable"),
        Fault::TooManyRequests { retry_after_secs } => {
            let mut resp = message(StatusCode::TOO_MANY_REQUESTS, "Too Many Attempts.");
            resp.headers_mut()
                .insert("retry-after", retry_after_secs.to_string().parse().unwrap());
            resp
        }
        Fault::MalformedJson => {
            json_body(StatusCode::OK, r#"{"status":200,"ok":true,"data":[{"id":"#)
        }
        Fault::MissingData => {
            json_body(StatusCode::OK, r#"{"status":200,"ok":true,"message":"?"}"#)
        }
        Fault::CloseConnection => {
            let failing = futures::stream::once(async {
                Err::<String, _>(std::io::Error::other("fault: connection closed"))
            });
            (StatusCode::OK, Body::from_stream(failing)).into_response()
        }
        Fault::EchoHeaders => {
            let echoed: Vec<String> = headers
                .iter()
                .map(|(k, v)| format!("{k}: {}", v.to_str().unwrap_or("?")))
                .collect();
            message(
                StatusCode::BAD_REQUEST,
                &format!("bad request; headers: {echoed:?}"),
            )
        }
        Fault::Hang(_) => unreachable!("handled in gate"),
    }
}

#[derive(serde::Deserialize)]
struct PageQuery {
    page: Option<String>,
}

async fn list_all(
    State(inner): State<Arc<Inner>>,
    Path(chain): Path<String>,
    Query(q): Query<PageQuery>,
) -> Response {
    list(&inner, &chain, false, q)
}

async fn list_failed(
    State(inner): State<Arc<Inner>>,
    Path(chain): Path<String>,
    Query(q): Query<PageQuery>,
) -> Response {
    list(&inner, &chain, true, q)
}

fn list(inner: &Inner, chain: &str, failed: bool, q: PageQuery) -> Response {
    // Laravel reads a missing, non-numeric or < 1 page as page 1.
    let page = q
        .page
        .and_then(|p| p.parse::<usize>().ok())
        .filter(|&p| p >= 1)
        .unwrap_or(1);
    let (per_page, total, items) = {
        let state = inner.state();
        let per_page = state.per_page;
        let Some(data) = state.chains.get(chain) else {
            drop(state);
            return if KNOWN_CHAINS.contains(&chain) {
                inner.page_served();
                page_response(inner, chain, failed, page, per_page, 0, &[])
            } else {
                message(StatusCode::NOT_FOUND, "Not Found")
            };
        };
        let start = (page - 1).saturating_mul(per_page);
        let (total, items): (usize, Vec<Arc<str>>) = if failed {
            let slice = data.failed.iter().skip(start).take(per_page);
            (
                data.failed.len(),
                slice.map(|&i| data.records[i].clone()).collect(),
            )
        } else {
            let items = if state.newest_first {
                let slice = data.records.iter().rev().skip(start).take(per_page);
                slice.cloned().collect()
            } else {
                let slice = data.records.iter().skip(start).take(per_page);
                slice.cloned().collect()
            };
            (data.records.len(), items)
        };
        (per_page, total, items)
    };
    inner.page_served();
    page_response(inner, chain, failed, page, per_page, total, &items)
}

/// A Laravel `LengthAwarePaginator` body, as in the OpenAPI examples.
fn page_response(
    inner: &Inner,
    chain: &str,
    failed: bool,
    page: usize,
    per_page: usize,
    total: usize,
    items: &[Arc<str>],
) -> Response {
    let path = format!(
        "{}/{chain}/webhooks/notifications{}",
        inner.base_url,
        if failed { "/failed" } else { "" }
    );
    let url = |n: usize| format!("{path}?page={n}");
    let last = total.div_ceil(per_page).max(1);
    let from = (!items.is_empty()).then(|| (page - 1) * per_page + 1);
    let to = from.map(|f| f + items.len() - 1);
    let meta = json!({
        "status": 200,
        "ok": true,
        "message": "Successfully fetched notifications",
        "current_page": page,
        "data": "__DATA__",
        "first_page_url": url(1),
        "from": from,
        "last_page": last,
        "last_page_url": url(last),
        "links": links(page, last, &url),
        "next_page_url": (page < last).then(|| url(page + 1)),
        "path": path,
        "per_page": per_page,
        "prev_page_url": (page > 1).then(|| url(page - 1)),
        "to": to,
        "total": total,
    });
    let mut data = String::with_capacity(2 + items.iter().map(|r| r.len() + 1).sum::<usize>());
    data.push('[');
    for (i, r) in items.iter().enumerate() {
        if i > 0 {
            data.push(',');
        }
        data.push_str(r);
    }
    data.push(']');
    let body = meta.to_string().replacen("\"__DATA__\"", &data, 1);
    ([("content-type", "application/json")], body).into_response()
}

/// Laravel's link window: every page up to 12 pages, else the ends and 3 on each side.
fn links(page: usize, last: usize, url: &dyn Fn(usize) -> String) -> Vec<Value> {
    let link = |u: Option<String>, label: String, active: bool| json!({"url": u, "label": label, "active": active});
    let mut out = vec![link(
        (page > 1).then(|| url(page - 1)),
        "&laquo; Previous".into(),
        false,
    )];
    let mut prev = 0;
    for n in 1..=last {
        let shown = last <= 12 || n <= 2 || n + 2 > last || n.abs_diff(page) <= 3;
        if !shown {
            continue;
        }
        if n > prev + 1 {
            out.push(link(None, "...".into(), false));
        }
        out.push(link(Some(url(n)), n.to_string(), n == page));
        prev = n;
    }
    out.push(link(
        (page < last).then(|| url(page + 1)),
        "Next &raquo;".into(),
        false,
    ));
    out
}

async fn retry(
    State(inner): State<Arc<Inner>>,
    Path((chain, id)): Path<(String, String)>,
) -> Response {
    let mut state = inner.state();
    let known = state
        .chains
        .get(&chain)
        .is_some_and(|c| c.ids.contains_key(&id));
    if !known {
        return message(StatusCode::NOT_FOUND, "Notification not found");
    }
    state.retries.push((chain, id));
    message(StatusCode::OK, "Retry started").into_response()
}

async fn block_number(State(inner): State<Arc<Inner>>, Path(chain): Path<String>) -> Response {
    let block = inner.state().chains.get(&chain).and_then(|c| c.block);
    let Some((n, shape)) = block else {
        return message(StatusCode::NOT_FOUND, "Not Found");
    };
    let data = match shape {
        BlockShape::Integer => json!(n),
        BlockShape::Object => json!({"blocknumber": n}),
        BlockShape::ObjectString => json!({"blocknumber": n.to_string()}),
    };
    let body =
        json!({"status": 200, "ok": true, "message": "Latest block number fetched", "data": data});
    Json(body).into_response()
}
