//! Keyset pages of one chain's unpaid orders without a payment key (the deposit scan).

use super::backend::dispatch;
use super::rows::{counted, db_error, decode_row, valid_rows};
use super::{Store, StoreError};
use crate::domain::LedgerRow;

impl Store {
    /// Unpaid orders on `chain` with no payment key, `id > after_id`, by id, at most `limit`.
    /// Returns the readable rows and the last id read (`None`: the end).
    pub async fn unpaid_page(
        &self,
        chain: &str,
        after_id: i64,
        limit: i64,
    ) -> Result<(Vec<LedgerRow>, Option<i64>), StoreError> {
        dispatch!(self, pool => {
            let sql = format!(
                "SELECT {} FROM orders o WHERE o.chain = {} AND o.id > {} \
                 AND o.state = 'unpaid' AND o.tx_hash IS NULL ORDER BY o.id LIMIT {}",
                D::ROW_COLUMNS, D::p(1), D::p(2), D::p(3)
            );
            let rows = sqlx::query(&sql)
                .bind(chain)
                .bind(after_id)
                .bind(limit)
                .fetch_all(counted(pool))
                .await
                .map_err(|e| db_error("read unpaid orders", e))?;
            let last = rows
                .last()
                .and_then(|r| sqlx::Row::try_get::<i64, _>(r, "id").ok());
            Ok((valid_rows(rows.iter().map(decode_row)), last))
        })
    }
}
