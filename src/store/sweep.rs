//! The chain sweep's statements, both backends: keyset pages of rows to check on chain, and
//! the guarded re-key of a payment that a reorg moved to another block.

use jiff::Timestamp;
use serde_json::json;
use sqlx::{PgPool, SqlitePool};

use super::rows::{
    counted, db_error, decode_raw_row, sqlite_ts, valid_rows, PG_ROW_COLUMNS, SQLITE_ROW_COLUMNS,
};
use super::{is_unique_violation, StoreError};
use crate::domain::{BlockRef, LedgerRow, TxHash};

/// A payment the chain re-included elsewhere: its new position, and the values the row must
/// still hold for the change to be made (the row as the sweep read it).
#[derive(Debug, Clone)]
pub struct Rekey {
    pub order_id: i64,
    pub chain: String,
    pub tx_hash: TxHash,
    pub old_log_index: i64,
    /// The block hash the ledger held; `None`: the row had none (NULL or empty).
    pub old_block_hash: Option<String>,
    pub new_log_index: i64,
    pub new_block: BlockRef,
}

/// What one re-key statement did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RekeyOutcome {
    /// The key columns now hold the new position.
    Rekeyed,
    /// The row no longer holds the old values (someone changed it since it was read).
    Changed,
    /// Another row already holds the new payment key: nothing written.
    Collision,
}

/// Rows with a payment key to check on chain, `id > after`, by id: `pending`/`confirmed`,
/// and `final` rows on a chain of `recent_final` that became final at or after its timestamp.
/// Returns the valid rows, the last id read and how many rows were read.
/// The row columns with `amount_paid` read as the amount of the payment the key names (for
/// an order paid in parts it is their sum), so that the sweep places that payment; the
/// order's own `amount_paid` for a key without a payment row.
fn key_amount(columns: &str, amount_paid: &str, text: &str) -> String {
    columns.replace(
        amount_paid,
        &format!(
            "COALESCE((SELECT CAST(kp.amount AS {text}) FROM payrecon_payments kp \
             WHERE kp.chain = o.chain AND kp.tx_hash = o.tx_hash AND kp.log_index = o.log_index), \
             {amount_paid})"
        ),
    )
}

pub(super) async fn sqlite_page(
    pool: &SqlitePool,
    after_id: i64,
    limit: i64,
    recent_final: &[(String, Timestamp, Timestamp)],
) -> Result<(Vec<LedgerRow>, Option<i64>, usize), StoreError> {
    let recent: Vec<_> = recent_final
        .iter()
        .map(|(c, since, before)| json!([c, sqlite_ts(*since), sqlite_ts(*before)]))
        .collect();
    let cols = key_amount(SQLITE_ROW_COLUMNS, "CAST(o.amount_paid AS TEXT)", "TEXT");
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
    let last = rows.last().and_then(|r| sqlx::Row::try_get(r, 0).ok());
    let fetched = rows.len();
    Ok((
        valid_rows(rows.iter().map(|r| decode_raw_row!(r))),
        last,
        fetched,
    ))
}

pub(super) async fn pg_page(
    pool: &PgPool,
    after_id: i64,
    limit: i64,
    recent_final: &[(String, Timestamp, Timestamp)],
) -> Result<(Vec<LedgerRow>, Option<i64>, usize), StoreError> {
    let chains: Vec<&str> = recent_final.iter().map(|(c, _, _)| c.as_str()).collect();
    let since: Vec<String> = recent_final.iter().map(|(_, t, _)| t.to_string()).collect();
    let before: Vec<String> = recent_final.iter().map(|(_, _, t)| t.to_string()).collect();
    let cols = key_amount(PG_ROW_COLUMNS, "o.amount_paid::text", "text");
    let sql = format!(
        "SELECT {cols} FROM orders o WHERE o.tx_hash IS NOT NULL AND o.id > $1 \
         AND (o.state IN ('pending', 'confirmed') OR (o.state = 'final' AND EXISTS (\
         SELECT 1 FROM UNNEST($3::text[], $4::text[], $5::text[]) AS f(chain, since, before) \
         WHERE f.chain = o.chain AND o.state_changed_at >= f.since::timestamptz \
         AND o.state_changed_at < f.before::timestamptz))) \
         ORDER BY o.id LIMIT $2"
    );
    let rows = sqlx::query(&sql)
        .bind(after_id)
        .bind(limit)
        .bind(chains)
        .bind(since)
        .bind(before)
        .fetch_all(counted(pool))
        .await
        .map_err(|e| db_error("read a sweep page", e))?;
    let last = rows.last().and_then(|r| sqlx::Row::try_get(r, 0).ok());
    let fetched = rows.len();
    Ok((
        valid_rows(rows.iter().map(|r| decode_raw_row!(r))),
        last,
        fetched,
    ))
}

