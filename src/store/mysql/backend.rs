//! MariaDB/MySQL's `Backend`: lists bound as one JSON array and read with `JSON_TABLE`, its
//! string columns declared in the charset of the column they join (so the index is used).

use std::collections::HashSet;

use jiff::Timestamp;
use serde_json::json;
use sqlx::{MySql, MySqlPool};

use super::mysql_ts;
use crate::domain::ExpectedOrder;
use crate::domain::{LedgerRow, LedgerView, PaymentKey, State, TxHash};
use crate::store::backend::Backend;
use crate::store::dialect::Dialect;
use crate::store::rows::ViewRow;
use crate::store::rows::{counted, db_error, decode_row, rank_sql, valid_rows, LOOKUP_CHUNK};
use crate::store::{is_retryable, is_unique_violation, Rekey, StoreError};

const ROW_COLUMNS: &str = <MySql as Dialect>::ROW_COLUMNS;

mod lookups;
mod register;
use lookups::{by_key_sql, keys_json, unpaid_by_slot, KEYS};
use register::{register_once, REGISTER_ATTEMPTS};

impl Backend for MySql {
    async fn migrate(pool: &MySqlPool) -> Result<(), StoreError> {
        crate::store::migrate::run(crate::store::migrate::MYSQL, pool, "MariaDB/MySQL").await
    }
    async fn load_view(
        pool: &MySqlPool,
        keys: &[PaymentKey],
        slots: &[&(String, String, String)],
    ) -> Result<LedgerView, StoreError> {
        let mut view = LedgerView::default();
        let by_key = by_key_sql();
        for chunk in keys.chunks(LOOKUP_CHUNK) {
            let json = keys_json(chunk);
            let rows = sqlx::query(&by_key)
                .bind(&json)
                .bind(&json)
                .fetch_all(counted(pool))
                .await
                .map_err(|e| db_error("look up orders by payment key", e))?;
            crate::store::payments::insert_by_key!(&mut view, rows);
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
        pool: &MySqlPool,
        txs: &[&(String, TxHash)],
    ) -> Result<Vec<LedgerRow>, StoreError> {
        let sql = format!(
            "SELECT {ROW_COLUMNS} FROM JSON_TABLE(?, '$[*]' COLUMNS (\
             chain VARCHAR(64) CHARACTER SET ascii PATH '$[0]', \
             tx_hash VARCHAR(128) CHARACTER SET ascii PATH '$[1]')) t JOIN orders o \
             ON o.chain = t.chain AND o.tx_hash = t.tx_hash ORDER BY o.id"
        );
        let mut out = Vec::new();
        for chunk in txs.chunks(LOOKUP_CHUNK) {
            let items: Vec<_> = chunk.iter().map(|(c, t)| json!([c, t.as_str()])).collect();
            let rows = sqlx::query(&sql)
                .bind(serde_json::Value::Array(items).to_string())
                .fetch_all(counted(pool))
                .await
                .map_err(|e| db_error("look up orders by transaction", e))?;
            out.extend(valid_rows(rows.iter().map(decode_row)));
        }
        Ok(out)
    }
    async fn attached_keys(
        pool: &MySqlPool,
        keys: &[PaymentKey],
    ) -> Result<HashSet<(String, String, i64)>, StoreError> {
        let mut found = HashSet::new();
        let sql = format!(
            "SELECT o.chain, o.tx_hash, o.log_index FROM {KEYS} JOIN orders o \
             ON o.chain = k.chain AND o.tx_hash = k.tx_hash AND o.log_index = k.log_index \
             UNION SELECT p.chain, p.tx_hash, p.log_index FROM {KEYS} JOIN payrecon_payments p \
             ON p.chain = k.chain AND p.tx_hash = k.tx_hash AND p.log_index = k.log_index"
        );
        for chunk in keys.chunks(LOOKUP_CHUNK) {
            let json = keys_json(chunk);
            let rows: Vec<(String, String, i64)> = sqlx::query_as(&sql)
                .bind(&json)
                .bind(&json)
                .fetch_all(counted(pool))
                .await
                .map_err(|e| db_error("look up attached payment keys", e))?;
            found.extend(rows);
        }
        Ok(found)
    }
    async fn sweep_page(
        pool: &MySqlPool,
        after_id: i64,
        limit: i64,
        recent_final: &[(String, Timestamp, Timestamp)],
    ) -> Result<(Vec<LedgerRow>, Option<i64>, usize), StoreError> {
        let recent: Vec<_> = recent_final
            .iter()
            .map(|(c, since, before)| json!([c, mysql_ts(*since), mysql_ts(*before)]))
            .collect();
        let cols =
            crate::store::sweep::key_amount(ROW_COLUMNS, "CAST(o.amount_paid AS CHAR)", "CHAR");
        let sql = format!(
            "SELECT {cols} FROM orders o WHERE o.tx_hash IS NOT NULL AND o.id > ? \
             AND (o.state IN ('pending', 'confirmed') OR (o.state = 'final' AND EXISTS (\
             SELECT 1 FROM JSON_TABLE(?, '$[*]' COLUMNS (\
             chain VARCHAR(64) CHARACTER SET ascii PATH '$[0]', \
             since DATETIME(6) PATH '$[1]', until_ DATETIME(6) PATH '$[2]')) f \
             WHERE f.chain = o.chain AND o.state_changed_at >= f.since \
             AND o.state_changed_at < f.until_))) ORDER BY o.id LIMIT ?"
        );
        let rows = sqlx::query(&sql)
            .bind(after_id)
            .bind(serde_json::Value::Array(recent).to_string())
            .bind(limit)
            .fetch_all(counted(pool))
            .await
            .map_err(|e| db_error("read a sweep page", e))?;
        Ok(crate::store::sweep::sweep_rows(&rows))
    }

    /// One multi-table UPDATE for the batch; a row that changed key or gained a block since
    /// it was read is left alone.
    async fn record_blocks(pool: &MySqlPool, rows: &[Rekey]) -> Result<u64, StoreError> {
        if rows.is_empty() {
            return Ok(0);
        }
        let values = crate::store::sweep::rekey_json(rows);
        let done = sqlx::query(
            "UPDATE orders o JOIN JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT PATH '$[0]', \
             tx_hash VARCHAR(128) CHARACTER SET ascii PATH '$[1]', log_index BIGINT PATH '$[2]', \
             bn BIGINT PATH '$[3]', bh VARCHAR(128) CHARACTER SET ascii PATH '$[4]')) v \
             ON o.id = v.id AND o.tx_hash = v.tx_hash AND o.log_index = v.log_index \
             SET o.block_number = v.bn, o.block_hash = v.bh \
             WHERE o.block_hash IS NULL OR o.block_hash = ''",
        )
        .bind(values)
        .execute(counted(pool))
        .await
        .map_err(|e| db_error("record the blocks of payments", e))?;
        Ok(done.rows_affected())
    }

    /// A plain INSERT: a duplicate `(provider, event_id)` is error 1062 and writes nothing
    /// (not `INSERT IGNORE`, which would also truncate an over-long value silently).
    async fn insert_webhook_delivery(
        pool: &MySqlPool,
        provider: &str,
        event_id: &str,
        body: &str,
        at: Timestamp,
    ) -> Result<Option<i64>, StoreError> {
        let res = sqlx::query(
            "INSERT INTO payrecon_webhook_events (provider, event_id, body, received_at) \
             VALUES (?, ?, ?, CAST(? AS DATETIME(6)))",
        )
        .bind(provider)
        .bind(event_id)
        .bind(body)
        .bind(mysql_ts(at))
        .execute(counted(pool))
        .await;
        match res {
            Ok(done) => Ok(i64::try_from(done.last_insert_id()).ok()),
            Err(e) if is_unique_violation(&e) => Ok(None),
            Err(e) => Err(db_error("store a webhook event", e)),
        }
    }
    async fn advance_payment_states(
        pool: &MySqlPool,
        moves: &[(i64, State)],
        now: &str,
    ) -> Result<u64, sqlx::Error> {
        let v: Vec<serde_json::Value> = moves
            .iter()
            .map(|(id, s)| json!([id, s.as_str(), s.rank()]))
            .collect();
        let sql = format!(
            "UPDATE payrecon_payments p JOIN JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT PATH '$[0]', \
             state VARCHAR(16) CHARACTER SET ascii PATH '$[1]', `rank` BIGINT PATH '$[2]')) v \
             ON p.id = v.id SET p.state = v.state, p.state_changed_at = {} \
             WHERE {} < v.`rank`",
            <MySql as Dialect>::ts(2),
            rank_sql("p.state")
        );
        sqlx::query(&sql)
            .bind(serde_json::Value::Array(v).to_string())
            .bind(now)
            .execute(counted(pool))
            .await
            .map(|r| r.rows_affected())
    }
    /// `FOR UPDATE SKIP LOCKED` (instances claiming at once take disjoint events), then the
    /// claim and the rows' read, in one transaction: no `UPDATE … RETURNING` here.
    async fn claim_events(
        pool: &MySqlPool,
        holder: &str,
        now: Timestamp,
        until: Timestamp,
        limit: i64,
    ) -> Result<Vec<crate::store::rows::ClaimedRow>, sqlx::Error> {
        let ts = <MySql as Dialect>::ts(1);
        let due = crate::store::due::due_sql(&ts);
        let mut tx = counted(pool).begin().await?;
        let ids: Vec<String> = sqlx::query_scalar(&format!(
            "SELECT e.id FROM payrecon_events e WHERE {due} \
             ORDER BY e.next_attempt_at, e.seq LIMIT ? FOR UPDATE SKIP LOCKED"
        ))
        .bind(mysql_ts(now))
        .bind(mysql_ts(now))
        .bind(limit)
        .fetch_all(counted(&mut *tx))
        .await?;
        if ids.is_empty() {
            counted(tx).commit().await?;
            return Ok(Vec::new());
        }
        let ids = <MySql as Dialect>::texts(&ids);
        let picked = "id IN (SELECT j.v FROM JSON_TABLE(?, '$[*]' COLUMNS \
             (v VARCHAR(64) CHARACTER SET ascii PATH '$')) j)";
        sqlx::query(&format!(
            "UPDATE payrecon_events SET claimed_by = ?, claimed_until = {ts} WHERE {picked}"
        ))
        .bind(holder)
        .bind(mysql_ts(until))
        .bind(&ids)
        .execute(counted(&mut *tx))
        .await?;
        let rows = sqlx::query_as(&format!(
            "SELECT id, order_id, body, attempts FROM payrecon_events WHERE {picked}"
        ))
        .bind(&ids)
        .fetch_all(counted(&mut *tx))
        .await?;
        counted(tx).commit().await?;
        Ok(rows)
    }

    /// The UPDATE of a stale request, else the INSERT of a first one; a recent request (the
    /// UPDATE matches nothing) makes the INSERT a duplicate (1062): not claimed. Two
    /// statements, not an upsert: with sqlx's found-rows counting an upsert that changes
    /// nothing reports a row, like one that does.
    async fn claim_resend(
        pool: &MySqlPool,
        provider: &str,
        notification_id: &str,
        now: Timestamp,
        cutoff: Timestamp,
    ) -> Result<bool, sqlx::Error> {
        let updated = sqlx::query(
            "UPDATE payrecon_resends SET requested_at = CAST(? AS DATETIME(6)) \
             WHERE provider = ? AND notification_id = ? \
             AND requested_at <= CAST(? AS DATETIME(6))",
        )
        .bind(mysql_ts(now))
        .bind(provider)
        .bind(notification_id)
        .bind(mysql_ts(cutoff))
        .execute(counted(pool))
        .await?;
        if updated.rows_affected() == 1 {
            return Ok(true);
        }
        let inserted = sqlx::query(
            "INSERT INTO payrecon_resends (provider, notification_id, requested_at) \
             VALUES (?, ?, CAST(? AS DATETIME(6)))",
        )
        .bind(provider)
        .bind(notification_id)
        .bind(mysql_ts(now))
        .execute(counted(pool))
        .await;
        match inserted {
            Ok(_) => Ok(true),
            Err(e) if is_unique_violation(&e) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// One `ON DUPLICATE KEY UPDATE` whose assignments run left to right, each seeing the
    /// ones before: `token` and `holder` test the row as it was, and `expires_at` tests the
    /// holder just written (ours once taken). Then the token, if the row names us, in the same
    /// transaction.
    async fn take_lease(
        pool: &MySqlPool,
        provider: &str,
        holder: &str,
        until: Timestamp,
        now: Timestamp,
    ) -> Result<Option<i64>, sqlx::Error> {
        let free = "(holder = VALUES(holder) OR expires_at <= CAST(? AS DATETIME(6)))";
        let mut tx = counted(pool).begin().await?;
        sqlx::query(&format!(
            "INSERT INTO payrecon_leases (provider, holder, token, expires_at) \
             VALUES (?, ?, 1, CAST(? AS DATETIME(6))) ON DUPLICATE KEY UPDATE \
             token = IF({free}, token + 1, token), holder = IF({free}, VALUES(holder), holder), \
             expires_at = IF({free}, VALUES(expires_at), expires_at)"
        ))
        .bind(provider)
        .bind(holder)
        .bind(mysql_ts(until))
        .bind(mysql_ts(now))
        .bind(mysql_ts(now))
        .bind(mysql_ts(now))
        .execute(counted(&mut *tx))
        .await?;
        let token = sqlx::query_scalar(
            "SELECT token FROM payrecon_leases WHERE provider = ? AND holder = ? \
             AND expires_at = CAST(? AS DATETIME(6))",
        )
        .bind(provider)
        .bind(holder)
        .bind(mysql_ts(until))
        .fetch_optional(counted(&mut *tx))
        .await?;
        counted(tx).commit().await?;
        Ok(token)
    }
    /// The refs already taken, a plain multi-row INSERT of the others, then the views: three
    /// statements in one transaction. A registration racing ours for a new ref makes the INSERT
    /// a duplicate (1062), or a deadlock (1213): the batch is rolled back and run again, and
    /// the next SELECT sees the ref. Not `ON DUPLICATE KEY UPDATE`: under READ COMMITTED the
    /// racing INSERT would pass as a no-op and both callers would report "created". Not
    /// `INSERT IGNORE`, which would clamp an amount out of range.
    async fn register_batch(
        pool: &MySqlPool,
        batch: &[ExpectedOrder],
        retries: &crate::store::Retries,
    ) -> Result<(Vec<String>, Vec<ViewRow>), sqlx::Error> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            match register_once(pool, batch).await {
                Err(e)
                    if attempt < REGISTER_ATTEMPTS
                        && (is_unique_violation(&e) || is_retryable(&e)) =>
                {
                    retries.count();
                    tracing::debug!(attempt, "registration raced another: the batch runs again");
                }
                done => return done,
            }
        }
    }
}
