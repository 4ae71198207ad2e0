//! SQLite: WAL, a 5 s busy timeout, lists passed as one JSON array (`json_each`), and every
//! write batch in a `BEGIN IMMEDIATE` transaction so that writers queue instead of deadlocking.

mod apply;
mod backend;

use std::str::FromStr;
use std::time::Duration;

use jiff::Timestamp;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Sqlite, SqlitePool};

use super::StoreError;
use crate::store::dialect::Dialect;
use crate::store::rows::{connect_error, sqlite_ts};

impl Dialect for Sqlite {
    const NAME: &'static str = "sqlite";
    const BEGIN_WRITE: &'static str = "BEGIN IMMEDIATE";
    const ROW_COLUMNS: &'static str = "o.id, o.order_ref, o.chain, o.pay_to, o.asset, \
         CAST(o.amount_due AS TEXT) AS amount_due_text, o.tx_hash, o.log_index, \
         CAST(o.amount_paid AS TEXT) AS amount_paid_text, o.block_number, o.block_hash, o.state, \
         CAST(ROUND((julianday(o.expires_at) - 2440587.5) * 86400000.0) AS INTEGER) AS expires_at_ms, \
         CASE WHEN o.tx_hash IS NULL OR EXISTS (SELECT 1 FROM payrecon_payments kp \
         WHERE kp.chain = o.chain AND kp.tx_hash = o.tx_hash AND kp.log_index = o.log_index) \
         THEN 1 ELSE 0 END AS key_credited";
    const RETURNING: &'static str = "order_ref, chain, tx_hash, log_index, block_number, \
         block_hash, asset, CAST(amount_due AS TEXT) AS amount_due_text, \
         CAST(amount_paid AS TEXT) AS amount_paid_text";

    const NOW: &'static str = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')";
    fn affected(done: &<Self as sqlx::Database>::QueryResult) -> u64 {
        done.rows_affected()
    }
    /// SQLite allows 32,766 bound values per statement.
    const INSERT_ROWS: usize = 500;
    const AMOUNT_CAST: &'static str = "";
    const TS_CAST: &'static str = "";

    fn p(n: usize) -> String {
        format!("?{n}")
    }
    /// Times are stored as RFC 3339 text with milliseconds and compared as text.
    fn ts(n: usize) -> String {
        format!("?{n}")
    }
    fn cmp_time(col: &str) -> String {
        format!("julianday({col})")
    }
    fn cmp_ts(n: usize) -> String {
        format!("julianday(?{n})")
    }
    fn ts_literal(t: Timestamp) -> String {
        format!("'{}'", sqlite_ts(t))
    }
    fn ts_bind(t: Timestamp) -> String {
        sqlite_ts(t)
    }
    fn amount(n: usize) -> String {
        format!("?{n}")
    }
    fn any(col: &str, n: usize) -> String {
        format!("{col} IN (SELECT value FROM json_each(?{n}))")
    }
    type Texts = String;
    fn texts<S: AsRef<str>>(values: &[S]) -> String {
        crate::store::rows::json_list(&values.iter().map(|v| v.as_ref()).collect::<Vec<_>>())
    }
    type Ints = String;
    fn ints(values: &[i64]) -> String {
        crate::store::rows::json_list(values)
    }
    fn int8(col: &str) -> String {
        col.to_string()
    }
    fn ts_text(col: &str) -> String {
        col.to_string()
    }
    /// `julianday` reads the merchant's spellings too: `2026-11-01 10:00:00`, `…T…Z`.
    fn ms(col: &str) -> String {
        format!("CAST(ROUND((julianday({col}) - 2440587.5) * 86400000.0) AS INTEGER)")
    }
    fn text(n: usize) -> String {
        format!("?{n}")
    }
    fn ts_text_exact(col: &str) -> String {
        col.to_string()
    }
    fn instr(haystack: &str, needle: &str) -> String {
        format!("instr({haystack}, {needle})")
    }
    fn numbered_texts(idx: usize, alias: &str) -> String {
        format!("(SELECT value AS name, key AS n FROM json_each(?{idx})) AS {alias}")
    }
    fn table_exists(name: &str) -> String {
        format!("EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = {name})")
    }
    fn same(a: &str, b: &str) -> String {
        format!("{a} IS {b}")
    }
    fn amount_positive(col: &str) -> String {
        format!("CAST({col} AS TEXT) NOT IN ('0', '')")
    }
    fn amount_text(col: &str) -> String {
        format!("CAST({col} AS TEXT)")
    }
    fn position(col: &str) -> String {
        col.to_string()
    }
    fn position_param(n: usize) -> String {
        format!("?{n}")
    }
    fn position_ok(pos: &str) -> bool {
        pos.parse::<Timestamp>().is_ok()
    }
    fn stored_time(t: Timestamp) -> Timestamp {
        Timestamp::from_millisecond(t.as_millisecond()).unwrap_or(t)
    }

    /// One UPDATE: SQLite has one writer at a time.
    fn claim_events_sql(due: &str) -> String {
        format!(
            "UPDATE payrecon_events SET claimed_by = ?2, claimed_until = ?3 \
             WHERE id IN (SELECT e.id FROM payrecon_events e WHERE {due} \
             ORDER BY e.next_attempt_at, e.seq LIMIT ?4) \
             RETURNING id, order_id, body, attempts"
        )
    }
}

pub(super) async fn connect(url: &str, max_connections: u32) -> Result<SqlitePool, StoreError> {
    let options = SqliteConnectOptions::from_str(url)
        .map_err(|e| connect_error(url, e))?
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .busy_timeout(Duration::from_secs(5))
        .foreign_keys(true);
    SqlitePoolOptions::new()
        .max_connections(max_connections.max(1))
        .connect_with(options)
        .await
        .map_err(|e| connect_error(url, e))
}
/// A pool that can neither create the file nor write (`PRAGMA query_only`; no journal-mode
/// pragma either: setting it could convert, that is write, the file).
pub(super) async fn connect_read_only(url: &str, max: u32) -> Result<SqlitePool, StoreError> {
    let options = SqliteConnectOptions::from_str(url)
        .map_err(|e| connect_error(url, e))?
        .create_if_missing(false)
        .pragma("query_only", "ON")
        .busy_timeout(Duration::from_secs(5));
    SqlitePoolOptions::new()
        .max_connections(max)
        .connect_with(options)
        .await
        .map_err(|e| match connect_error(url, e) {
            StoreError::Connect { url, reason } => StoreError::Connect {
                url,
                reason: format!(
                    "{reason} (a read-only view never creates the SQLite file; \
                     `payrecon migrate` does)"
                ),
            },
            other => other,
        })
}
