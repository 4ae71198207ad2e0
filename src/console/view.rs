//! The console's pages as HTML (maud: escaped, checked at compile time). No script anywhere;
//! one stylesheet from this origin. Amounts in tokens with their symbol where the asset is
//! known; no secret or token is ever rendered, but each form's CSRF token in a hidden field.

use axum::http::{header, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use maud::{html, Markup, PreEscaped, DOCTYPE};

use super::auth::Who;

mod order;
use super::plot::{Counts, Delays};
use super::query::{ListQuery, AGES, PAGE};
use crate::assets::Assets;
use crate::domain::U256;
use crate::status::Status;
use crate::store::{ExceptionRow, HeldView, EXCEPTION_KINDS};
pub use order::{balances, events, order, runs, OrderStory};

const STYLE: &str = "body{font:15px/1.45 system-ui,sans-serif;margin:0;color:#1d2330}\
header{display:flex;gap:1.2em;align-items:center;padding:.6em 1.2em;background:#1d2330}\
header a,header button{color:#fff;text-decoration:none;background:none;border:0;font:inherit;cursor:pointer}\
header form{margin-left:auto}main{padding:1em 1.2em;max-width:72em}\
table{border-collapse:collapse;margin:.5em 0 1.2em}td,th{padding:.3em .7em;border-bottom:1px solid #dde;text-align:left;vertical-align:top}\
.num{text-align:right;font-variant-numeric:tabular-nums}.msg{padding:.6em 1em;background:#fff4d6;border-left:4px solid #e0a800}\
.why{font-size:1.1em;padding:.5em 0}form.decide{margin:.8em 0;padding:.6em 1em;border:1px solid #dde}\
label{display:block;margin:.3em 0}input[type=text],textarea{width:28em;max-width:100%}\
.muted{color:#667}.when{white-space:nowrap}.plot svg{max-width:100%;height:auto}\
.k0{color:#d64545}.k1{color:#e08a00}.k2{color:#7b4fd6}.k3{color:#1f7a8c}.k4{color:#b03a8e}\
.k5{color:#4a7f2a}.k6{color:#3366cc}.k7{color:#777}";

pub async fn stylesheet() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "max-age=3600"),
        ],
        STYLE,
    )
        .into_response()
}

/// A whole page; `who` adds the navigation and the logout form.
fn page(title: &str, who: Option<&Who>, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · payrecon" }
                link rel="stylesheet" href="/console/style.css";
            }
            body {
                header {
                    strong { a href="/console" { "payrecon" } }
                    @if let Some(w) = who {
                        a href="/console" { "Overview" }
                        a href="/console/exceptions" { "Exceptions" }
                        a href="/console/events" { "Events" }
                        a href="/console/runs" { "Runs" }
                        a href="/console/balances" { "Balances" }
                        form method="post" action="/console/logout" {
                            input type="hidden" name="csrf" value=(w.csrf);
                            button type="submit" { "Log out " (w.name) }
                        }
                    }
                }
                main { h1 { (title) } (body) }
            }
        }
    }
}

fn respond(status: StatusCode, m: Markup) -> Response {
    (status, Html(m.into_string())).into_response()
}

/// A page that says why nothing happened.
pub fn refusal(status: StatusCode, title: &str, text: &str) -> Response {
    respond(
        status,
        page(
            title,
            None,
            html! { p { (text) } p { a href="/console" { "Back to the console" } } },
        ),
    )
}

pub fn login(csrf: &str, msg: Option<&str>, status: StatusCode) -> Response {
    respond(
        status,
        page(
            "Log in",
            None,
            html! {
                @if let Some(m) = msg { p.msg { (m) } }
                form method="post" action="/console/login" {
                    input type="hidden" name="csrf" value=(csrf);
                    label { "Name " input type="text" name="name" autocomplete="username" required; }
                    label { "Password " input type="password" name="password" autocomplete="current-password" required; }
                    button type="submit" { "Log in" }
                }
            },
        ),
    )
}

