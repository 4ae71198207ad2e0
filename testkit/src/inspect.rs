//! Read-back for tests and benchmarks: one order, the audit trail, the findings, a run row,
//! table counts, stored webhook deliveries. An extension of the product's `Store`
//! (`use payrecon_testkit::inspect::Inspect`), querying its pools directly: nothing here
//! writes, and nothing here is counted as the product's statements.

use std::future::Future;

use payrecon::domain::State;
use payrecon::store::{FindingRow, Store, StoreError};
use sqlx::Row;
/// An order as stored, payment columns included (amounts as decimal strings).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderSnapshot {
    pub id: i64,
    pub order_ref: String,
    pub state: State,
    pub tx_hash: Option<String>,
    pub log_index: Option<i64>,
    pub amount_paid: Option<String>,
    pub block_number: Option<i64>,
    pub block_hash: Option<String>,
}

/// One row of `payrecon_transitions`, with the order's `order_ref`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransitionRow {
    pub order_ref: String,
    pub from_state: State,
    pub to_state: State,
    pub source: String,
    pub provider: String,
    pub run_id: Option<String>,
}

/// One row of `payrecon_runs` (timestamps as the backend spells them in text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunSnapshot {
    pub id: String,
    pub trigger: String,
    pub status: String,
    pub finished_at: Option<String>,
    pub checked: i64,
    pub gaps: i64,
    pub applied: i64,
    pub resends_requested: i64,
    pub error: Option<String>,
}

/// Tables `count` may name.
const TABLES: [&str; 9] = [
    "payrecon_events",
    "payrecon_payments",
    "orders",
    "payrecon_transitions",
    "payrecon_findings",
    "payrecon_runs",
    "payrecon_resends",
    "payrecon_webhook_events",
    "payrecon_leases",
];

fn db_error(what: &str, source: sqlx::Error) -> StoreError {
    StoreError::Query {
        what: what.to_string(),
        source,
    }
}

fn state_of(s: &str) -> Result<State, StoreError> {
    State::parse(s).map_err(|e| StoreError::Invalid(format!("read a state: {e}")))
}

/// Runs a query on any backend; `$sql` uses `$1`-style placeholders, which SQLite reads as
/// numbered parameters too, and is respelled for MariaDB/MySQL (`mysql_sql`).
macro_rules! fetch_all {
    ($store:expr, $sql:expr, $doing:expr $(, $bind:expr)*) => {{
        let sql: &str = &$sql;
        let rows: Result<Vec<Vec<RowValue>>, sqlx::Error> = match $store {
            Store::Sqlite(p) => sqlx::query(sql)$(.bind($bind))*.fetch_all(p).await
                .map(|rs| rs.iter().map(|r| row_values(r)).collect()),
            Store::Postgres(p) => sqlx::query(sql)$(.bind($bind))*.fetch_all(p).await
                .map(|rs| rs.iter().map(|r| row_values(r)).collect()),
            Store::MySql(p) => sqlx::query(&mysql_sql(sql))$(.bind($bind))*.fetch_all(p).await
                .map(|rs| rs.iter().map(|r| row_values(r)).collect()),
        };
        rows.map_err(|e| db_error($doing, e))?
    }};
}

/// The readers' SQL in MariaDB/MySQL's spelling: `?` placeholders (each used once, in
/// order), `CAST(… AS CHAR)` and `CAST(… AS SIGNED)`, backquoted identifiers.
fn mysql_sql(sql: &str) -> String {
    let mut out = sql
        .replace("AS TEXT)", "AS CHAR)")
        .replace("AS BIGINT)", "AS SIGNED)")
        .replace('"', "`");
    for n in (1..10).rev() {
        out = out.replace(&format!("${n}"), "?");
    }
    out
}

/// `sql` (written for SQLite and PostgreSQL: `$n` placeholders, `CAST(… AS TEXT)`,
/// `CAST(… AS BIGINT)`, double-quoted identifiers) as `store`'s backend reads it.
pub fn respell(store: &Store, sql: &str) -> String {
    match store {
        Store::MySql(_) => mysql_sql(sql),
        Store::Sqlite(_) | Store::Postgres(_) => sql.to_string(),
    }
}

