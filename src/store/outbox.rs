//! The outbox write (docs/reference.md §6): the `payrecon_events` row of a transition payrecon
//! applied, built from the order row its UPDATE returned and inserted in the same transaction
//! as the `payrecon_transitions` row. The body is serialised here once; the delivery loop sends
//! these exact bytes on every attempt.

use serde::Serialize;

use super::ApplyContext;
use crate::domain::{NewPayment, PlannedTransition, State};

from_row! {
    /// The order columns an applying UPDATE returns (`RETURNING`), for the event body.
    pub(crate) struct EventOrder {
        pub order_ref: String,
        pub chain: String,
        pub tx_hash: Option<String>,
        pub log_index: Option<i64>,
        pub block_number: Option<i64>,
        pub block_hash: Option<String>,
        pub asset: String,
        pub amount_due_text: String,
        pub amount_paid_text: Option<String>,
    }
}

/// `o.id` then the `EventOrder` columns, as one flat row (a set-wise batch's orders).
pub(super) struct IdAndOrder {
    pub id: i64,
    pub order: EventOrder,
}

impl<'r, R: sqlx::Row> sqlx::FromRow<'r, R> for IdAndOrder
where
    &'r str: sqlx::ColumnIndex<R>,
    EventOrder: sqlx::FromRow<'r, R>,
    i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    fn from_row(row: &'r R) -> Result<Self, sqlx::Error> {
        Ok(IdAndOrder {
            id: row.try_get("id")?,
            order: EventOrder::from_row(row)?,
        })
    }
}

/// An event row about to be written: of a transition, or of a payment (docs/reference.md §6).
pub(crate) struct NewEvent {
    pub id: String,
    pub transition_id: Option<i64>,
    pub payment_id: Option<i64>,
    pub order_id: i64,
    pub kind: &'static str,
    pub body: String,
}

#[derive(Serialize)]
struct Body<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    timestamp: &'a str,
    data: Data<'a>,
}

#[derive(Serialize)]
struct Data<'a> {
    order_ref: &'a str,
    order_id: i64,
    from_state: &'a str,
    to_state: &'a str,
    chain: &'a str,
    tx_hash: Option<&'a str>,
    log_index: Option<i64>,
    block_number: Option<i64>,
    block_hash: Option<&'a str>,
    asset: &'a str,
    amount_due: &'a str,
    amount_paid: Option<&'a str>,
    source: &'a str,
    provider: &'a str,
    run_id: Option<&'a str>,
}

/// `order.pending` | `order.confirmed` | `order.final` (never `unpaid`: no transition goes
/// there).
pub fn event_type(to: State) -> &'static str {
    match to {
        State::Unpaid => "order.unpaid",
        State::Pending => "order.pending",
        State::Confirmed => "order.confirmed",
        State::Final => "order.final",
    }
}

/// The event of transition `transition_id` (`from -> to` of `order_id`), written at `now`
/// (RFC 3339), from the order row as the UPDATE left it.
pub(crate) fn new_event(
    order_id: i64,
    transition_id: i64,
    from: State,
    to: State,
    order: &EventOrder,
    ctx: &ApplyContext,
    now: &str,
) -> NewEvent {
    let kind = event_type(to);
    let body = Body {
        kind,
        timestamp: now,
        data: Data {
            order_ref: &order.order_ref,
            order_id,
            from_state: from.as_str(),
            to_state: to.as_str(),
            chain: &order.chain,
            tx_hash: order.tx_hash.as_deref(),
            log_index: order.log_index,
            block_number: order.block_number,
            block_hash: order.block_hash.as_deref().filter(|h| !h.is_empty()),
            asset: &order.asset,
            amount_due: &order.amount_due_text,
            amount_paid: order.amount_paid_text.as_deref(),
            source: ctx.source.as_str(),
            provider: &ctx.provider,
            run_id: ctx.run_id_or_null(),
        },
    };
    NewEvent {
        id: new_id(),
        transition_id: Some(transition_id),
        payment_id: None,
        order_id,
        kind,
        // Plain structs of strings and integers: serialising cannot fail.
        body: serde_json::to_string(&body).unwrap_or_default(),
    }
}

fn new_id() -> String {
    format!("evt_{}", uuid::Uuid::new_v4().simple())
}

/// The type of a payment's event.
pub const PAYMENT_RECEIVED: &str = "order.payment_received";

#[derive(Serialize)]
struct PaymentBody<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    timestamp: &'a str,
    data: PaymentData<'a>,
}

#[derive(Serialize)]
struct PaymentData<'a> {
    order_ref: &'a str,
    payment_id: i64,
    payment: PaymentPart<'a>,
    order: OrderPart<'a>,
    /// `null`, or why the order did not move: `underpaid` or `late`.
    held: Option<&'a str>,
    shortfall: String,
    excess: String,
    source: &'a str,
    provider: &'a str,
    run_id: Option<&'a str>,
}

#[derive(Serialize)]
struct PaymentPart<'a> {
    chain: &'a str,
    tx_hash: &'a str,
    log_index: i64,
    block_number: u64,
    block_hash: Option<&'a str>,
    amount: String,
    state: &'a str,
}

#[derive(Serialize)]
struct OrderPart<'a> {
    order_ref: &'a str,
    order_id: i64,
    amount_due: String,
    amount_paid: String,
    state: &'a str,
}

/// The `order.payment_received` event of payment `payment_id`, credited to `t.order_id` by
/// step `t` (the order at `t.to` after it), written at `now`.
pub(crate) fn payment_event(
    payment_id: i64,
    t: &PlannedTransition,
    p: &NewPayment,
    ctx: &ApplyContext,
    now: &str,
) -> NewEvent {
    let body = PaymentBody {
        kind: PAYMENT_RECEIVED,
        timestamp: now,
        data: PaymentData {
            order_ref: &t.order_ref,
            payment_id,
            payment: PaymentPart {
                chain: &p.key.chain,
                tx_hash: p.key.tx_hash.as_str(),
                log_index: p.key.log_index,
                block_number: p.block.number,
                block_hash: Some(p.block.hash.as_str()).filter(|h| !h.is_empty()),
                amount: p.amount.to_string(),
                state: p.state.as_str(),
            },
            order: OrderPart {
                order_ref: &t.order_ref,
                order_id: t.order_id,
                amount_due: p.amount_due.to_string(),
                amount_paid: p.paid_after.to_string(),
                state: t.to.as_str(),
            },
            held: if p.held_late {
                Some("late")
            } else {
                t.attach.is_none().then_some("underpaid")
            },
            shortfall: p.amount_due.saturating_sub(p.paid_after).to_string(),
            excess: p.paid_after.saturating_sub(p.amount_due).to_string(),
            source: ctx.source.as_str(),
            provider: &ctx.provider,
            run_id: ctx.run_id_or_null(),
        },
    };
    NewEvent {
        id: new_id(),
        transition_id: None,
        payment_id: Some(payment_id),
        order_id: t.order_id,
        kind: PAYMENT_RECEIVED,
        body: serde_json::to_string(&body).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests;
