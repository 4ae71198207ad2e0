//! The console's handlers: each reads what its page shows (one query or a few, keyset pages,
//! never one per row), or makes a decision through the engine's operator path, and hands the
//! result to `view`.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use serde::Deserialize;

use super::auth::{self, Who};
use super::query::{ListQuery, AGES, PAGE};
use super::{view, Console};
use crate::engine::operator::{Decision, OperatorError};
use crate::metrics::LoginOutcome;
use crate::store::{ExceptionFilter, Resolve};

/// A database error as a page (secrets scrubbed), and in the log.
pub(super) fn failed(c: &Console, what: &str, e: &dyn std::fmt::Display) -> Response {
    let msg = c.engine.redact(e);
    tracing::error!(error = %msg, "The console could not read {what}.");
    view::refusal(
        StatusCode::SERVICE_UNAVAILABLE,
        "The database did not answer",
        &format!("Reading {what} failed: {msg}"),
    )
}

/// Held orders listed on the overview (the newest).
const HELD_LISTED: i64 = 10;

pub async fn overview(State(c): State<Arc<Console>>, who: Who) -> Response {
    let store = &c.engine.store;
    let status = match crate::status::read(store, &c.config).await {
        Ok(s) => s,
        Err(e) => return failed(&c, "the overview", &e),
    };
    let held = match tokio::try_join!(store.held_total(), store.held_orders(HELD_LISTED)) {
        Ok((total, newest)) => view::Held { total, newest },
        Err(e) => return failed(&c, "the orders held", &e),
    };
    match c.plots.read(store, jiff::Timestamp::now()).await {
        Ok(plots) => view::overview(&who, &status, &held, &plots, &c.assets),
        Err(e) => failed(&c, "the plots", &e),
    }
}

pub async fn not_found(_who: Who) -> Response {
    view::refusal(
        StatusCode::NOT_FOUND,
        "Not found",
        "There is no such page in the console.",
    )
}

pub async fn login_form(State(c): State<Arc<Console>>) -> Response {
    let t = auth::token();
    let mut resp = view::login(&t, None, StatusCode::OK);
    set_cookie(&mut resp, c.cookie(auth::LOGIN_COOKIE, &t, None));
    resp
}

#[derive(Deserialize)]
pub struct LoginForm {
    #[serde(default)]
    name: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    csrf: String,
}

pub async fn login(
    State(c): State<Arc<Console>>,
    headers: HeaderMap,
    Form(f): Form<LoginForm>,
) -> Response {
    let metrics = &c.engine.metrics;
    let expected = auth::cookie(&headers, auth::LOGIN_COOKIE).unwrap_or("");
    if expected.is_empty() || !auth::same(expected, &f.csrf) {
        metrics.console_login(LoginOutcome::failed);
        return view::refusal(
            StatusCode::FORBIDDEN,
            "The login form expired",
            "Open the login page again and log in from there.",
        );
    }
    let now = Instant::now();
    let name = f.name.trim().to_string();
    if c.auth.locked(&name, now) {
        metrics.console_login(LoginOutcome::locked);
        tracing::warn!(operator = %name, "Console login refused: the name is locked for a minute.");
        return view::login(
            &f.csrf,
            Some("Too many failed logins for this name: try again in a minute."),
            StatusCode::TOO_MANY_REQUESTS,
        );
    }
    let ops = match c.operators() {
        Ok(o) => o,
        Err(e) => {
            tracing::error!(error = %e, "The console cannot read its operators file.");
            return view::refusal(
                StatusCode::SERVICE_UNAVAILABLE,
                "Logins are unavailable",
                "The operators file cannot be read; the log says why.",
            );
        }
    };
    let (n, p) = (name.clone(), f.password);
    let ok = tokio::task::spawn_blocking(move || ops.verify(&n, &p))
        .await
        .unwrap_or(false);
    if !ok {
        let locked = c.auth.failed(&name, now);
        metrics.console_login(LoginOutcome::failed);
        tracing::warn!(operator = %name, locked, "Console login failed.");
        return view::login(
            &f.csrf,
            Some("Wrong name or password."),
            StatusCode::UNAUTHORIZED,
        );
    }
    c.auth.cleared(&name);
    let t = c.auth.open(&name, now);
    metrics.console_login(LoginOutcome::ok);
    tracing::info!(operator = %name, "Console login.");
    let mut resp = Redirect::to("/console").into_response();
    set_cookie(&mut resp, c.cookie(auth::COOKIE, &t, None));
    set_cookie(&mut resp, c.cookie(auth::LOGIN_COOKIE, "", Some(0)));
    resp
}

fn set_cookie(resp: &mut Response, v: axum::http::HeaderValue) {
    resp.headers_mut().append(header::SET_COOKIE, v);
}

#[derive(Deserialize)]
pub struct CsrfForm {
    #[serde(default)]
    csrf: String,
}

pub async fn logout(
    State(c): State<Arc<Console>>,
    who: Who,
    headers: HeaderMap,
    Form(f): Form<CsrfForm>,
) -> Response {
    if !auth::same(&who.csrf, &f.csrf) {
        return bad_token();
    }
    if let Some(t) = auth::cookie(&headers, auth::COOKIE) {
        c.auth.close(t);
    }
    tracing::info!(operator = %who.name, "Console logout.");
    let mut resp = Redirect::to("/console/login").into_response();
    set_cookie(&mut resp, c.cookie(auth::COOKIE, "", Some(0)));
    resp
}

