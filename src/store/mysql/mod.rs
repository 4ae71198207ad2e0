//! MariaDB 10.6+ and MySQL 8.0.16+ (tested on MariaDB 10.11 and MySQL 9.7: docs/design/
//! backends.md, "MariaDB/MySQL"): `?` placeholders (positional: every statement the store shares
//! binds each once, in the order of its text), lists passed as one JSON array (`JSON_TABLE`),
//! amounts `DECIMAL(65,0)` read as text, times `DATETIME(6)` in UTC, and each session in READ
//! COMMITTED with strict mode on.

mod apply;
mod backend;
mod batch;

use std::str::FromStr;
use std::time::Duration;

use jiff::Timestamp;
use sqlx::mysql::{MySqlConnectOptions, MySqlPoolOptions};
use sqlx::{Executor, MySql, MySqlPool};

use super::StoreError;
use crate::store::dialect::Dialect;
use crate::store::rows::connect_error;

/// `DATETIME(6)` as MariaDB/MySQL read a bound string: no `T`/`Z`, microseconds, clamped to
/// the type's range (years 1000 to 9999; a time out of it would be read as NULL).
pub(crate) fn mysql_ts(t: Timestamp) -> String {
    let lo = Timestamp::from_second(-30_610_224_000).unwrap_or(Timestamp::MIN);
    let hi = Timestamp::from_microsecond(253_402_300_799_999_999).unwrap_or(Timestamp::MAX);
    t.clamp(lo, hi)
        .strftime("%Y-%m-%d %H:%M:%S%.6f")
        .to_string()
}

/// The milliseconds since the epoch of a `DATETIME(6)` column (NULL for NULL).
fn epoch_us(col: &str) -> String {
    format!("TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', {col})")
}

