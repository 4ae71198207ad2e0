//! The order's page (its whole story) and the events page with replay: read in a handful of
//! queries (the order, its payments, transitions, exceptions and newest events), never one per
//! row.

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use serde::Deserialize;

use super::auth::{self, Who};
use super::pages::{bad_token, failed};
use super::query::PAGE;
use super::view::{self, OrderStory};
use super::Console;
use crate::store::{EventFilter, ExceptionFilter, StoreError};

/// At most this many of an order's exceptions and events on its page (the newest).
const STORY_LIMIT: i64 = 100;

pub async fn order(
    State(c): State<Arc<Console>>,
    who: Who,
    Path(order_ref): Path<String>,
) -> Response {
    match story(&c, &order_ref).await {
        Ok(Some(s)) => view::order(&who, &s, &c.assets),
        Ok(None) => view::refusal(
            StatusCode::NOT_FOUND,
            "Not found",
            &format!("There is no order {order_ref:?}."),
        ),
        Err(e) => failed(&c, "the order", &e),
    }
}

async fn story(c: &Console, order_ref: &str) -> Result<Option<OrderStory>, StoreError> {
    let store = &c.engine.store;
    let Some(order) = store.order_view(order_ref).await? else {
        return Ok(None);
    };
    let exceptions = ExceptionFilter {
        order_ref: Some(order_ref.to_string()),
        limit: STORY_LIMIT,
        ..Default::default()
    };
    let events = EventFilter {
        order_ref: Some(order_ref.to_string()),
        limit: STORY_LIMIT,
        ..Default::default()
    };
    let confirmations = c
        .config
        .chains
        .iter()
        .find(|ch| ch.name == order.chain)
        .map(|ch| ch.confirmations);
    let head = match order.state.as_str() {
        "pending" | "confirmed" => head(c, &order.chain).await,
        _ => None,
    };
    Ok(Some(OrderStory {
        head,
        payments: store.order_payments(order.id).await?,
        findings: store.order_findings(order_ref, STORY_LIMIT).await?,
        confirmations,
        transitions: store.order_transitions(order.id).await?,
        exceptions: store.list_exceptions(&exceptions).await?,
        events: store.list_events(&events).await?,
        order,
    }))
}

/// How long an order's page waits for its chain's head.
const HEAD_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// `chain`'s head now (one request, at most `HEAD_WAIT`), for an order paid but not final;
/// `None`, logged, when it cannot be read: the page then says what the configuration wants.
async fn head(c: &Console, chain: &str) -> Option<crate::domain::ChainHead> {
    let client = c.engine.chains.get(chain)?;
    match tokio::time::timeout(HEAD_WAIT, client.head()).await {
        Ok(Ok(h)) => Some(h),
        Ok(Err(e)) => {
            let e = c.engine.redact(&e);
            tracing::warn!(chain, error = %e, "The console could not read the chain's head for an order's page.");
            None
        }
        Err(_) => {
            tracing::warn!(
                chain,
                "The chain's head took longer than a second for an order's page."
            );
            None
        }
    }
}

#[derive(Debug, Default, Deserialize)]
pub struct EventsQuery {
    status: Option<String>,
    /// Keyset paging: events written before this one (the outbox's order).
    before: Option<i64>,
}

pub async fn events(
    State(c): State<Arc<Console>>,
    who: Who,
    Query(q): Query<EventsQuery>,
) -> Response {
    let status = q.status.as_deref().unwrap_or("dead");
    list(&c, &who, status, q.before, None).await
}

async fn list(
    c: &Console,
    who: &Who,
    status: &str,
    before: Option<i64>,
    msg: Option<&str>,
) -> Response {
    let status = match status {
        "pending" | "delivered" => status,
        _ => "dead",
    };
    let f = EventFilter {
        status: Some(status.to_string()),
        before_seq: before,
        limit: PAGE,
        ..Default::default()
    };
    match c.engine.store.list_events(&f).await {
        Ok(rows) => view::events(who, status, &rows, rows.len() as i64 == PAGE, msg),
        Err(e) => failed(c, "the events", &e),
    }
}

#[derive(Deserialize)]
pub struct ReplayForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    id: String,
    #[serde(default)]
    order: String,
}

/// Sends one event again (`id`), or every event of an order (`order`), as `payrecon events
/// replay` does: delivered or dead events are pending again, due now.
pub async fn replay(
    State(c): State<Arc<Console>>,
    who: Who,
    Form(f): Form<ReplayForm>,
) -> Response {
    if !auth::same(&who.csrf, &f.csrf) {
        return bad_token();
    }
    let (id, order) = (f.id.trim(), f.order.trim());
    if id.is_empty() == order.is_empty() {
        let msg = "Name one event, or one order.";
        let mut r = list(&c, &who, "dead", None, Some(msg)).await;
        *r.status_mut() = StatusCode::UNPROCESSABLE_ENTITY;
        return r;
    }
    let filter = EventFilter {
        id: (!id.is_empty()).then(|| id.to_string()),
        order_ref: (!order.is_empty()).then(|| order.to_string()),
        ..Default::default()
    };
    match c
        .engine
        .store
        .replay_events(&filter, jiff::Timestamp::now())
        .await
    {
        Ok(n) => {
            tracing::info!(operator = %who.name, event = id, order, replayed = n, "Events replayed from the console.");
            if let Some(w) = &c.engine.events_wake {
                w.notify_one();
            }
            match order.is_empty() {
                true => {
                    let msg = format!("{n} event(s) will be sent again.");
                    list(&c, &who, "pending", None, Some(&msg)).await
                }
                false => Redirect::to(&view::order_href(order)).into_response(),
            }
        }
        Err(e) => failed(&c, "the replay", &e),
    }
}

#[derive(Debug, Default, Deserialize)]
pub struct RunsQuery {
    /// The keyset bound: `started_at` and `id` of the last run of the page before.
    at: Option<String>,
    id: Option<String>,
}

/// `/console/runs`: runs newest first with their totals and errors, keyset pages.
pub async fn runs(State(c): State<Arc<Console>>, who: Who, Query(q): Query<RunsQuery>) -> Response {
    let before = q.at.as_deref().zip(q.id.as_deref());
    match c.engine.store.runs_page(before, PAGE).await {
        Ok(rows) => view::runs(&who, &rows, rows.len() as i64 == PAGE),
        Err(e) => failed(&c, "the runs", &e),
    }
}

#[derive(Debug, Default, Deserialize)]
pub struct BalancesQuery {
    /// The keyset bound: the last address of the page before.
    chain: Option<String>,
    address: Option<String>,
    asset: Option<String>,
}

/// `/console/balances`: the deposit addresses whose last check left a difference, keyset
/// pages.
pub async fn balances(
    State(c): State<Arc<Console>>,
    who: Who,
    Query(q): Query<BalancesQuery>,
) -> Response {
    let after = match (&q.chain, &q.address, &q.asset) {
        (Some(c), Some(a), Some(t)) => Some((c.as_str(), a.as_str(), t.as_str())),
        _ => None,
    };
    match c.engine.store.mismatched_balances(after, PAGE).await {
        Ok(rows) => view::balances(&who, &rows, rows.len() as i64 == PAGE, &c.assets),
        Err(e) => failed(&c, "the balances", &e),
    }
}