/// A number of seconds as people read an age: `3 d 4 h`, `5 h 2 min`, `40 s`.
fn age(seconds: Option<i64>) -> String {
    let Some(s) = seconds else {
        return "—".into();
    };
    match s {
        s if s >= 86_400 => format!("{} d {} h", s / 86_400, s % 86_400 / 3600),
        s if s >= 3600 => format!("{} h {} min", s / 3600, s % 3600 / 60),
        s if s >= 60 => format!("{} min", s / 60),
        s => format!("{s} s"),
    }
}

/// How many orders are held now, and the newest of them.
pub struct Held {
    pub total: i64,
    pub newest: Vec<HeldView>,
}

fn held(h: &Held, assets: &Assets) -> Markup {
    let units = |s: &str| U256::from_str_radix(s, 10).unwrap_or(U256::ZERO);
    html! {
        @if h.newest.is_empty() {
            p { "No order is held." }
        } @else {
            p { (h.total) " held: paid in part, or late (their exceptions are above); the newest:" }
            table {
                tr { th { "Order" } th.num { "Paid" } th.num { "Due" } th.num { "Short" } th { "Expires" } }
                @for o in &h.newest {
                    @let short = units(&o.amount_due).saturating_sub(units(&o.amount_paid));
                    tr {
                        td { a href=(order_href(&o.order_ref)) { (o.order_ref) } }
                        td.num { (assets.amount(&o.chain, Some(&o.asset), &o.amount_paid)) }
                        td.num { (assets.amount(&o.chain, Some(&o.asset), &o.amount_due)) }
                        td.num { (assets.amount(&o.chain, Some(&o.asset), &short.to_string())) }
                        td.when { (o.expires_at.as_deref().unwrap_or("never")) }
                    }
                }
            }
        }
    }
}

/// The plot of delivery delays, its legend and its scale.
fn delays_plot(d: &Delays) -> Markup {
    html! {
        @if d.total == 0 {
            p { "No payment's event was delivered in the last " (super::plot::DAYS) " days." }
        } @else if let Some(svg) = super::plot::delays_svg(d) {
            p.legend {
                span class="key k6" { "■ " } "half of the day's events within  "
                span class="key k1" { "■ " } "95 in 100 within  (" (d.total) " delivered)"
            }
            div.plot { (PreEscaped(svg)) }
            p.muted { "From a payment's block (or, where its block time was not read, from when payrecon recorded it) to its event's delivery. Lines from the bottom: 1 minute, 5 minutes, 15 minutes, 1 hour, 6 hours, 1 day, later." }
        }
    }
}

/// The plot of gaps per day with its legend (the kinds and their 30-day totals) and scale.
fn gaps_plot(series: &[(String, Vec<i64>)]) -> Markup {
    let max = series
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .max()
        .unwrap_or(0);
    html! {
        @if series.is_empty() {
            p { "No gap in the last " (super::plot::DAYS) " days." }
        } @else if let Some(svg) = super::plot::gaps_svg(series) {
            p.legend {
                @for (kind, v) in series {
                    span class={ "key k" (super::plot::color_index(kind)) } { "■ " }
                    (kind) " " (v.iter().sum::<i64>()) "  "
                }
            }
            div.plot { (PreEscaped(svg)) }
            p.muted { "The last " (super::plot::DAYS) " days, today at the right; the top line is " (max) " a day." }
        }
    }
}