impl Dialect for MySql {
    const NAME: &'static str = "mysql";
    /// Rows are locked by `SELECT … FOR UPDATE` (`lock_states`), as on PostgreSQL.
    const BEGIN_WRITE: &'static str = "BEGIN";
    /// `order_ref` is `utf8mb4_bin` (compared exactly, as elsewhere), which sqlx 0.8 reads
    /// only as bytes: read as `CHAR`.
    const ROW_COLUMNS: &'static str = "o.id, CAST(o.order_ref AS CHAR) AS order_ref, o.chain, \
         o.pay_to, o.asset, CAST(o.amount_due AS CHAR) AS amount_due_text, o.tx_hash, \
         o.log_index, CAST(o.amount_paid AS CHAR) AS amount_paid_text, o.block_number, \
         o.block_hash, o.state, \
         TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', o.expires_at) DIV 1000 AS expires_at_ms, \
         CASE WHEN o.tx_hash IS NULL OR EXISTS (SELECT 1 FROM payrecon_payments kp \
         WHERE kp.chain = o.chain AND kp.tx_hash = o.tx_hash AND kp.log_index = o.log_index) \
         THEN 1 ELSE 0 END AS key_credited";
    /// No `UPDATE … RETURNING` on either server: `advance` reads these after its UPDATE.
    const RETURNING: &'static str = "CAST(o.order_ref AS CHAR) AS order_ref, o.chain, \
         o.tx_hash, o.log_index, o.block_number, o.block_hash, o.asset, \
         CAST(o.amount_due AS CHAR) AS amount_due_text, \
         CAST(o.amount_paid AS CHAR) AS amount_paid_text";

    const NOW: &'static str = "UTC_TIMESTAMP(6)";
    fn affected(done: &<Self as sqlx::Database>::QueryResult) -> u64 {
        done.rows_affected()
    }
    /// At most 65,535 placeholders per prepared statement.
    const INSERT_ROWS: usize = 1_000;
    /// A decimal string converts to `DECIMAL` exactly on insert.
    const AMOUNT_CAST: &'static str = "";
    const TS_CAST: &'static str = "";

    fn p(_n: usize) -> String {
        "?".into()
    }
    /// Reads RFC 3339 (`…T…Z`, as payrecon spells times) and `ts_bind`'s spelling alike:
    /// strict mode refuses a `Z` in a `DATETIME`.
    fn ts(_n: usize) -> String {
        "CAST(TRIM(TRAILING 'Z' FROM ?) AS DATETIME(6))".into()
    }
    fn cmp_time(col: &str) -> String {
        col.to_string()
    }
    fn cmp_ts(n: usize) -> String {
        Self::ts(n)
    }
    fn ts_literal(t: Timestamp) -> String {
        format!("CAST('{}' AS DATETIME(6))", mysql_ts(t))
    }
    fn ts_bind(t: Timestamp) -> String {
        mysql_ts(t)
    }
    /// `CAST` clamps a value out of range with a warning: amounts are checked before they are
    /// bound (`domain::parse_base_units`, and the 65-digit limit: docs/design/backends.md,
    /// "MariaDB/MySQL").
    fn amount(_n: usize) -> String {
        "CAST(? AS DECIMAL(65,0))".into()
    }
    /// The values compare exactly (`utf8mb4_bin`, as `order_ref`; an ASCII column converts).
    fn any(col: &str, _n: usize) -> String {
        format!(
            "{col} IN (SELECT j.v FROM JSON_TABLE(?, '$[*]' COLUMNS \
             (v VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$')) j)"
        )
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
        format!("CONCAT(LEFT(DATE_FORMAT({col}, '%Y-%m-%dT%H:%i:%s.%f'), 23), 'Z')")
    }
    fn ms(col: &str) -> String {
        format!("{} DIV 1000", epoch_us(col))
    }
    fn text(_n: usize) -> String {
        "?".into()
    }
    fn ts_text_exact(col: &str) -> String {
        format!("CONCAT(DATE_FORMAT({col}, '%Y-%m-%dT%H:%i:%s.%f'), 'Z')")
    }
    /// Exact (`utf8mb4_bin`, an explicit collation, which also settles columns of other
    /// collations: `providers`, `error`).
    fn instr(haystack: &str, needle: &str) -> String {
        format!("INSTR({haystack}, ({needle}) COLLATE utf8mb4_bin)")
    }
    fn numbered_texts(_idx: usize, alias: &str) -> String {
        format!(
            "JSON_TABLE(?, '$[*]' COLUMNS (n FOR ORDINALITY, \
             name VARCHAR(255) CHARACTER SET utf8mb4 PATH '$')) AS {alias}"
        )
    }
    fn table_exists(name: &str) -> String {
        format!(
            "EXISTS (SELECT 1 FROM information_schema.tables WHERE table_schema = DATABASE() \
             AND table_name = {name})"
        )
    }
    fn same(a: &str, b: &str) -> String {
        format!("{a} <=> {b}")
    }
    fn amount_positive(col: &str) -> String {
        format!("{col} > 0")
    }
    fn amount_text(col: &str) -> String {
        format!("CAST({col} AS CHAR)")
    }
    fn position(col: &str) -> String {
        format!("CAST({} AS CHAR)", epoch_us(col))
    }
    /// Exact: the stored microseconds.
    fn position_param(_n: usize) -> String {
        "TIMESTAMPADD(MICROSECOND, CAST(? AS SIGNED), '1970-01-01 00:00:00')".into()
    }
    fn position_ok(pos: &str) -> bool {
        pos.parse::<i64>().is_ok()
    }
    fn stored_time(t: Timestamp) -> Timestamp {
        Timestamp::from_microsecond(t.as_microsecond()).unwrap_or(t)
    }

    /// `DECIMAL(65,0)`: 65 nines (docs/design/backends.md, "MariaDB/MySQL").
    fn max_amount() -> Option<crate::domain::U256> {
        Some(
            crate::domain::U256::from(10u8).pow(crate::domain::U256::from(65u8))
                - crate::domain::U256::from(1u8),
        )
    }
    fn exact_text(col: &str) -> String {
        format!("CAST({col} AS CHAR)")
    }
    fn bigint(col: &str) -> String {
        format!("CAST({col} AS SIGNED)")
    }
    fn ident(name: &str) -> String {
        format!("`{name}`")
    }
    /// Read through a derived table (`own`) whose `DISTINCT` keeps it from being merged into
    /// the statement, so that MySQL materializes it before the UPDATE writes: its documented
    /// way past error 1093. (What `own` reads, `own_rows`, may be merged into `own`.)
    fn own_table(select: &str) -> String {
        format!(
            "SELECT own.id FROM (SELECT DISTINCT own_rows.id FROM ({select}) AS own_rows) AS own"
        )
    }
    /// `ON DUPLICATE KEY UPDATE`: `target` is not named (every unique key of the table
    /// counts: `upsert` is used where there is one), `excluded.x` is `VALUES(x)`, and the
    /// assignments run left to right, each seeing the ones before.
    fn upsert(_target: &str, set: &str) -> String {
        let mut out = String::from("ON DUPLICATE KEY UPDATE ");
        let mut rest = set;
        while let Some(i) = rest.find("excluded.") {
            out.push_str(&rest[..i]);
            rest = &rest[i + "excluded.".len()..];
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            out.push_str(&format!("VALUES({})", &rest[..end]));
            rest = &rest[end..];
        }
        out.push_str(rest);
        out
    }
    /// The table's name qualifies `id`: in `INSERT … SELECT`, a bare `id` is ambiguous
    /// whenever the SELECT reads an `id` too (error 1052).
    fn do_nothing(table: &str, _target: &str) -> String {
        format!("ON DUPLICATE KEY UPDATE {table}.id = {table}.id")
    }
    /// Not used: `Backend::claim_events` claims in two statements (no `UPDATE … RETURNING`).
    fn claim_events_sql(_due: &str) -> String {
        String::new()
    }
}

