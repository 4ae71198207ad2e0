//! The fake's HTTP side: routes, the gate (bearer token, network) and Laravel pages.

use std::sync::Arc;

use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

use super::{Gateway, KNOWN_CHAINS};

pub(super) fn router(gateway: Arc<Gateway>) -> Router {
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
        .layer(middleware::from_fn_with_state(gateway.clone(), gate))
        .with_state(gateway)
}

fn message(status: StatusCode, text: &str) -> Response {
    let body = json!({"status": status.as_u16(), "ok": status.is_success(), "message": text});
    (status, Json(body)).into_response()
}

/// Every request: the bearer token, then `X-Network`.
async fn gate(State(gateway): State<Arc<Gateway>>, req: Request, next: Next) -> Response {
    match refusal(&gateway, req.headers()) {
        Some(refused) => refused,
        None => next.run(req).await,
    }
}

pub(super) fn refusal(gateway: &Gateway, headers: &HeaderMap) -> Option<Response> {
    let bearer = format!("Bearer {}", gateway.api_key);
    if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some(bearer.as_str()) {
        return Some(message(StatusCode::UNAUTHORIZED, "Unauthenticated."));
    }
    let network = headers
        .get("x-network")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("mainnet");
    let expected = gateway.state().network.clone();
    (network != expected).then(|| {
        message(
            StatusCode::BAD_REQUEST,
            &format!("unknown network {network:?}"),
        )
    })
}

#[derive(serde::Deserialize)]
struct PageQuery {
    page: Option<String>,
}

async fn list_all(
    State(gateway): State<Arc<Gateway>>,
    Path(chain): Path<String>,
    Query(q): Query<PageQuery>,
) -> Response {
    list(&gateway, &chain, false, q)
}

async fn list_failed(
    State(gateway): State<Arc<Gateway>>,
    Path(chain): Path<String>,
    Query(q): Query<PageQuery>,
) -> Response {
    list(&gateway, &chain, true, q)
}

fn list(gateway: &Gateway, chain: &str, failed: bool, q: PageQuery) -> Response {
    // Laravel reads a missing, non-numeric or < 1 page as page 1.
    let page = q
        .page
        .and_then(|p| p.parse::<usize>().ok())
        .filter(|&p| p >= 1)
        .unwrap_or(1);
    let (per_page, total, items) = {
        let state = gateway.state();
        let per_page = state.per_page;
        let Some(data) = state.chains.get(chain) else {
            drop(state);
            return if KNOWN_CHAINS.contains(&chain) {
                page_response(gateway, chain, failed, page, per_page, 0, &[])
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
    page_response(gateway, chain, failed, page, per_page, total, &items)
}

/// A Laravel `LengthAwarePaginator` body, as in the OpenAPI examples.
fn page_response(
    gateway: &Gateway,
    chain: &str,
    failed: bool,
    page: usize,
    per_page: usize,
    total: usize,
    items: &[Arc<str>],
) -> Response {
    let path = format!(
        "{}/{chain}/webhooks/notifications{}",
        gateway.base_url,
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
    State(gateway): State<Arc<Gateway>>,
    Path((chain, id)): Path<(String, String)>,
) -> Response {
    let mut state = gateway.state();
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
