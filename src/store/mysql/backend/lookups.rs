//! MariaDB/MySQL's lookups of many keys at once: having no array parameter, it takes a list as
//! one JSON document read by `JSON_TABLE` (orders by payment key, unpaid orders by `(chain,
//! pay_to, asset)` slot).

use serde_json::json;
use sqlx::{MySql, MySqlPool};

use crate::domain::{LedgerRow, PaymentKey};
use crate::store::dialect::Dialect;
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
