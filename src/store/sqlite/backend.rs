//! Sqlite's `Backend`: the operations whose statements differ in shape by backend.

use std::collections::HashSet;

use jiff::Timestamp;
use serde_json::json;
use sqlx::{Sqlite, SqlitePool};

use crate::domain::{LedgerRow, LedgerView, PaymentKey, State, TxHash};
use crate::store::backend::Backend;
use crate::store::dialect::Dialect;
use crate::store::rows::{
    counted, db_error, decode_row, rank_sql, sqlite_ts, valid_rows, LOOKUP_CHUNK,
};
use crate::store::Rekey;
use crate::store::StoreError;

const ROW_COLUMNS: &str = <Sqlite as Dialect>::ROW_COLUMNS;

fn keys_json(keys: &[PaymentKey]) -> String {
    let items: Vec<_> = keys
        .iter()
        .map(|k| json!([k.chain, k.tx_hash.as_str(), k.log_index]))
        .collect();
    serde_json::Value::Array(items).to_string()
}

const KEYS_CTE: &str = "WITH k(chain, tx_hash, log_index) AS (\
     SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]') \
     FROM json_each(?1))";

/// Orders holding any of `keys`, as their own key or as a credited payment, into `view`.
async fn rows_by_key(
    pool: &SqlitePool,
    keys: &[PaymentKey],
    view: &mut LedgerView,
) -> Result<(), StoreError> {
    let sql = format!("{KEYS_CTE} {}", by_key_sql(ROW_COLUMNS));
    let rows = sqlx::query(&sql)
        .bind(keys_json(keys))
        .fetch_all(counted(pool))
        .await
        .map_err(|e| db_error("look up orders by payment key", e))?;
    crate::store::payments::insert_by_key!(view, rows);
    Ok(())
}

