//! The payments `payrecon export` writes (README.md, "Exceptions and the export for finance"):
//! one row per credited payment whose block time lies in the window, streamed from one cursor
//! (never collected), ordered by `(block_time, chain, tx_hash, log_index)`. A payment whose
//! block time was never read (EVM transfers to orders that do not expire) is placed by its
//! credit time instead.

use futures::TryStreamExt;
use jiff::Timestamp;

use super::backend::dispatch;
use super::dialect::Dialect;
use super::rows::{db_error, ms_time, sqlite_ts};
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

from_row! {
    /// A row of the export's query, times in milliseconds.
    struct RawExport {
        order_ref: String,
        chain: String,
        asset: String,
        amount: String,
        tx_hash: String,
        log_index: i64,
        block_number: Option<i64>,
        block_ms: Option<i64>,
        state: String,
        credited_ms: Option<i64>,
        source: String,
        provider: Option<String>,
        order_state: String,
        amount_due: String,
        amount_paid: Option<String>,
        exception: Option<String>,
    }
}

impl From<RawExport> for ExportRow {
    fn from(r: RawExport) -> ExportRow {
        ExportRow {
            order_ref: r.order_ref,
            chain: r.chain,
            asset: r.asset,
            amount: r.amount,
            tx_hash: r.tx_hash,
            log_index: r.log_index,
            block_number: r.block_number,
            block_time: ms_time(r.block_ms),
            state: r.state,
            credited_at: ms_time(r.credited_ms),
            source: r.source,
            provider: r.provider,
            order_state: r.order_state,
            amount_due: r.amount_due,
            amount_paid: r.amount_paid,
            exception: r.exception,
        }
    }
}

/// The export's query: the payments whose block time (or credit time) is in `[$1, $2)`.
fn export_sql<D: Dialect>() -> String {
    format!(
        "SELECT {order_ref} AS order_ref, p.chain, o.asset, {amount} AS amount, p.tx_hash, \
         {log} AS log_index, {block} AS block_number, {bt} AS block_ms, p.state, \
         {created} AS credited_ms, p.source, p.provider, o.state AS order_state, \
         {due} AS amount_due, {paid} AS amount_paid, \
         (SELECT x.kind || '/' || x.status FROM payrecon_exceptions x \
          WHERE x.chain = p.chain AND x.tx_hash = p.tx_hash \
          AND (x.log_index = p.log_index OR x.log_index IS NULL) ORDER BY x.id DESC LIMIT 1) \
          AS exception \
         FROM payrecon_payments p JOIN orders o ON o.id = p.order_id \
         WHERE COALESCE(p.block_time, p.created_at) >= {p1} \
         AND COALESCE(p.block_time, p.created_at) < {p2} \
         ORDER BY COALESCE(p.block_time, p.created_at), p.chain, p.tx_hash, p.log_index",
        order_ref = D::exact_text("o.order_ref"),
        amount = D::amount_text("p.amount"),
        due = D::amount_text("o.amount_due"),
        paid = D::amount_text("o.amount_paid"),
        log = D::int8("p.log_index"),
        block = D::int8("p.block_number"),
        bt = D::ms("p.block_time"),
        created = D::ms("p.created_at"),
        p1 = D::ts(1),
        p2 = D::ts(2),
    )
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
        let mut n = 0u64;
        let mut failed: Option<std::io::Error> = None;
        let res: Result<(), sqlx::Error> = dispatch!(self, p => {
            let sql = export_sql::<D>();
            let mut rows = sqlx::query_as::<_, RawExport>(&sql)
                .bind(sqlite_ts(since))
                .bind(sqlite_ts(until))
                .fetch(p);
            loop {
                match rows.try_next().await {
                    Ok(Some(r)) => {
                        if let Err(e) = write(ExportRow::from(r)) {
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
