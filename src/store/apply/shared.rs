//! Statements every backend sends alike, as generic functions: a trait with one blanket impl
//! that carries sqlx's bounds once (`ApplySql: SharedSql`, so a generic caller needs none of
//! them), its bodies spelled with the `Dialect`'s placeholders.

use sqlx::{Database, Decode, Encode, Executor, IntoArguments, Transaction, Type};

use crate::store::dialect::Dialect;
use crate::store::rows::counted;

/// What every backend reads alike inside a write batch.
pub(in crate::store) trait SharedSql: Dialect {
    /// Whether a payment row, or an order, holds this key already (read after a credit that
    /// wrote nothing, to tell a duplicate from an order that changed since it was planned).
    async fn key_taken(
        sp: &mut Transaction<'_, Self>,
        key: &crate::domain::PaymentKey,
    ) -> Result<bool, sqlx::Error>;
    /// The order's stored state, read after a miss.
    async fn state_of(
        tx: &mut Transaction<'_, Self>,
        order_id: i64,
    ) -> Result<Option<String>, sqlx::Error>;
}

impl<DB> SharedSql for DB
where
    DB: Dialect,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> <DB as Database>::Arguments<'q>: IntoArguments<'q, DB>,
    for<'q> i64: Encode<'q, DB> + Type<DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> &'q String: Encode<'q, DB> + Type<DB>,
    for<'r> i64: Decode<'r, DB>,
    for<'r> String: Decode<'r, DB> + Type<DB>,
    usize: sqlx::ColumnIndex<DB::Row>,
{
    async fn key_taken(
        sp: &mut Transaction<'_, DB>,
        key: &crate::domain::PaymentKey,
    ) -> Result<bool, sqlx::Error> {
        let p = DB::p;
        let sql = format!(
            "SELECT COUNT(*) FROM (SELECT 1 AS x FROM payrecon_payments WHERE chain = {} \
             AND tx_hash = {} AND log_index = {} UNION ALL SELECT 1 FROM orders \
             WHERE chain = {} AND tx_hash = {} AND log_index = {}) k",
            p(1),
            p(2),
            p(3),
            p(4),
            p(5),
            p(6)
        );
        // Each placeholder once, in order (MariaDB/MySQL's `?` are positional).
        sqlx::query_scalar::<_, i64>(&sql)
            .bind(&key.chain)
            .bind(key.tx_hash.as_str())
            .bind(key.log_index)
            .bind(&key.chain)
            .bind(key.tx_hash.as_str())
            .bind(key.log_index)
            .fetch_one(counted(&mut **sp))
            .await
            .map(|n| n > 0)
    }

    async fn state_of(
        tx: &mut Transaction<'_, DB>,
        order_id: i64,
    ) -> Result<Option<String>, sqlx::Error> {
        let sql = format!("SELECT state FROM orders WHERE id = {}", DB::p(1));
        sqlx::query_scalar(&sql)
            .bind(order_id)
            .fetch_optional(counted(&mut **tx))
            .await
    }
}