async fn unpaid_by_slot(
    pool: &SqlitePool,
    slots: &[&(String, String, String)],
) -> Result<Vec<LedgerRow>, StoreError> {
    let items: Vec<_> = slots.iter().map(|(c, p, a)| json!([c, p, a])).collect();
    let sql = format!(
        "WITH s(chain, pay_to, asset) AS (\
         SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]') \
         FROM json_each(?1)) \
         SELECT {ROW_COLUMNS} FROM s CROSS JOIN orders o \
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

impl Backend for Sqlite {
    async fn migrate(pool: &SqlitePool) -> Result<(), StoreError> {
        crate::store::migrate::run(crate::store::migrate::SQLITE, pool, "SQLite").await
    }
    async fn load_view(
        pool: &SqlitePool,
        keys: &[PaymentKey],
        slots: &[&(String, String, String)],
    ) -> Result<LedgerView, StoreError> {
        let mut view = LedgerView::default();
        for chunk in keys.chunks(LOOKUP_CHUNK) {
            rows_by_key(pool, chunk, &mut view).await?;
        }
        for chunk in slots.chunks(LOOKUP_CHUNK) {
            unpaid_by_slot(pool, chunk)
                .await?
                .into_iter()
                .for_each(|r| view.insert_unpaid(r));
        }
        Ok(view)
    }
    async fn rows_by_tx(
        pool: &SqlitePool,
        txs: &[&(String, TxHash)],
    ) -> Result<Vec<LedgerRow>, StoreError> {
        let sql = format!(
            "WITH t(chain, tx_hash) AS (SELECT json_extract(value, '$[0]'), \
             json_extract(value, '$[1]') FROM json_each(?1)) \
             SELECT {ROW_COLUMNS} FROM t CROSS JOIN orders o \
             ON o.chain = t.chain AND o.tx_hash = t.tx_hash ORDER BY o.id"
        );
        let mut out = Vec::new();
        for chunk in txs.chunks(LOOKUP_CHUNK) {
            let items: Vec<_> = chunk.iter().map(|(c, t)| json!([c, t.as_str()])).collect();
            let rows = sqlx::query(&sql)
                .bind(serde_json::Value::Array(items).to_string())
                .fetch_all(pool)
                .await
                .map_err(|e| db_error("look up orders by transaction", e))?;
            out.extend(valid_rows(rows.iter().map(decode_row)));
        }
        Ok(out)
    }
    async fn attached_keys(
        pool: &SqlitePool,
        keys: &[PaymentKey],
    ) -> Result<HashSet<(String, String, i64)>, StoreError> {
        let mut found = HashSet::new();
        let sql = format!(
            "{KEYS_CTE} SELECT o.chain, o.tx_hash, o.log_index FROM k CROSS JOIN orders o \
             ON o.chain = k.chain AND o.tx_hash = k.tx_hash AND o.log_index = k.log_index \
             UNION SELECT p.chain, p.tx_hash, p.log_index FROM k CROSS JOIN payrecon_payments p \
             ON p.chain = k.chain AND p.tx_hash = k.tx_hash AND p.log_index = k.log_index"
        );
        for chunk in keys.chunks(LOOKUP_CHUNK) {
            let rows: Vec<(String, String, i64)> = sqlx::query_as(&sql)
                .bind(keys_json(chunk))
                .fetch_all(counted(pool))
                .await
                .map_err(|e| db_error("look up attached payment keys", e))?;
            found.extend(rows);
        }
        Ok(found)
    }

    /// The pool runs `synchronous = NORMAL` (WAL), where a commit may be lost to a power cut:
    /// an acknowledged delivery must not be, so this one commit runs with `FULL` (the WAL is
    /// synced before it returns) and the connection goes back to `NORMAL` afterwards.
    async fn insert_webhook_delivery(
        pool: &SqlitePool,
        provider: &str,
        event_id: &str,
        body: &str,
        at: Timestamp,
    ) -> Result<Option<i64>, StoreError> {
        const DOING: &str = "store a webhook event";
        let mut conn = pool.acquire().await.map_err(|e| db_error(DOING, e))?;
        sqlx::query("PRAGMA synchronous = FULL")
            .execute(counted(&mut *conn))
            .await
            .map_err(|e| db_error(DOING, e))?;
        let inserted = sqlx::query_scalar(
            "INSERT INTO payrecon_webhook_events (provider, event_id, body, received_at) \
             VALUES (?1, ?2, ?3, ?4) ON CONFLICT (provider, event_id) DO NOTHING RETURNING id",
        )
        .bind(provider)
        .bind(event_id)
        .bind(body)
        .bind(sqlite_ts(at))
        .fetch_optional(counted(&mut *conn))
        .await;
        let reset = sqlx::query("PRAGMA synchronous = NORMAL")
            .execute(counted(&mut *conn))
            .await;
        if reset.is_err() {
            // Do not hand a connection in an unknown mode back to the pool.
            conn.detach();
        }
        inserted.map_err(|e| db_error(DOING, e))
    }
    async fn advance_payment_states(
        pool: &SqlitePool,
        moves: &[(i64, State)],
        now: &str,
    ) -> Result<u64, sqlx::Error> {
        let v: Vec<serde_json::Value> = moves
            .iter()
            .map(|(id, s)| json!([id, s.as_str(), s.rank()]))
            .collect();
        let sql = format!(
            "UPDATE payrecon_payments SET state = json_extract(v.value, '$[1]'), \
             state_changed_at = ?2 FROM json_each(?1) v \
             WHERE payrecon_payments.id = json_extract(v.value, '$[0]') \
             AND {} < json_extract(v.value, '$[2]')",
            rank_sql("payrecon_payments.state")
        );
        sqlx::query(&sql)
            .bind(serde_json::Value::Array(v).to_string())
            .bind(now)
            .execute(counted(pool))
            .await
            .map(|r| r.rows_affected())
    }

    async fn sweep_page(
        pool: &SqlitePool,
        after_id: i64,
        limit: i64,
        recent_final: &[(String, Timestamp, Timestamp)],
    ) -> Result<(Vec<LedgerRow>, Option<i64>, usize), StoreError> {
        let recent: Vec<_> = recent_final
            .iter()
            .map(|(c, since, before)| json!([c, sqlite_ts(*since), sqlite_ts(*before)]))
            .collect();
        let cols = crate::store::sweep::key_amount(
            <sqlx::Sqlite as Dialect>::ROW_COLUMNS,
            "CAST(o.amount_paid AS TEXT)",
            "TEXT",
        );
        // julianday() reads the handler's spellings too ("2026-11-01 10:00:00", "...T...Z").
        let sql = format!(
            "SELECT {cols} FROM orders o WHERE o.tx_hash IS NOT NULL AND o.id > ?1 \
             AND (o.state IN ('pending', 'confirmed') OR (o.state = 'final' AND EXISTS (\
             SELECT 1 FROM json_each(?3) f WHERE json_extract(f.value, '$[0]') = o.chain \
             AND julianday(o.state_changed_at) >= julianday(json_extract(f.value, '$[1]')) \
             AND julianday(o.state_changed_at) < julianday(json_extract(f.value, '$[2]'))))) \
             ORDER BY o.id LIMIT ?2"
        );
        let rows = sqlx::query(&sql)
            .bind(after_id)
            .bind(limit)
            .bind(serde_json::Value::Array(recent).to_string())
            .fetch_all(counted(pool))
            .await
            .map_err(|e| db_error("read a sweep page", e))?;
        Ok(crate::store::sweep::sweep_rows(&rows))
    }

    /// Records the block of payments whose rows hold none (NULL or empty `block_hash`), in one
    /// statement for the whole batch; a row that changed key or gained a block since it was read
    /// is left alone. Returns the rows written.
    async fn record_blocks(pool: &SqlitePool, rows: &[Rekey]) -> Result<u64, StoreError> {
        if rows.is_empty() {
            return Ok(0);
        }
        let values = crate::store::sweep::rekey_json(rows);
        let done = sqlx::query(
            "UPDATE orders SET block_number = json_extract(v.value, '$[3]'), \
             block_hash = json_extract(v.value, '$[4]') FROM json_each(?1) v \
             WHERE orders.id = json_extract(v.value, '$[0]') \
             AND orders.tx_hash = json_extract(v.value, '$[1]') \
             AND orders.log_index = json_extract(v.value, '$[2]') \
             AND (orders.block_hash IS NULL OR orders.block_hash = '')",
        )
        .bind(values)
        .execute(counted(pool))
        .await
        .map_err(|e| db_error("record the blocks of payments", e))?;
        Ok(done.rows_affected())
    }
}

/// Orders by payment key: the order whose key it is, or the order it was credited to (the
/// `WITH k(chain, tx_hash, log_index)` of the caller). Selects the row columns, then the
/// matched key's `tx_hash` and `log_index`.
fn by_key_sql(row_columns: &str) -> String {
    format!(
        "SELECT {row_columns}, k.tx_hash AS matched_tx_hash, k.log_index AS matched_log_index FROM k CROSS JOIN orders o \
         ON o.chain = k.chain AND o.tx_hash = k.tx_hash AND o.log_index = k.log_index \
         UNION SELECT {row_columns}, k.tx_hash AS matched_tx_hash, k.log_index AS matched_log_index FROM k CROSS JOIN payrecon_payments p \
         ON p.chain = k.chain AND p.tx_hash = k.tx_hash AND p.log_index = k.log_index \
         CROSS JOIN orders o ON o.id = p.order_id"
    )
}
