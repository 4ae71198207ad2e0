//! An order's page (its whole story, oldest first, and why it is not paid yet), the events,
//! runs and balances pages.

use crate::domain::{ChainHead, U256};
use axum::http::StatusCode;
use axum::response::Response;
use maud::html;

use super::{page, respond};
use crate::assets::Assets;
use crate::console::auth::Who;
use crate::store::{
    BalanceRow, EventRow, ExceptionRow, FindingView, OrderView, PaymentView, RunPageRow,
    TransitionView,
};

/// What the order page shows, read by `pages::order`.
pub struct OrderStory {
    pub order: OrderView,
    pub payments: Vec<PaymentView>,
    pub transitions: Vec<TransitionView>,
    pub exceptions: Vec<ExceptionRow>,
    pub events: Vec<EventRow>,
    /// What runs saw of it: the providers' records and the chain's states (newest first).
    pub findings: Vec<FindingView>,
    /// The confirmations its chain wants before `confirmed` (the config's).
    pub confirmations: Option<u64>,
    /// Its chain's head now, read for an order paid but not final (`None`: not read).
    pub head: Option<ChainHead>,
}

fn units(s: Option<&str>) -> U256 {
    s.and_then(|s| U256::from_str_radix(s, 10).ok())
        .unwrap_or(U256::ZERO)
}

/// Why the order is not paid yet (or that it is), in one sentence.
pub fn why(s: &OrderStory, assets: &Assets) -> String {
    let o = &s.order;
    let tokens = |u: U256| assets.amount(&o.chain, Some(&o.asset), &u.to_string());
    let open = |kind: &str| {
        s.exceptions
            .iter()
            .find(|x| x.kind == kind && x.status == "open")
    };
    let (due, paid) = (units(Some(&o.amount_due)), units(o.amount_paid.as_deref()));
    if let Some(x) = open("amount_mismatch") {
        return format!(
            "Held: {} of {} paid, {} short (exception {}).",
            tokens(paid),
            tokens(due),
            tokens(due.saturating_sub(paid)),
            x.id
        );
    }
    if let Some(x) = open("late_payment") {
        let at = o.expires_at.as_deref().unwrap_or("?");
        return format!(
            "Held: paid late, after it expired at {at} (exception {}).",
            x.id
        );
    }
    if let Some(x) = open("reorged") {
        return format!("A payment to it left the chain (exception {}).", x.id);
    }
    match o.state.as_str() {
        "final" => format!(
            "Paid: {} of {} final since {}.",
            tokens(paid),
            tokens(due),
            o.state_changed_at.as_deref().unwrap_or("?")
        ),
        "pending" | "confirmed" => waiting(s),
        _ if s.payments.is_empty() => match &o.expires_at {
            Some(at) => format!("No payment seen; it expires (or expired) at {at}."),
            None => "No payment seen yet.".to_string(),
        },
        _ => format!(
            "{} of {} paid so far; {} to go.",
            tokens(paid),
            tokens(due),
            tokens(due.saturating_sub(paid))
        ),
    }
}

/// Why an order paid on chain is not final yet: its confirmations against the chain's head
/// when it was read, else what the chain's configuration wants.
fn waiting(s: &OrderStory) -> String {
    let o = &s.order;
    let block = o.block_number.map(|b| b.to_string()).unwrap_or("?".into());
    match (o.state.as_str(), &s.head, o.block_number) {
        ("pending", Some(h), Some(b)) => format!(
            "Paid on chain, waiting for confirmations: {} of {} (block {b}).",
            (h.number + 1).saturating_sub(u64::try_from(b).unwrap_or(u64::MAX)),
            h.confirmations
        ),
        ("pending", _, _) => format!(
            "Paid on chain, waiting for {} confirmations: pending in block {block}.",
            s.confirmations
                .map(|c| c.to_string())
                .unwrap_or("its".into())
        ),
        (_, Some(h), _) => format!(
            "Paid and confirmed in block {block}, waiting until the chain makes it final \
             (final up to block {} now).",
            h.final_block
        ),
        _ => {
            format!("Paid and confirmed in block {block}, waiting until the chain makes it final.")
        }
    }
}