/// `t` as a literal (quoted) that a time column of `store`'s backend takes: RFC 3339, or
/// MariaDB/MySQL's `DATETIME` spelling in UTC (no `T`, no `Z`).
pub fn time_literal(store: &Store, t: jiff::Timestamp) -> String {
    match store {
        Store::MySql(_) => format!("'{}'", t.strftime("%Y-%m-%d %H:%M:%S%.6f")),
        Store::Sqlite(_) | Store::Postgres(_) => format!("'{t}'"),
    }
}

/// A column value: text or integer (everything here is selected as one of the two).
#[derive(Debug, Clone)]
enum RowValue {
    Text(Option<String>),
    Int(Option<i64>),
}

impl RowValue {
    fn text(&self) -> Option<String> {
        match self {
            RowValue::Text(t) => t.clone(),
            RowValue::Int(i) => i.map(|i| i.to_string()),
        }
    }
    fn int(&self) -> Option<i64> {
        match self {
            RowValue::Int(i) => *i,
            RowValue::Text(t) => t.as_deref().and_then(|t| t.parse().ok()),
        }
    }
}

fn row_values<R: Row>(r: &R) -> Vec<RowValue>
where
    usize: sqlx::ColumnIndex<R>,
    for<'a> Option<String>: sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    for<'a> Option<i64>: sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    for<'a> Option<Vec<u8>>: sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
{
    (0..r.len())
        .map(|i| match r.try_get::<Option<i64>, _>(i) {
            Ok(v) => RowValue::Int(v),
            // MariaDB/MySQL hand `_bin` columns over as bytes.
            Err(_) => RowValue::Text(r.try_get::<Option<String>, _>(i).ok().flatten().or_else(
                || {
                    r.try_get::<Option<Vec<u8>>, _>(i)
                        .ok()
                        .flatten()
                        .and_then(|b| String::from_utf8(b).ok())
                },
            )),
        })
        .collect()
}

/// The readers, on the product's `Store`.
pub trait Inspect {
    /// One order by its ref, payment columns included.
    fn order_by_ref(
        &self,
        order_ref: &str,
    ) -> impl Future<Output = Result<Option<OrderSnapshot>, StoreError>> + Send;
    /// The audit trail, oldest first.
    fn transitions(&self) -> impl Future<Output = Result<Vec<TransitionRow>, StoreError>> + Send;
    /// Rows in one of payrecon's tables (or `orders`); other names are refused.
    fn count(&self, table: &str) -> impl Future<Output = Result<i64, StoreError>> + Send;
    /// Every finding, oldest first.
    fn findings(&self) -> impl Future<Output = Result<Vec<FindingRow>, StoreError>> + Send;
    /// One run row, or None.
    fn run_by_id(
        &self,
        run_id: &str,
    ) -> impl Future<Output = Result<Option<RunSnapshot>, StoreError>> + Send;
    /// Any query's rows, each column as text (`None` for NULL), on any backend: write it with
    /// `CAST(… AS TEXT)` and `CAST(… AS BIGINT)` (respelled for MariaDB/MySQL), no bool
    /// columns, no placeholders.
    fn rows(
        &self,
        sql: &str,
    ) -> impl Future<Output = Result<Vec<Vec<Option<String>>>, StoreError>> + Send;
    /// Stored webhook deliveries of `provider`, processed or not.
    fn webhook_delivery_count(
        &self,
        provider: &str,
    ) -> impl Future<Output = Result<i64, StoreError>> + Send;
}

impl Inspect for Store {
    async fn order_by_ref(&self, order_ref: &str) -> Result<Option<OrderSnapshot>, StoreError> {
        let rows = fetch_all!(
            self,
            "SELECT id, order_ref, state, tx_hash, log_index, CAST(amount_paid AS TEXT), \
             block_number, block_hash FROM orders WHERE order_ref = $1",
            "read an order",
            order_ref
        );
        let Some(r) = rows.first() else {
            return Ok(None);
        };
        Ok(Some(OrderSnapshot {
            id: r[0].int().unwrap_or_default(),
            order_ref: r[1].text().unwrap_or_default(),
            state: state_of(&r[2].text().unwrap_or_default())?,
            tx_hash: r[3].text(),
            log_index: r[4].int(),
            amount_paid: r[5].text(),
            block_number: r[6].int(),
            block_hash: r[7].text(),
        }))
    }