/// The session every connection runs: READ COMMITTED (a locking read sees the latest
/// committed row, as on PostgreSQL, and takes no gap locks), and strict mode, so that an
/// amount out of `DECIMAL(65,0)`'s range is an error, never clamped.
const SESSION: &str = "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED; \
     SET SESSION sql_mode = CONCAT(@@SESSION.sql_mode, ',STRICT_ALL_TABLES')";

fn options(url: &str) -> Result<MySqlConnectOptions, StoreError> {
    // sqlx sets time_zone '+00:00', utf8mb4 and PIPES_AS_CONCAT (`||` concatenates).
    MySqlConnectOptions::from_str(url).map_err(|e| connect_error(url, e))
}

pub(super) async fn connect(url: &str, max_connections: u32) -> Result<MySqlPool, StoreError> {
    MySqlPoolOptions::new()
        .max_connections(max_connections.max(1))
        .acquire_timeout(Duration::from_secs(10))
        .test_before_acquire(true)
        .after_connect(|conn, _| Box::pin(async move { conn.execute(SESSION).await.map(|_| ()) }))
        .connect_with(options(url)?)
        .await
        .map_err(|e| connect_error(url, e))
}

/// A pool whose every transaction is read-only (`SET SESSION TRANSACTION READ ONLY`).
pub(super) async fn connect_read_only(url: &str, max: u32) -> Result<MySqlPool, StoreError> {
    MySqlPoolOptions::new()
        .max_connections(max)
        .acquire_timeout(Duration::from_secs(5))
        .after_connect(|conn, _| {
            Box::pin(async move {
                conn.execute("SET SESSION TRANSACTION READ ONLY")
                    .await
                    .map(|_| ())
            })
        })
        .connect_with(options(url)?)
        .await
        .map_err(|e| connect_error(url, e))
}

/// A bound RFC 3339 time as a `DATETIME(6)` (strict mode refuses the `Z`).
pub(super) const TS: &str = "CAST(TRIM(TRAILING 'Z' FROM ?) AS DATETIME(6))";
