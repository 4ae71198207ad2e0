//! What only the operator console reads: an order's findings (the provider records and chain
//! states each run saw), the orders held now, and the per-day counts its plots draw. Each is
//! one statement on an index; the plots' counts are read for a time range, so that the console
//! reads the closed days once and today's on each request.

use jiff::Timestamp;
use serde::Serialize;

use super::backend::dispatch;
use super::dialect::Dialect;
use super::rows::{counted, db_error};
use super::{Store, StoreError};

from_row! {
    /// What a run saw of an order: the provider's record and the chain's state beside the ledger's.
    #[derive(Debug, Clone, Serialize)]
    pub struct FindingView {
        pub run_id: String,
        pub provider: String,
        pub kind: String,
        pub local_state: Option<String>,
        pub observed_state: Option<String>,
        pub action: String,
        pub detail: String,
        pub tx_hash: Option<String>,
        pub created_at: String,
    }
}

from_row! {
    /// An order held now: unpaid, no key, part of its amount credited (base units as text).
    #[derive(Debug, Clone, Serialize)]
    pub struct HeldView {
        pub order_ref: String,
        pub chain: String,
        pub asset: String,
        pub amount_due: String,
        pub amount_paid: String,
        pub expires_at: Option<String>,
        pub created_at: String,
    }
}

/// The delay buckets of `delays_per_day`: a payment's event delivered within this many
/// seconds of its block (the last bucket: later).
pub const DELAY_BUCKETS: [i64; 6] = [60, 300, 900, 3_600, 21_600, 86_400];

/// A day's start (ms since the epoch) of a timestamp column, in SQL.
fn day<D: Dialect>(col: &str) -> String {
    let ms = D::ms(col);
    format!("(({ms}) - ({ms}) % 86400000)")
}

impl Store {
    /// The newest `limit` findings about `order_ref`, newest first (`payrecon_findings_order`).
    pub async fn order_findings(
        &self,
        order_ref: &str,
        limit: i64,
    ) -> Result<Vec<FindingView>, StoreError> {
        dispatch!(self, p => {
            let sql = format!(
                "SELECT run_id, provider, kind, local_state, observed_state, action, detail, \
                 tx_hash, {} AS created_at FROM payrecon_findings WHERE order_ref = {} \
                 ORDER BY id DESC LIMIT {}",
                D::ts_text("created_at"),
                D::p(1),
                D::p(2)
            );
            sqlx::query_as(&sql).bind(order_ref).bind(limit).fetch_all(counted(p)).await
        })
        .map_err(|e| db_error("read an order's findings", e))
    }

    /// The newest `limit` orders held now, newest first (`orders_held`).
    pub async fn held_orders(&self, limit: i64) -> Result<Vec<HeldView>, StoreError> {
        dispatch!(self, p => {
            let sql = format!(
                "SELECT {} AS order_ref, o.chain, o.asset, {} AS amount_due, {} AS amount_paid, \
                 {} AS expires_at, {} AS created_at FROM orders o WHERE o.state = 'unpaid' \
                 AND o.tx_hash IS NULL AND o.amount_paid IS NOT NULL ORDER BY o.id DESC LIMIT {}",
                D::exact_text("o.order_ref"),
                D::amount_text("o.amount_due"),
                D::amount_text("o.amount_paid"),
                D::ts_text("o.expires_at"),
                D::ts_text("o.created_at"),
                D::p(1)
            );
            sqlx::query_as(&sql).bind(limit).fetch_all(counted(p)).await
        })
        .map_err(|e| db_error("read the orders held", e))
    }

    /// How many orders are held now (on `orders_held`, which holds them only).
    pub async fn held_total(&self) -> Result<i64, StoreError> {
        dispatch!(self, p => {
            let sql = format!(
                "SELECT {} FROM orders o WHERE o.state = 'unpaid' AND o.tx_hash IS NULL \
                 AND o.amount_paid IS NOT NULL",
                D::int8("COUNT(*)")
            );
            sqlx::query_scalar(&sql).fetch_one(counted(p)).await
        })
        .map_err(|e| db_error("count the orders held", e))
    }

    /// Findings per kind and UTC day (the day's start in ms) created in `[from, to)`.
    pub async fn gaps_per_day(
        &self,
        from: Timestamp,
        to: Timestamp,
    ) -> Result<Vec<(String, i64, i64)>, StoreError> {
        dispatch!(self, p => {
            let sql = format!(
                "SELECT kind, {} AS day, {} FROM payrecon_findings \
                 WHERE created_at >= {} AND created_at < {} GROUP BY kind, day ORDER BY day, kind",
                day::<D>("created_at"),
                D::int8("COUNT(*)"),
                D::ts(1),
                D::ts(2)
            );
            sqlx::query_as(&sql)
                .bind(D::ts_bind(from))
                .bind(D::ts_bind(to))
                .fetch_all(counted(p))
                .await
        })
        .map_err(|e| db_error("count the gaps per day", e))
    }

    /// Payment events delivered in `[from, to)` per UTC day of delivery and delay bucket: the
    /// index in `DELAY_BUCKETS` of the first bound the time from the payment's block to the
    /// delivery is under (its length: later). A payment with no block time (its block could
    /// not be read when it was credited, or an earlier payrecon credited it on EVM or Tron to
    /// an order that does not expire) counts from when payrecon recorded it.
    pub async fn delays_per_day(
        &self,
        from: Timestamp,
        to: Timestamp,
    ) -> Result<Vec<(i64, i64, i64)>, StoreError> {
        dispatch!(self, p => {
            let delay = format!("({} - {})", D::ms("e.delivered_at"), D::ms("e.paid_at"));
            let mut bucket = String::from("CASE");
            for (i, s) in DELAY_BUCKETS.iter().enumerate() {
                bucket.push_str(&format!(" WHEN {delay} < {} THEN {i}", s * 1000));
            }
            bucket.push_str(&format!(" ELSE {} END", DELAY_BUCKETS.len()));
            // Driven by the events delivered in the range (`payrecon_events_delivered`), each
            // payment looked up by its key: never a join the planner could turn around.
            let sql = format!(
                "SELECT day, bucket, {} FROM (SELECT {} AS day, {} AS bucket FROM \
                 (SELECT e.delivered_at, (SELECT COALESCE(p.block_time, p.created_at) \
                 FROM payrecon_payments p WHERE p.id = e.payment_id) AS paid_at \
                 FROM payrecon_events e \
                 WHERE e.delivered_at IS NOT NULL AND e.delivered_at >= {} \
                 AND e.delivered_at < {} AND e.payment_id IS NOT NULL) e \
                 WHERE e.paid_at IS NOT NULL) d GROUP BY day, bucket ORDER BY day, bucket",
                D::int8("COUNT(*)"),
                day::<D>("e.delivered_at"),
                D::int8(&bucket),
                D::ts(1),
                D::ts(2)
            );
            sqlx::query_as(&sql)
                .bind(D::ts_bind(from))
                .bind(D::ts_bind(to))
                .fetch_all(counted(p))
                .await
        })
        .map_err(|e| db_error("count the event delays per day", e))
    }
}
