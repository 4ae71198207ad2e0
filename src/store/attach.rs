//! Orders by the merchant's `order_ref` (records that name an order), and attaching a payment
//! key to an order whose state is already where the chain puts it (an order advanced from a
//! provider's status before its transaction was known): no transition, no audit row.

use super::backend::dispatch;
use super::dialect::Dialect;
use super::rows::{counted, db_error, decode_row, valid_rows, LOOKUP_CHUNK};
use super::{is_unique_violation, ApplyOutcome, Store, StoreError};
use crate::domain::LedgerRow;

impl Store {
    /// The orders with any of these `order_ref`s (one query per chunk).
    pub async fn orders_by_ref(&self, refs: &[String]) -> Result<Vec<LedgerRow>, StoreError> {
        let mut out = Vec::new();
        for chunk in refs.chunks(LOOKUP_CHUNK) {
            dispatch!(self, pool => {
                let sql = format!(
                    "SELECT {} FROM orders o WHERE {} ORDER BY o.id",
                    D::ROW_COLUMNS,
                    D::any("o.order_ref", 1)
                );
                let rows = sqlx::query(&sql)
                    .bind(D::texts(chunk))
                    .fetch_all(counted(pool))
                    .await
                    .map_err(|e| db_error("look up orders by order_ref", e))?;
                out.extend(valid_rows(rows.iter().map(decode_row)));
            })
        }
        let mut rows: Vec<&mut LedgerRow> = out.iter_mut().collect();
        super::payments::load_credits(self, &mut rows).await?;
        Ok(out)
    }
}

/// `SharedSql::attach_only`'s UPDATE: the payment's columns (1 tx hash, 2 log index, 3 amount, 4 block
/// number, 5 block hash), then the guards (6 order id, 7 chain, 8 tx hash, 9 log index, 10
/// chain, 11 tx hash, 12 log index, 13 order id): each placeholder once, in the order of the
/// text (MariaDB/MySQL's `?` are positional).
pub(super) fn attach_only_sql<D: Dialect>() -> String {
    let p = D::p;
    format!(
        "UPDATE orders SET tx_hash = {}, log_index = {}, amount_paid = {}, \
         block_number = {}, block_hash = {} WHERE id = {} AND chain = {} \
         AND (tx_hash IS NULL OR (tx_hash = {} AND log_index = {})) \
         AND {}",
        p(1),
        p(2),
        D::amount(3),
        p(4),
        p(5),
        p(6),
        p(7),
        p(8),
        p(9),
        D::key_free(10),
    )
}

pub(super) fn attach_outcome(res: Result<u64, sqlx::Error>) -> Result<ApplyOutcome, sqlx::Error> {
    match res {
        Ok(1) => Ok(ApplyOutcome::Attached),
        Ok(_) => Ok(ApplyOutcome::Duplicate),
        Err(e) if is_unique_violation(&e) => Ok(ApplyOutcome::Duplicate),
        Err(e) => Err(e),
    }
}