/// One UPDATE guarded by the old key and block hash, and by no other row holding the new
/// key; when it changes nothing, one SELECT tells a collision from a row changed under us.
pub(super) async fn sqlite_rekey(pool: &SqlitePool, r: &Rekey) -> Result<RekeyOutcome, StoreError> {
    let guard = match r.old_block_hash {
        Some(_) => "block_hash = ?8",
        None => "(block_hash IS NULL OR block_hash = '')",
    };
    let sql = format!(
        "UPDATE orders SET log_index = ?5, block_number = ?6, block_hash = ?7 \
         WHERE id = ?1 AND chain = ?2 AND tx_hash = ?3 AND log_index = ?4 AND {guard} \
         AND NOT EXISTS (SELECT 1 FROM orders o2 WHERE o2.chain = ?2 AND o2.tx_hash = ?3 \
         AND o2.log_index = ?5 AND o2.id <> ?1)"
    );
    let mut q = sqlx::query(&sql)
        .bind(r.order_id)
        .bind(&r.chain)
        .bind(r.tx_hash.as_str())
        .bind(r.old_log_index)
        .bind(r.new_log_index)
        .bind(block_number(&r.new_block))
        .bind(&r.new_block.hash);
    if let Some(h) = &r.old_block_hash {
        q = q.bind(h);
    }
    let doing = "re-key a reorganised payment";
    let mut tx = counted(pool)
        .begin_with("BEGIN IMMEDIATE")
        .await
        .map_err(|e| db_error(doing, e))?;
    let res = q.execute(counted(&mut *tx)).await;
    let res = match res {
        Ok(done) if done.rows_affected() == 1 => super::payments::sqlite_follow_rekey(&mut tx, r)
            .await
            .map(|()| 1),
        other => other.map(|d| d.rows_affected()),
    };
    let changed = match res {
        Ok(n) => n,
        Err(e) if is_unique_violation(&e) => return Ok(RekeyOutcome::Collision),
        Err(e) => return Err(db_error(doing, e)),
    };
    counted(tx).commit().await.map_err(|e| db_error(doing, e))?;
    if changed == 1 {
        return Ok(RekeyOutcome::Rekeyed);
    }
    let taken: Option<i64> = sqlx::query_scalar(
        "SELECT id FROM orders WHERE chain = ?1 AND tx_hash = ?2 AND log_index = ?3 AND id <> ?4",
    )
    .bind(&r.chain)
    .bind(r.tx_hash.as_str())
    .bind(r.new_log_index)
    .bind(r.order_id)
    .fetch_optional(counted(pool))
    .await
    .map_err(|e| db_error("re-key a reorganised payment", e))?;
    Ok(miss(taken))
}

