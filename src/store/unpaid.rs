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

    /// The Solana Pay references (docs/configuration.md, "Solana") of the unpaid orders without
    /// a payment key on `chain` whose ids are in `(after_id, last_id]` (a page of
    /// `unpaid_page`): `(order_ref, reference, pay_to)`, one statement per page.
    pub async fn unpaid_references(
        &self,
        chain: &str,
        after_id: i64,
        last_id: i64,
    ) -> Result<Vec<(String, String, String)>, StoreError> {
        dispatch!(self, pool => {
            let sql = format!(
                "SELECT {} AS order_ref, {} AS reference, o.pay_to FROM orders o WHERE o.chain = {} \
                 AND o.id > {} AND o.id <= {} AND o.state = 'unpaid' AND o.tx_hash IS NULL \
                 AND o.reference IS NOT NULL ORDER BY o.id",
                D::exact_text("o.order_ref"), D::exact_text("o.reference"),
                D::p(1), D::p(2), D::p(3)
            );
            sqlx::query_as(&sql)
                .bind(chain)
                .bind(after_id)
                .bind(last_id)
                .fetch_all(counted(pool))
                .await
                .map_err(|e| db_error("read unpaid orders' references", e))
        })
    }
}
