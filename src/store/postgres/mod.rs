//! PostgreSQL: lists passed as arrays (`UNNEST`), a write batch locks its rows up front
//! (`FOR UPDATE`, in id order, one statement), amounts travel as text cast to NUMERIC.

mod apply;
mod backend;
mod batch;

use std::str::FromStr;
use std::time::Duration;

use jiff::Timestamp;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{PgPool, Postgres};

use super::StoreError;
use crate::store::dialect::Dialect;
use crate::store::rows::connect_error;

/// Acquire waits up to 10 s, retrying a refused connect: a shorter restart costs no run.
/// `test_before_acquire` (sqlx's default, kept explicit): connections a restart cut are
/// replaced, not handed to the next run (`tests/it/depfaults/pg_outage.rs` fails without it).
impl Dialect for Postgres {
    const NAME: &'static str = "postgres";
    const BEGIN_WRITE: &'static str = "BEGIN";
    const ROW_COLUMNS: &'static str = "o.id, o.order_ref, o.chain, o.pay_to, o.asset, \
         o.amount_due::text AS amount_due_text, o.tx_hash, o.log_index, \
         o.amount_paid::text AS amount_paid_text, o.block_number, o.block_hash, o.state, \
         CASE WHEN isfinite(o.expires_at) \
         THEN (EXTRACT(EPOCH FROM o.expires_at) * 1000)::bigint END AS expires_at_ms, \
         CASE WHEN o.tx_hash IS NULL OR EXISTS (SELECT 1 FROM payrecon_payments kp \
         WHERE kp.chain = o.chain AND kp.tx_hash = o.tx_hash AND kp.log_index = o.log_index) \
         THEN 1::bigint ELSE 0::bigint END AS key_credited";
    /// On the alias `o` (`UPDATE orders o …`).
    const RETURNING: &'static str = "o.order_ref, o.chain, o.tx_hash, o.log_index, \
         o.block_number, o.block_hash, o.asset, o.amount_due::text AS amount_due_text, \
         o.amount_paid::text AS amount_paid_text";

    const NOW: &'static str = "now()";
    fn affected(done: &<Self as sqlx::Database>::QueryResult) -> u64 {
        done.rows_affected()
    }
    /// PostgreSQL allows 65,535 bound values per statement.
    const INSERT_ROWS: usize = 1_000;
    const AMOUNT_CAST: &'static str = "::numeric";
    const TS_CAST: &'static str = "::timestamptz";

    fn p(n: usize) -> String {
        format!("${n}")
    }
    fn ts(n: usize) -> String {
        format!("${n}::timestamptz")
    }
    fn cmp_time(col: &str) -> String {
        col.to_string()
    }
    fn cmp_ts(n: usize) -> String {
        format!("${n}::timestamptz")
    }
    fn ts_literal(t: Timestamp) -> String {
        format!("'{t}'::timestamptz")
    }
    fn ts_bind(t: Timestamp) -> String {
        t.to_string()
    }
    fn amount(n: usize) -> String {
        format!("${n}::numeric")
    }
    fn any(col: &str, n: usize) -> String {
        format!("{col} = ANY(${n})")
    }
    type Texts = Vec<String>;
    fn texts<S: AsRef<str>>(values: &[S]) -> Vec<String> {
        values.iter().map(|v| v.as_ref().to_string()).collect()
    }
    type Ints = Vec<i64>;
    fn ints(values: &[i64]) -> Vec<i64> {
        values.to_vec()
    }
    fn int8(col: &str) -> String {
        format!("{col}::bigint")
    }
    fn ts_text(col: &str) -> String {
        format!("to_char({col} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')")
    }
    /// `infinity` has no milliseconds: read as NULL (never), not a failed query. Truncated to
    /// the millisecond first (exact on the stored microseconds), like SQLite's text: a time
    /// shown is never later than the time stored.
    fn ms(col: &str) -> String {
        format!(
            "CASE WHEN isfinite({col}) \
             THEN (EXTRACT(EPOCH FROM date_trunc('milliseconds', {col})) * 1000)::bigint END"
        )
    }
    fn text(n: usize) -> String {
        format!("${n}::text")
    }
    fn ts_text_exact(col: &str) -> String {
        format!("to_char({col} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')")
    }
    fn instr(haystack: &str, needle: &str) -> String {
        format!("strpos({haystack}, {needle})")
    }
    fn numbered_texts(idx: usize, alias: &str) -> String {
        format!("UNNEST(${idx}::text[]) WITH ORDINALITY AS {alias}(name, n)")
    }
    fn table_exists(name: &str) -> String {
        format!("to_regclass({name}) IS NOT NULL")
    }
    fn same(a: &str, b: &str) -> String {
        format!("{a} IS NOT DISTINCT FROM {b}")
    }
    fn amount_positive(col: &str) -> String {
        format!("{col} > 0")
    }
    fn amount_text(col: &str) -> String {
        format!("{col}::text")
    }
    fn position(col: &str) -> String {
        format!("((EXTRACT(EPOCH FROM {col}) * 1000000)::bigint)::text")
    }
    /// Exact: the stored microseconds.
    fn position_param(n: usize) -> String {
        format!("('epoch'::timestamptz + ${n}::bigint * interval '1 microsecond')")
    }
    fn position_ok(pos: &str) -> bool {
        pos.parse::<i64>().is_ok()
    }
    fn stored_time(t: Timestamp) -> Timestamp {
        Timestamp::from_microsecond(t.as_microsecond()).unwrap_or(t)
    }

    /// `FOR UPDATE SKIP LOCKED`: instances claiming at once take disjoint events.
    fn claim_events_sql(due: &str) -> String {
        format!(
            "WITH due AS (SELECT e.id FROM payrecon_events e WHERE {due} \
             ORDER BY e.next_attempt_at, e.seq LIMIT $4 FOR UPDATE SKIP LOCKED) \
             UPDATE payrecon_events e SET claimed_by = $2, claimed_until = $3::timestamptz \
             FROM due WHERE e.id = due.id \
             RETURNING e.id, e.order_id, e.body, e.attempts::bigint"
        )
    }
}

pub(super) async fn connect(url: &str, max_connections: u32) -> Result<PgPool, StoreError> {
    let options = PgConnectOptions::from_str(url).map_err(|e| connect_error(url, e))?;
    PgPoolOptions::new()
        .max_connections(max_connections.max(1))
        .acquire_timeout(Duration::from_secs(10))
        .test_before_acquire(true)
        .connect_with(options)
        .await
        .map_err(|e| connect_error(url, e))
}
/// A pool whose every transaction is read-only (`default_transaction_read_only`).
pub(super) async fn connect_read_only(url: &str, max: u32) -> Result<PgPool, StoreError> {
    let options = PgConnectOptions::from_str(url)
        .map_err(|e| connect_error(url, e))?
        .options([("default_transaction_read_only", "on")]);
    PgPoolOptions::new()
        .max_connections(max)
        .acquire_timeout(Duration::from_secs(5))
        .connect_with(options)
        .await
        .map_err(|e| connect_error(url, e))
}