    async fn transitions(&self) -> Result<Vec<TransitionRow>, StoreError> {
        let sql = "SELECT o.order_ref, t.from_state, t.to_state, t.source, t.provider, t.run_id \
                   FROM payrecon_transitions t JOIN orders o ON o.id = t.order_id ORDER BY t.id";
        let rows = fetch_all!(self, sql, "read the transitions");
        rows.iter()
            .map(|r| {
                Ok(TransitionRow {
                    order_ref: r[0].text().unwrap_or_default(),
                    from_state: state_of(&r[1].text().unwrap_or_default())?,
                    to_state: state_of(&r[2].text().unwrap_or_default())?,
                    source: r[3].text().unwrap_or_default(),
                    provider: r[4].text().unwrap_or_default(),
                    run_id: r[5].text(),
                })
            })
            .collect()
    }

    async fn count(&self, table: &str) -> Result<i64, StoreError> {
        let Some(table) = TABLES.iter().find(|t| **t == table) else {
            return Err(StoreError::Invalid(format!(
                "count rows: unknown table {table:?}"
            )));
        };
        let sql = format!("SELECT COUNT(*) FROM {table}");
        let rows = fetch_all!(self, sql, "count rows");
        Ok(rows.first().and_then(|r| r[0].int()).unwrap_or_default())
    }

    async fn findings(&self) -> Result<Vec<FindingRow>, StoreError> {
        let sql = "SELECT provider, kind, chain, tx_hash, log_index, order_ref, local_state, \
                   observed_state, action, detail FROM payrecon_findings ORDER BY id";
        let rows = fetch_all!(self, sql, "read the findings");
        Ok(rows
            .iter()
            .map(|r| FindingRow {
                provider: r[0].text().unwrap_or_default(),
                kind: r[1].text().unwrap_or_default(),
                chain: r[2].text().unwrap_or_default(),
                tx_hash: r[3].text(),
                log_index: r[4].int(),
                order_ref: r[5].text(),
                local_state: r[6].text(),
                observed_state: r[7].text(),
                action: r[8].text().unwrap_or_default(),
                detail: r[9].text().unwrap_or_default(),
                amount: None,
                asset: None,
                address: None,
            })
            .collect())
    }

    async fn run_by_id(&self, run_id: &str) -> Result<Option<RunSnapshot>, StoreError> {
        let rows = fetch_all!(
            self,
            "SELECT id, \"trigger\", status, CAST(finished_at AS TEXT), checked, gaps, applied, \
             resends_requested, error FROM payrecon_runs WHERE id = $1",
            "read a run",
            run_id
        );
        Ok(rows.first().map(|r| RunSnapshot {
            id: r[0].text().unwrap_or_default(),
            trigger: r[1].text().unwrap_or_default(),
            status: r[2].text().unwrap_or_default(),
            finished_at: r[3].text(),
            checked: r[4].int().unwrap_or_default(),
            gaps: r[5].int().unwrap_or_default(),
            applied: r[6].int().unwrap_or_default(),
            resends_requested: r[7].int().unwrap_or_default(),
            error: r[8].text(),
        }))
    }

    async fn rows(&self, sql: &str) -> Result<Vec<Vec<Option<String>>>, StoreError> {
        let rows = fetch_all!(self, *sql, "read rows");
        Ok(rows
            .iter()
            .map(|r| r.iter().map(RowValue::text).collect())
            .collect())
    }

    async fn webhook_delivery_count(&self, provider: &str) -> Result<i64, StoreError> {
        let rows = fetch_all!(
            self,
            "SELECT COUNT(*) FROM payrecon_webhook_events WHERE provider = $1",
            "count webhook deliveries",
            provider
        );
        Ok(rows.first().and_then(|r| r[0].int()).unwrap_or_default())
    }
}