/// One line of the timeline: when, and what happened.
fn timeline(s: &OrderStory, assets: &Assets) -> Vec<(String, String)> {
    let o = &s.order;
    let mut t: Vec<(String, String)> = Vec::new();
    let at = |x: &Option<String>| x.clone().unwrap_or_default();
    t.push((
        at(&o.created_at),
        format!(
            "Order registered: {} due to {}",
            assets.amount(&o.chain, Some(&o.asset), &o.amount_due),
            o.pay_to
        ),
    ));
    for p in &s.payments {
        let by = p
            .provider
            .as_deref()
            .map(|v| format!(", reported by {v}"))
            .unwrap_or_default();
        let gone = p
            .reorged_at
            .as_deref()
            .map(|r| format!("; left the chain at {r}"))
            .unwrap_or_default();
        t.push((
            at(&p.created_at),
            format!(
                "Payment of {} seen ({}, {}{by}): {} #{}, block {}{gone}",
                assets.amount(&p.chain, Some(&o.asset), &p.amount),
                p.state,
                p.source,
                p.tx_hash,
                p.log_index,
                p.block_number.map(|b| b.to_string()).unwrap_or("?".into())
            ),
        ));
    }
    for tr in &s.transitions {
        t.push((
            at(&tr.created_at),
            format!(
                "{} → {} ({}, {})",
                tr.from_state, tr.to_state, tr.source, tr.provider
            ),
        ));
    }
    for x in &s.exceptions {
        t.push((
            x.first_seen_at.clone(),
            format!(
                "Exception {} opened: {} ({})",
                x.id,
                x.kind,
                assets.detail(&x.chain, x.asset.as_deref(), &x.detail)
            ),
        ));
        if let (Some(r), Some(when)) = (&x.resolution, &x.resolved_at) {
            let by = x.resolved_by.as_deref().unwrap_or("?");
            t.push((
                when.clone(),
                format!(
                    "Exception {} {r} by {by}: {}",
                    x.id,
                    x.note.as_deref().unwrap_or("")
                ),
            ));
        }
    }
    t.extend(event_lines(&s.events));
    t.extend(s.findings.iter().map(finding_line));
    t.sort_by(|a, b| a.0.cmp(&b.0));
    t
}

/// What a run saw: the provider's record or the chain's state beside the ledger's, and what
/// payrecon did about it.
fn finding_line(f: &FindingView) -> (String, String) {
    let state = |s: &Option<String>| s.clone().unwrap_or("nothing".into());
    let detail = match f.detail.is_empty() {
        true => String::new(),
        false => format!(" ({})", f.detail),
    };
    (
        f.created_at.clone(),
        format!(
            "Run {}: {} saw {} ({}), the ledger had {}: {}{detail}",
            f.run_id,
            f.provider,
            state(&f.observed_state),
            f.kind,
            state(&f.local_state),
            f.action,
        ),
    )
}

/// An event's lines: written, and delivered or dead.
fn event_lines(events: &[EventRow]) -> Vec<(String, String)> {
    let mut t = Vec::new();
    for e in events {
        t.push((
            e.created_at.clone(),
            format!("Event {} ({}) written", e.kind, e.id),
        ));
        if let Some(d) = &e.delivered_at {
            t.push((
                d.clone(),
                format!("Event {} delivered after {} attempt(s)", e.kind, e.attempts),
            ));
        }
        if let Some(d) = &e.dead_at {
            t.push((
                d.clone(),
                format!(
                    "Event {} dead after {} attempts: {}",
                    e.kind,
                    e.attempts,
                    e.last_error.as_deref().unwrap_or("")
                ),
            ));
        }
    }
    t
}

pub fn order(who: &Who, s: &OrderStory, assets: &Assets) -> Response {
    let o = &s.order;
    let body = html! {
        p.why { (why(s, assets)) }
        table {
            tr { th { "State" } td { (o.state) } }
            tr { th { "Due" } td { (assets.amount(&o.chain, Some(&o.asset), &o.amount_due)) } }
            tr { th { "Paid" } td { (o.amount_paid.as_deref().map(|p| assets.amount(&o.chain, Some(&o.asset), p)).unwrap_or("nothing".into())) } }
            tr { th { "Pay to" } td { (o.chain) " " (o.pay_to) } }
            @if let Some(r) = &o.reference { tr { th { "Reference" } td { (r) } } }
        }
        @for x in s.exceptions.iter().filter(|x| x.status == "open") {
            p { a href={ "/console/exceptions/" (x.id) } { "Decide on exception " (x.id) " (" (x.kind) ")" } }
        }
        @if s.events.iter().any(|e| e.status != "pending") {
            form method="post" action="/console/events/replay" {
                input type="hidden" name="csrf" value=(who.csrf);
                input type="hidden" name="order" value=(o.order_ref);
                button type="submit" { "Send this order's events again" }
            }
        }
        h2 { "Timeline" }
        table {
            tr { th { "When" } th { "What" } }
            @for (when, what) in timeline(s, assets) { tr { td.when { (when) } td { (what) } } }
        }
    };
    respond(
        StatusCode::OK,
        page(&format!("Order {}", o.order_ref), Some(who), body),
    )
}