pub(super) async fn pg_rekey(pool: &PgPool, r: &Rekey) -> Result<RekeyOutcome, StoreError> {
    let guard = match r.old_block_hash {
        Some(_) => "block_hash = $8",
        None => "(block_hash IS NULL OR block_hash = '')",
    };
    let sql = format!(
        "UPDATE orders SET log_index = $5, block_number = $6, block_hash = $7 \
         WHERE id = $1 AND chain = $2 AND tx_hash = $3 AND log_index = $4 AND {guard} \
         AND NOT EXISTS (SELECT 1 FROM orders o2 WHERE o2.chain = $2 AND o2.tx_hash = $3 \
         AND o2.log_index = $5 AND o2.id <> $1)"
    );
    let mut q = sqlx::query(&sql)
        .bind(r.order_id)
        .bind(&r.chain)
        .bind(r.tx_hash.as_str())
        .bind(r.old_log_index)
        .bind(r.new_log_index)
        .bind(block_number(&r.new_block))
        .bind(&r.new_block.hash);
    if let Some(h) = &r.old_block_hash {
        q = q.bind(h);
    }
    let doing = "re-key a reorganised payment";
    let mut tx = counted(pool)
        .begin()
        .await
        .map_err(|e| db_error(doing, e))?;
    let res = match q.execute(counted(&mut *tx)).await {
        Ok(done) if done.rows_affected() == 1 => super::payments::pg_follow_rekey(&mut tx, r)
            .await
            .map(|()| 1),
        other => other.map(|d| d.rows_affected()),
    };
    let changed = match res {
        Ok(n) => n,
        // Two writers took the same new key at once: the unique index decides.
        Err(e) if is_unique_violation(&e) => return Ok(RekeyOutcome::Collision),
        Err(e) => return Err(db_error(doing, e)),
    };
    counted(tx).commit().await.map_err(|e| db_error(doing, e))?;
    if changed == 1 {
        return Ok(RekeyOutcome::Rekeyed);
    }
    let taken: Option<i64> = sqlx::query_scalar(
        "SELECT id FROM orders WHERE chain = $1 AND tx_hash = $2 AND log_index = $3 AND id <> $4",
    )
    .bind(&r.chain)
    .bind(r.tx_hash.as_str())
    .bind(r.new_log_index)
    .bind(r.order_id)
    .fetch_optional(counted(pool))
    .await
    .map_err(|e| db_error("re-key a reorganised payment", e))?;
    Ok(miss(taken))
}

/// Records the block of payments whose rows hold none (NULL or empty `block_hash`), in one
/// statement for the whole batch; a row that changed key or gained a block since it was read
/// is left alone. Returns the rows written.
pub(super) async fn sqlite_record_blocks(
    pool: &SqlitePool,
    rows: &[Rekey],
) -> Result<u64, StoreError> {
    if rows.is_empty() {
        return Ok(0);
    }
    let values: Vec<_> = rows
        .iter()
        .map(|r| {
            json!([
                r.order_id,
                r.tx_hash.as_str(),
                r.new_log_index,
                block_number(&r.new_block),
                r.new_block.hash
            ])
        })
        .collect();
    let done = sqlx::query(
        "UPDATE orders SET block_number = json_extract(v.value, '$[3]'), \
         block_hash = json_extract(v.value, '$[4]') FROM json_each(?1) v \
         WHERE orders.id = json_extract(v.value, '$[0]') \
         AND orders.tx_hash = json_extract(v.value, '$[1]') \
         AND orders.log_index = json_extract(v.value, '$[2]') \
         AND (orders.block_hash IS NULL OR orders.block_hash = '')",
    )
    .bind(serde_json::Value::Array(values).to_string())
    .execute(counted(pool))
    .await
    .map_err(|e| db_error("record the blocks of payments", e))?;
    Ok(done.rows_affected())
}

pub(super) async fn pg_record_blocks(pool: &PgPool, rows: &[Rekey]) -> Result<u64, StoreError> {
    if rows.is_empty() {
        return Ok(0);
    }
    let ids: Vec<i64> = rows.iter().map(|r| r.order_id).collect();
    let txs: Vec<&str> = rows.iter().map(|r| r.tx_hash.as_str()).collect();
    let lis: Vec<i64> = rows.iter().map(|r| r.new_log_index).collect();
    let nums: Vec<i64> = rows.iter().map(|r| block_number(&r.new_block)).collect();
    let hashes: Vec<&str> = rows.iter().map(|r| r.new_block.hash.as_str()).collect();
    let done = sqlx::query(
        "UPDATE orders o SET block_number = v.bn, block_hash = v.bh \
         FROM UNNEST($1::bigint[], $2::text[], $3::bigint[], $4::bigint[], $5::text[]) \
         AS v(id, tx, li, bn, bh) \
         WHERE o.id = v.id AND o.tx_hash = v.tx AND o.log_index = v.li \
         AND (o.block_hash IS NULL OR o.block_hash = '')",
    )
    .bind(ids)
    .bind(txs)
    .bind(lis)
    .bind(nums)
    .bind(hashes)
    .execute(counted(pool))
    .await
    .map_err(|e| db_error("record the blocks of payments", e))?;
    Ok(done.rows_affected())
}

pub(super) fn block_number(b: &BlockRef) -> i64 {
    i64::try_from(b.number).unwrap_or(i64::MAX)
}

fn miss(taken: Option<i64>) -> RekeyOutcome {
    match taken {
        Some(_) => RekeyOutcome::Collision,
        None => RekeyOutcome::Changed,
    }
}