pub fn overview(who: &Who, s: &Status, h: &Held, plots: &Counts, assets: &Assets) -> Response {
    let gaps = serde_json::to_value(&s.gaps_24h.total).unwrap_or_default();
    let gaps: Vec<(String, u64)> = gaps
        .as_object()
        .map(|o| {
            o.iter()
                .map(|(k, v)| (k.clone(), v.as_u64().unwrap_or(0)))
                .collect()
        })
        .unwrap_or_default();
    let body = html! {
        h2 { "Waiting for a person" }
        @if s.exceptions.open_total == 0 {
            p { "No open exception." }
        } @else {
            table {
                tr { th { "Kind" } th.num { "Open" } th { "Oldest" } }
                @for (kind, k) in &s.exceptions.open {
                    tr {
                        td { a href={ "/console/exceptions?kind=" (kind) } { (kind) } }
                        td.num { (k.open) }
                        td { (age(k.oldest_age_seconds)) }
                    }
                }
            }
        }
        h2 { "Events to your application" }
        @if s.events.enabled {
            p { (s.events.pending) " pending (oldest " (age(s.events.oldest_pending_age_seconds)) "), " (s.events.dead) " dead" }
        } @else {
            p.muted { "Events are off ([events] url is not set)." }
        }
        p { "Webhook inbox: " (s.webhook_inbox.unprocessed) " not applied yet." }
        h2 { "Orders held" }
        (held(h, assets))
        h2 { "Last runs" }
        table {
            tr { th { "Provider or part" } th { "Status" } th { "Started" } th.num { "Took" } th { "Error" } }
            @for p in &s.providers {
                tr {
                    td { (p.provider) }
                    @if let Some(r) = &p.last_run {
                        td { (r.status) }
                        td { (r.started_at) }
                        td.num { (r.duration_seconds.map(|d| format!("{d:.1} s")).unwrap_or_default()) }
                        td { (r.error.as_deref().unwrap_or("")) }
                    } @else {
                        td.muted colspan="4" { "never run" }
                    }
                }
            }
        }
        h2 { "Gaps per day" }
        (gaps_plot(&plots.gaps))
        h2 { "From payment to event" }
        (delays_plot(&plots.delays))
        h2 { "Gaps found in the last 24 hours" }
        table {
            @for (kind, n) in &gaps { tr { td { (kind) } td.num { (n) } } }
        }
    };
    respond(StatusCode::OK, page("Overview", Some(who), body))
}

fn amount(x: &ExceptionRow, assets: &Assets) -> String {
    x.amount
        .as_deref()
        .map(|a| assets.amount(&x.chain, x.asset.as_deref(), a))
        .unwrap_or_default()
}

pub fn exceptions(who: &Who, q: &ListQuery, rows: &[ExceptionRow], assets: &Assets) -> Response {
    let kind = q.kind.as_deref().unwrap_or("");
    let status = q.status.as_deref().unwrap_or("open");
    let search = q.q.as_deref().unwrap_or("");
    let age = q.age.as_deref().unwrap_or("");
    let next = (rows.len() as i64 == PAGE)
        .then(|| rows.last().map(|x| x.id))
        .flatten();
    let body = html! {
        form method="get" action="/console/exceptions" {
            label { "Search: an order ref, a transaction hash or an address "
                input type="text" name="q" value=(search); }
            label { "Kind "
                select name="kind" {
                    option value="" { "any" }
                    @for k in EXCEPTION_KINDS { option value=(k) selected[k == kind] { (k) } }
                }
            }
            label { "Status "
                select name="status" {
                    @for s in ["open", "resolved", "all"] { option value=(s) selected[s == status] { (s) } }
                }
            }
            label { "First seen "
                select name="age" {
                    option value="" { "any time" }
                    @for (v, text, _) in AGES { option value=(v) selected[v == age] { (text) } }
                }
            }
            button type="submit" { "Show" }
        }
        @if rows.is_empty() {
            p { "No exception matches." }
        } @else {
            table {
                tr { th.num { "Id" } th { "Kind" } th { "Order" } th { "Chain" } th.num { "Amount" } th { "First seen" } th { "Status" } }
                @for x in rows {
                    tr {
                        td.num { a href={ "/console/exceptions/" (x.id) } { (x.id) } }
                        td { (x.kind) }
                        td { @if let Some(r) = &x.order_ref { a href=(order_href(r)) { (r) } } @else { "—" } }
                        td { (x.chain) }
                        td.num { (amount(x, assets)) }
                        td { (x.first_seen_at) }
                        td { (x.status) @if let Some(b) = &x.resolved_by { " by " (b) } }
                    }
                }
            }
        }
        @if let Some(id) = next {
            a href=(older(&[("kind", kind), ("status", status), ("q", search), ("age", age)], id)) { "Older →" }
        }
    };
    respond(StatusCode::OK, page("Exceptions", Some(who), body))
}

