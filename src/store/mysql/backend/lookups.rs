//! The statements of MariaDB/MySQL's `Backend` too long to stand in its `impl`: orders by
//! payment key and by `(chain, pay_to, asset)` slot, lists bound as one `JSON_TABLE`, and one
//! attempt at registering a batch of orders.

use std::collections::HashSet;

use serde_json::json;
use sqlx::{MySql, MySqlPool};

use super::super::mysql_ts;
use crate::domain::ExpectedOrder;
use crate::domain::{LedgerRow, PaymentKey};
use crate::store::dialect::Dialect;
use crate::store::rows::ViewRow;
use crate::store::rows::{counted, db_error, decode_row, valid_rows};
use crate::store::StoreError;

const ROW_COLUMNS: &str = <MySql as Dialect>::ROW_COLUMNS;

/// A JSON array of `[chain, tx_hash, log_index]` as rows `k`.
pub(super) const KEYS: &str = "JSON_TABLE(?, '$[*]' COLUMNS (\
     chain VARCHAR(64) CHARACTER SET ascii PATH '$[0]', \
     tx_hash VARCHAR(128) CHARACTER SET ascii PATH '$[1]', \
     log_index BIGINT PATH '$[2]')) k";

pub(super) fn keys_json(keys: &[PaymentKey]) -> String {
    let items: Vec<_> = keys
        .iter()
        .map(|k| json!([k.chain, k.tx_hash.as_str(), k.log_index]))
        .collect();
    serde_json::Value::Array(items).to_string()
}

/// Orders by payment key: the order whose key it is, or the order it was credited to; the row
/// columns, then the matched key (`KEYS` bound twice, once per branch).
pub(super) fn by_key_sql() -> String {
    format!(
        "SELECT {ROW_COLUMNS}, k.tx_hash AS matched_tx_hash, k.log_index AS matched_log_index \
         FROM {KEYS} JOIN orders o \
         ON o.chain = k.chain AND o.tx_hash = k.tx_hash AND o.log_index = k.log_index \
         UNION SELECT {ROW_COLUMNS}, k.tx_hash AS matched_tx_hash, \
         k.log_index AS matched_log_index FROM {KEYS} JOIN payrecon_payments p \
         ON p.chain = k.chain AND p.tx_hash = k.tx_hash AND p.log_index = k.log_index \
         JOIN orders o ON o.id = p.order_id"
    )
}

/// `FORCE INDEX`: without it MariaDB 10.11 reads the orders through the payment key's index
/// (`tx_hash IS NULL`, estimated at one row) and examined 323 orders per slot in the
/// 20,000-record benchmark, 0.24 s a batch (docs/benchmarks.md).
pub(super) async fn unpaid_by_slot(
    pool: &MySqlPool,
    slots: &[&(String, String, String)],
) -> Result<Vec<LedgerRow>, StoreError> {
    let items: Vec<_> = slots.iter().map(|(c, p, a)| json!([c, p, a])).collect();
    let sql = format!(
        "SELECT {ROW_COLUMNS} FROM JSON_TABLE(?, '$[*]' COLUMNS (\
         chain VARCHAR(64) CHARACTER SET ascii PATH '$[0]', \
         pay_to VARCHAR(128) CHARACTER SET ascii PATH '$[1]', \
         asset VARCHAR(128) CHARACTER SET ascii PATH '$[2]')) s \
         JOIN orders o FORCE INDEX (orders_unpaid_slot) \
         ON o.chain = s.chain AND o.pay_to = s.pay_to AND o.asset = s.asset \
         WHERE o.state = 'unpaid' AND o.tx_hash IS NULL ORDER BY o.created_at, o.id"
    );
    let rows = sqlx::query(&sql)
        .bind(serde_json::Value::Array(items).to_string())
        .fetch_all(counted(pool))
        .await
        .map_err(|e| db_error("look up unpaid orders by deposit address", e))?;
    Ok(valid_rows(rows.iter().map(decode_row)))
}

/// How many times a registration batch runs when it races another for the same new refs.
pub(super) const REGISTER_ATTEMPTS: u32 = 5;

pub(super) async fn register_once(
    pool: &MySqlPool,
    batch: &[ExpectedOrder],
) -> Result<(Vec<String>, Vec<ViewRow>), sqlx::Error> {
    let mut tx = counted(pool).begin().await?;
    let mut qb = sqlx::QueryBuilder::<MySql>::new(
        "SELECT CAST(order_ref AS CHAR) FROM orders WHERE order_ref IN (",
    );
    let mut refs = qb.separated(", ");
    for o in batch {
        refs.push_bind(o.order_ref.as_str());
    }
    qb.push(")");
    let taken: HashSet<String> = qb
        .build_query_scalar()
        .fetch_all(counted(&mut *tx))
        .await?
        .into_iter()
        .collect();
    let mut fresh = HashSet::new();
    let new: Vec<&ExpectedOrder> = batch
        .iter()
        .filter(|o| !taken.contains(&o.order_ref) && fresh.insert(o.order_ref.as_str()))
        .collect();
    if !new.is_empty() {
        let mut qb = sqlx::QueryBuilder::<MySql>::new(
            "INSERT INTO orders (order_ref, chain, pay_to, asset, amount_due, expires_at, reference) ",
        );
        qb.push_values(&new, |mut b, o| {
            b.push_bind(o.order_ref.as_str())
                .push_bind(o.chain.as_str())
                .push_bind(o.pay_to.as_str())
                .push_bind(o.asset.as_str())
                .push_bind(o.amount_due.to_string())
                .push_bind(o.expires_at.map(mysql_ts))
                .push_bind(o.reference.as_deref());
        });
        qb.build().execute(counted(&mut *tx)).await?;
    }
    let rows = <MySql as crate::store::pool_sql::PoolSql>::read_views(&mut tx, batch).await?;
    counted(tx).commit().await?;
    Ok((new.iter().map(|o| o.order_ref.clone()).collect(), rows))
}