pub(super) fn bad_token() -> Response {
    view::refusal(
        StatusCode::FORBIDDEN,
        "The form's token is missing or wrong",
        "Nothing was changed. Open the page again and send the form from there.",
    )
}

pub async fn exceptions(
    State(c): State<Arc<Console>>,
    who: Who,
    Query(q): Query<ListQuery>,
) -> Response {
    let status = match nonblank(&q.status) {
        None => Some("open".to_string()),
        Some("all") => None,
        Some(s) => Some(s.to_string()),
    };
    let search = nonblank(&q.q).map(|s| match s.starts_with("0x") {
        // EVM hashes and addresses are kept in lower case.
        true => s.to_ascii_lowercase(),
        false => s.to_string(),
    });
    let f = ExceptionFilter {
        status,
        kind: nonblank(&q.kind).map(str::to_string),
        search,
        before: q.before,
        first_seen_before: nonblank(&q.age)
            .and_then(|a| AGES.iter().find(|(v, _, _)| *v == a))
            .map(|(_, _, h)| jiff::Timestamp::now() - jiff::SignedDuration::from_hours(*h)),
        limit: PAGE,
        ..Default::default()
    };
    match c.engine.store.list_exceptions(&f).await {
        Ok(rows) => view::exceptions(&who, &q, &rows, &c.assets),
        Err(e) => failed(&c, "the exceptions", &e),
    }
}

pub async fn exception(State(c): State<Arc<Console>>, who: Who, Path(id): Path<i64>) -> Response {
    match c.engine.store.exception(id).await {
        Ok(Some(x)) => view::exception(&who, &x, &c.assets, None),
        Ok(None) => unknown(id),
        Err(e) => failed(&c, "the exception", &e),
    }
}

fn unknown(id: i64) -> Response {
    view::refusal(
        StatusCode::NOT_FOUND,
        "Not found",
        &format!("There is no exception {id}."),
    )
}

#[derive(Deserialize)]
pub struct DecideForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    action: String,
    #[serde(default)]
    reason: String,
    #[serde(default)]
    order: String,
}

/// Accept, attach or dismiss, as the logged-in operator, through the same path as the
/// commands: of two people deciding at once one wins, and the other is told who and when.
pub async fn decide(
    State(c): State<Arc<Console>>,
    who: Who,
    Path(id): Path<i64>,
    Form(f): Form<DecideForm>,
) -> Response {
    if !auth::same(&who.csrf, &f.csrf) {
        tracing::warn!(operator = %who.name, exception = id, "A console form without its token was refused.");
        return bad_token();
    }
    let (r, order) = match resolve(id, &who, &f) {
        Ok(v) => v,
        Err(msg) => return again(&c, &who, id, msg, StatusCode::UNPROCESSABLE_ENTITY).await,
    };
    let resolution = r.resolution;
    let done = match resolution {
        "accepted" => c.engine.accept_exception(r).await,
        "attached" => c.engine.attach_exception(r, &order).await,
        _ => c.engine.dismiss_exception(r).await,
    };
    match done {
        Ok(Decision::Done(what)) => {
            tracing::info!(operator = %who.name, exception = id, resolution, done = %what, "Exception decided in the console.");
            Redirect::to(&format!("/console/exceptions/{id}")).into_response()
        }
        Ok(Decision::Taken(x)) => {
            let msg = format!(
                "Exception {id} was resolved already: {} by {} at {}. Nothing changed.",
                x.resolution.as_deref().unwrap_or("resolved"),
                x.resolved_by.as_deref().unwrap_or("?"),
                x.resolved_at.as_deref().unwrap_or("?"),
            );
            again(&c, &who, id, &msg, StatusCode::CONFLICT).await
        }
        Err(OperatorError::Unknown(_)) => unknown(id),
        Err(OperatorError::Refused(why)) => {
            again(
                &c,
                &who,
                id,
                &format!("Refused: {why}. Nothing changed."),
                StatusCode::CONFLICT,
            )
            .await
        }
        Err(OperatorError::Store(e)) => failed(&c, "the decision", &e),
    }
}

/// The exception's page again, with what became of the form (`status`).
async fn again(c: &Console, who: &Who, id: i64, msg: &str, status: StatusCode) -> Response {
    match c.engine.store.exception(id).await {
        Ok(Some(x)) => {
            let mut r = view::exception(who, &x, &c.assets, Some(msg));
            *r.status_mut() = status;
            r
        }
        Ok(None) => unknown(id),
        Err(e) => failed(c, "the exception", &e),
    }
}

fn nonblank(s: &Option<String>) -> Option<&str> {
    s.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

/// The decision a form asks for, as `who`, with the order to attach to; or what is missing.
fn resolve(id: i64, who: &Who, f: &DecideForm) -> Result<(Resolve, String), &'static str> {
    let resolution = match f.action.as_str() {
        "accept" => "accepted",
        "attach" => "attached",
        "dismiss" => "dismissed",
        _ => return Err("Choose accept, attach or dismiss."),
    };
    let note = f.reason.trim().to_string();
    if note.is_empty() {
        return Err("A decision needs a reason.");
    }
    let order = f.order.trim().to_string();
    if resolution == "attached" && order.is_empty() {
        return Err("Attach needs the order's ref.");
    }
    let r = Resolve {
        id,
        resolution,
        by: who.name.clone(),
        note,
        order_paid: None,
    };
    Ok((r, order))
}