/// The link to an order's page, its ref percent-encoded as a path segment.
pub fn order_href(order_ref: &str) -> String {
    let mut u = reqwest::Url::parse("http://console/console/orders/").expect("a valid URL");
    if let Ok(mut segs) = u.path_segments_mut() {
        segs.pop_if_empty().push(order_ref);
    }
    u.path().to_string()
}

/// The link to the page after the one ending at `id`, the filters kept (encoded).
fn older(filters: &[(&str, &str)], id: i64) -> String {
    let mut u = reqwest::Url::parse("http://console/console/exceptions").expect("a valid URL");
    u.query_pairs_mut()
        .extend_pairs(filters)
        .append_pair("before", &id.to_string());
    format!("{}?{}", u.path(), u.query().unwrap_or(""))
}

/// Why the exception holds its order, in one sentence.
fn why(x: &ExceptionRow, assets: &Assets) -> String {
    let order = x.order_ref.as_deref().unwrap_or("no order");
    let detail = assets.detail(&x.chain, x.asset.as_deref(), &x.detail);
    match x.kind.as_str() {
        "amount_mismatch" => format!("Held: order {order} was paid short. {}", detail),
        "late_payment" => format!("Held: order {order} was paid after it expired. {}", detail),
        "unknown_payment" => format!(
            "A payment of {} that matches no order: attach it to one, or dismiss it. {}",
            amount(x, assets),
            detail
        ),
        "reorged" => format!("A payment to order {order} left the chain. {}", detail),
        _ => detail,
    }
}

pub fn exception(who: &Who, x: &ExceptionRow, assets: &Assets, msg: Option<&str>) -> Response {
    let title = format!("Exception {}", x.id);
    let body = html! {
        @if let Some(m) = msg { p.msg { (m) } }
        p.why { (why(x, assets)) }
        table {
            tr { th { "Kind" } td { (x.kind) } }
            tr { th { "Order" } td { @if let Some(r) = &x.order_ref { a href=(order_href(r)) { (r) } } @else { "—" } } }
            tr { th { "Chain" } td { (x.chain) } }
            tr { th { "Transaction" } td { (x.tx_hash.as_deref().unwrap_or("—")) @if let Some(i) = x.log_index { " #" (i) } } }
            tr { th { "Amount" } td { (amount(x, assets)) } }
            tr { th { "Seen" } td { (x.seen_count) " times, first " (x.first_seen_at) ", last " (x.last_seen_at) } }
            tr { th { "Status" } td { (x.status) } }
            @if let Some(r) = &x.resolution {
                tr { th { "Decision" } td { (r) " by " (x.resolved_by.as_deref().unwrap_or("?")) " at " (x.resolved_at.as_deref().unwrap_or("?")) ": " (x.note.as_deref().unwrap_or("")) } }
            }
        }
        @if x.status == "open" {
            @for (action, label, help) in [
                ("accept", "Accept", "Settle the problem as it is: the order moves on when nothing else holds it."),
                ("attach", "Attach to an order", "Credit this payment to another order."),
                ("dismiss", "Dismiss", "Close it; the ledger is unchanged."),
            ] {
                form.decide method="post" action={ "/console/exceptions/" (x.id) "/decide" } {
                    input type="hidden" name="csrf" value=(who.csrf);
                    input type="hidden" name="action" value=(action);
                    p { strong { (label) } " — " (help) }
                    @if action == "attach" {
                        label { "Order ref " input type="text" name="order" required; }
                    }
                    label { "Reason " input type="text" name="reason" required; }
                    button type="submit" { (label) }
                }
            }
        }
    };
    respond(StatusCode::OK, page(&title, Some(who), body))
}