pub fn events(
    who: &Who,
    status: &str,
    rows: &[EventRow],
    more: bool,
    msg: Option<&str>,
) -> Response {
    // `rows` are oldest first: the page's oldest bounds the next (older) page.
    let older = rows.first().filter(|_| more).map(|e| e.seq);
    let body = html! {
        @if let Some(m) = msg { p.msg { (m) } }
        p {
            @for s in ["dead", "pending", "delivered"] {
                @if s == status { strong { (s) } } @else { a href={ "/console/events?status=" (s) } { (s) } }
                " "
            }
        }
        @if rows.is_empty() {
            p { "No " (status) " event." }
        } @else {
            table {
                tr { th { "Event" } th { "Order" } th { "Type" } th { "Written" } th { "Attempts" } th { "Last answer" } th {} }
                @for e in rows.iter().rev() {
                    tr {
                        td { (e.id) }
                        td { @if let Some(r) = &e.order_ref { a href={ "/console/orders/" (r) } { (r) } } }
                        td { (e.kind) }
                        td { (e.created_at) }
                        td.num { (e.attempts) }
                        td { (e.last_status.map(|s| s.to_string()).unwrap_or_default()) " " (e.last_error.as_deref().unwrap_or("")) }
                        td {
                            @if e.status != "pending" {
                                form method="post" action="/console/events/replay" {
                                    input type="hidden" name="csrf" value=(who.csrf);
                                    input type="hidden" name="id" value=(e.id);
                                    button type="submit" { "Send again" }
                                }
                            }
                        }
                    }
                }
            }
        }
        @if let Some(seq) = older {
            a href={ "/console/events?status=" (status) "&before=" (seq) } { "Older →" }
        }
    };
    respond(StatusCode::OK, page("Events", Some(who), body))
}

pub fn runs(who: &Who, rows: &[RunPageRow], more: bool) -> Response {
    let body = html! {
        @if rows.is_empty() {
            p { "No run yet." }
        } @else {
            table {
                tr { th { "Started" } th { "Trigger" } th { "Window" } th { "Status" } th.num { "Checked" } th.num { "Gaps" } th.num { "Applied" } th.num { "Resends" } th { "Error" } }
                @for r in rows {
                    tr {
                        td.when { (r.started_at) }
                        td { (r.trigger) }
                        td { (r.since) " – " (r.until) }
                        td { (r.status) @if r.finished_at.is_none() { " (not finished)" } }
                        td.num { (r.checked) } td.num { (r.gaps) } td.num { (r.applied) } td.num { (r.resends_requested) }
                        td { (r.error.as_deref().unwrap_or("")) }
                    }
                }
            }
        }
        @if let (true, Some(last)) = (more, rows.last()) {
            a href=(older_runs(last)) { "Older →" }
        }
    };
    respond(StatusCode::OK, page("Runs", Some(who), body))
}

fn older_runs(last: &RunPageRow) -> String {
    href(
        "/console/runs",
        &[("at", &last.started_at), ("id", &last.id)],
    )
}

fn next_balances(last: &BalanceRow) -> String {
    let pairs = [
        ("chain", last.chain.as_str()),
        ("address", &last.address),
        ("asset", &last.asset),
    ];
    href("/console/balances", &pairs)
}

/// `path` with `pairs` as its query, encoded.
fn href(path: &str, pairs: &[(&str, &str)]) -> String {
    let mut u = reqwest::Url::parse("http://console").expect("a valid URL");
    u.set_path(path);
    u.query_pairs_mut().extend_pairs(pairs);
    format!("{}?{}", u.path(), u.query().unwrap_or(""))
}

pub fn balances(who: &Who, rows: &[BalanceRow], more: bool, assets: &Assets) -> Response {
    let body = html! {
        p { "Deposit addresses whose last balance check left a difference nothing explains. Each has an open balance_mismatch exception." }
        @if rows.is_empty() {
            p { "None." }
        } @else {
            table {
                tr { th { "Chain" } th { "Address" } th.num { "Balance" } th.num { "Expected" } th.num { "Difference" } th { "Checked at block" } }
                @for b in rows {
                    tr {
                        td { (b.chain) }
                        td { (b.address) }
                        td.num { (assets.signed(&b.chain, &b.asset, &b.balance.to_string())) }
                        td.num { (assets.signed(&b.chain, &b.asset, &b.expected.to_string())) }
                        td.num { (assets.signed(&b.chain, &b.asset, &b.difference.to_string())) }
                        td { (b.checked_block) }
                    }
                }
            }
        }
        @if let (true, Some(last)) = (more, rows.last()) {
            a href=(next_balances(last)) { "More →" }
        }
    };
    respond(StatusCode::OK, page("Balances", Some(who), body))
}
