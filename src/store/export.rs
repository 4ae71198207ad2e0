//! The payments `payrecon export` writes (README.md, "Exceptions and the export for finance"):
//! one row per credited payment whose block time lies in the window, streamed from one cursor
//! (never collected), ordered by `(block_time, chain, tx_hash, log_index)`. A payment whose
//! block time was never read (EVM transfers to orders that do not expire) is placed by its
//! credit time instead.

use futures::TryStreamExt;
use jiff::Timestamp;

use super::rows::{db_error, on_pool, pg_ms, sqlite_ms, sqlite_ts};
use super::{Store, StoreError};

/// One credited payment with its order, as the export reads it (amounts in base units).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportRow {
    pub order_ref: String,
    pub chain: String,
    pub asset: String,
    pub amount: String,
    pub tx_hash: String,
    pub log_index: i64,
    pub block_number: Option<i64>,
    pub block_time: Option<Timestamp>,
    pub state: String,
    pub credited_at: Option<Timestamp>,
    pub source: String,
    pub provider: Option<String>,
    pub order_state: String,
    pub amount_due: String,
    pub amount_paid: Option<String>,
    /// `kind/status` of the payment's latest exception, if any.
    pub exception: Option<String>,
}

type Row = (
    String,
    String,
    String,
    String,
    String,
    i64,
    Option<i64>,
    Option<i64>,
    String,
    Option<i64>,
    String,
    Option<String>,
    String,
    String,
    Option<String>,
    Option<String>,
);

fn at(ms: Option<i64>) -> Option<Timestamp> {
    ms.and_then(|m| Timestamp::from_millisecond(m).ok())
}

impl Store {
    /// Calls `write` with each payment in `[since, until)`, in order, one at a time; stops at
    /// the first error `write` returns (`Invalid`, with its text).
    pub async fn export_payments(
        &self,
        since: Timestamp,
        until: Timestamp,
        mut write: impl FnMut(ExportRow) -> std::io::Result<()>,
    ) -> Result<u64, StoreError> {
        let pg = matches!(self, Store::Postgres(_));
        let (ms, p1, p2): (fn(&str) -> String, &str, &str) = if pg {
            (pg_ms, "$1::timestamptz", "$2::timestamptz")
        } else {
            (sqlite_ms, "?1", "?2")
        };
        let int = |c: &str| {
            if pg {
                format!("{c}::bigint")
            } else {
                c.to_string()
            }
        };
        let txt = |c: &str| {
            if pg {
                format!("{c}::text")
            } else {
                format!("CAST({c} AS TEXT)")
            }
        };
        let sql = format!(
            "SELECT o.order_ref, p.chain, o.asset, {amount}, p.tx_hash, {log}, {block}, \
             {bt}, p.state, {created}, p.source, p.provider, o.state, {due}, {paid}, \
             (SELECT x.kind || '/' || x.status FROM payrecon_exceptions x \
              WHERE x.chain = p.chain AND x.tx_hash = p.tx_hash \
              AND (x.log_index = p.log_index OR x.log_index IS NULL) ORDER BY x.id DESC LIMIT 1) \
             FROM payrecon_payments p JOIN orders o ON o.id = p.order_id \
             WHERE COALESCE(p.block_time, p.created_at) >= {p1} \
             AND COALESCE(p.block_time, p.created_at) < {p2} \
             ORDER BY COALESCE(p.block_time, p.created_at), p.chain, p.tx_hash, p.log_index",
            amount = txt("p.amount"),
            due = txt("o.amount_due"),
            paid = txt("o.amount_paid"),
            log = int("p.log_index"),
            block = int("p.block_number"),
            bt = ms("p.block_time"),
            created = ms("p.created_at"),
        );
        let mut n = 0u64;
        let mut failed: Option<std::io::Error> = None;
        let res: Result<(), sqlx::Error> = on_pool!(self, p => {
            let mut rows = sqlx::query_as::<_, Row>(&sql)
                .bind(sqlite_ts(since))
                .bind(sqlite_ts(until))
                .fetch(p);
            loop {
                match rows.try_next().await {
                    Ok(Some(r)) => {
                        if let Err(e) = write(ExportRow {
                            order_ref: r.0,
                            chain: r.1,
                            asset: r.2,
                            amount: r.3,
                            tx_hash: r.4,
                            log_index: r.5,
                            block_number: r.6,
                            block_time: at(r.7),
                            state: r.8,
                            credited_at: at(r.9),
                            source: r.10,
                            provider: r.11,
                            order_state: r.12,
                            amount_due: r.13,
                            amount_paid: r.14,
                            exception: r.15,
                        }) {
                            failed = Some(e);
                            break Ok(());
                        }
                        n += 1;
                    }
                    Ok(None) => break Ok(()),
                    Err(e) => break Err(e),
                }
            }
        });
        res.map_err(|e| db_error("read the payments to export", e))?;
        match failed {
            Some(e) => Err(StoreError::Invalid(format!("write the export: {e}"))),
            None => Ok(n),
        }
    }
}
