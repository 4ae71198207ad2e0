//! Orders by the merchant's `order_ref` (records that name an order), and attaching a payment
//! key to an order whose state is already where the chain puts it (an order advanced from a
//! provider's status before its transaction was known): no transition, no audit row.

use serde_json::json;
use sqlx::{PgPool, Postgres, SqlitePool, Transaction};

use super::apply::bind_attach;
use super::rows::{
    counted, db_error, decode_raw_row, valid_rows, LOOKUP_CHUNK, PG_ROW_COLUMNS, SQLITE_ROW_COLUMNS,
};
use super::{is_unique_violation, ApplyOutcome, Store, StoreError};
use crate::domain::{Attach, LedgerRow};

impl Store {
    /// The orders with any of these `order_ref`s (one query per chunk).
    pub async fn orders_by_ref(&self, refs: &[String]) -> Result<Vec<LedgerRow>, StoreError> {
        let mut out = Vec::new();
        for chunk in refs.chunks(LOOKUP_CHUNK) {
            match self {
                Store::Sqlite(p) => out.extend(sqlite_by_ref(p, chunk).await?),
                Store::Postgres(p) => out.extend(pg_by_ref(p, chunk).await?),
            }
        }
        let mut rows: Vec<&mut LedgerRow> = out.iter_mut().collect();
        super::payments::load_credits(self, &mut rows).await?;
        Ok(out)
    }
}

async fn sqlite_by_ref(pool: &SqlitePool, refs: &[String]) -> Result<Vec<LedgerRow>, StoreError> {
    let sql = format!(
        "SELECT {SQLITE_ROW_COLUMNS} FROM orders o \
         WHERE o.order_ref IN (SELECT value FROM json_each(?1)) ORDER BY o.id"
    );
    let rows = sqlx::query(&sql)
        .bind(json!(refs).to_string())
        .fetch_all(counted(pool))
        .await
        .map_err(|e| db_error("look up orders by order_ref", e))?;
    Ok(valid_rows(rows.iter().map(|r| decode_raw_row!(r))))
}

async fn pg_by_ref(pool: &PgPool, refs: &[String]) -> Result<Vec<LedgerRow>, StoreError> {
    let sql =
        format!("SELECT {PG_ROW_COLUMNS} FROM orders o WHERE o.order_ref = ANY($1) ORDER BY o.id");
    let rows = sqlx::query(&sql)
        .bind(refs)
        .fetch_all(counted(pool))
        .await
        .map_err(|e| db_error("look up orders by order_ref", e))?;
    Ok(valid_rows(rows.iter().map(|r| decode_raw_row!(r))))
}

/// Writes the payment columns of an order that has none (or its own key again, with the
/// chain's amount and block), when no other order holds the key.
pub(super) async fn sqlite_attach_only(
    tx: &mut Transaction<'_, sqlx::Sqlite>,
    order_id: i64,
    a: &Attach,
) -> Result<ApplyOutcome, sqlx::Error> {
    let q = sqlx::query(
        "UPDATE orders SET tx_hash = ?2, log_index = ?3, amount_paid = ?4, block_number = ?5, \
         block_hash = ?6 WHERE id = ?1 AND chain = ?7 \
         AND (tx_hash IS NULL OR (tx_hash = ?2 AND log_index = ?3)) \
         AND NOT EXISTS (SELECT 1 FROM orders o2 WHERE o2.chain = ?7 \
         AND o2.tx_hash = ?2 AND o2.log_index = ?3 AND o2.id <> ?1)",
    )
    .bind(order_id);
    let res = bind_attach!(q, a).execute(counted(&mut **tx)).await;
    attach_outcome(res.map(|r| r.rows_affected()))
}

pub(super) async fn pg_attach_only(
    tx: &mut Transaction<'_, Postgres>,
    order_id: i64,
    a: &Attach,
) -> Result<ApplyOutcome, sqlx::Error> {
    let q = sqlx::query(
        "UPDATE orders SET tx_hash = $2, log_index = $3, amount_paid = $4::numeric, \
         block_number = $5, block_hash = $6 WHERE id = $1 AND chain = $7 \
         AND (tx_hash IS NULL OR (tx_hash = $2 AND log_index = $3)) \
         AND NOT EXISTS (SELECT 1 FROM orders o2 WHERE o2.chain = $7 \
         AND o2.tx_hash = $2 AND o2.log_index = $3 AND o2.id <> $1)",
    )
    .bind(order_id);
    let res = bind_attach!(q, a).execute(counted(&mut **tx)).await;
    attach_outcome(res.map(|r| r.rows_affected()))
}

fn attach_outcome(res: Result<u64, sqlx::Error>) -> Result<ApplyOutcome, sqlx::Error> {
    match res {
        Ok(1) => Ok(ApplyOutcome::Attached),
        Ok(_) => Ok(ApplyOutcome::Duplicate),
        Err(e) if is_unique_violation(&e) => Ok(ApplyOutcome::Duplicate),
        Err(e) => Err(e),
    }
}
