//! Postgres's `Backend`: the operations whose statements differ in shape by backend.

use std::collections::HashSet;

use jiff::Timestamp;
use sqlx::{PgPool, Postgres};

use crate::domain::{LedgerRow, LedgerView, PaymentKey, State, TxHash};
use crate::store::backend::Backend;
use crate::store::dialect::Dialect;
use crate::store::rows::{
    counted, db_error, decode_row, rank_sql, valid_rows, RawRow, LOOKUP_CHUNK,
};
use crate::store::Rekey;
use crate::store::StoreError;

const ROW_COLUMNS: &str = <Postgres as Dialect>::ROW_COLUMNS;

type KeyArrays = (Vec<String>, Vec<String>, Vec<i64>);

fn key_arrays(keys: &[PaymentKey]) -> KeyArrays {
    let mut out: KeyArrays = Default::default();
    for k in keys {
        out.0.push(k.chain.clone());
        out.1.push(k.tx_hash.as_str().to_string());
        out.2.push(k.log_index);
    }
    out
}

const KEYS_JOIN: &str =
    "FROM UNNEST($1::text[], $2::text[], $3::bigint[]) AS k(chain, tx_hash, log_index) \
     JOIN orders o ON o.chain = k.chain AND o.tx_hash = k.tx_hash AND o.log_index = k.log_index";

impl Backend for Postgres {
    async fn migrate(pool: &PgPool) -> Result<(), StoreError> {
        crate::store::migrate::run(crate::store::migrate::POSTGRES, pool, "PostgreSQL").await
    }
    async fn load_view(
        pool: &PgPool,
        keys: &[PaymentKey],
        slots: &[&(String, String, String)],
    ) -> Result<LedgerView, StoreError> {
        let mut view = LedgerView::default();
        let by_key = by_key_sql(ROW_COLUMNS);
        for chunk in keys.chunks(LOOKUP_CHUNK) {
            let (c, t, l) = key_arrays(chunk);
            let rows = sqlx::query(&by_key)
                .bind(c)
                .bind(t)
                .bind(l)
                .fetch_all(counted(pool))
                .await
                .map_err(|e| db_error("look up orders by payment key", e))?;
            crate::store::payments::insert_by_key!(&mut view, rows);
        }
        let by_slot = format!(
            "SELECT {ROW_COLUMNS} \
             FROM UNNEST($1::text[], $2::text[], $3::text[]) AS s(chain, pay_to, asset) \
             JOIN orders o ON o.chain = s.chain AND o.pay_to = s.pay_to AND o.asset = s.asset \
             WHERE o.state = 'unpaid' ORDER BY o.created_at, o.id"
        );
        // `tx_hash IS NULL` is checked below, not in SQL, on purpose: with it, the query also matches
        // the deposit scan's partial index `orders_unpaid_scan (chain, id)`, and on a table without
        // statistics (just loaded, autovacuum off or not yet run) the planner picks that index and
        // filters every unpaid order of the chain for each slot (61 ms for 15 slots among 10,000
        // unpaid orders, against 0.26 ms on `orders_unpaid_slot`). Without it, only the slot index
        // applies. Test: `store::plans::the_slot_lookup_uses_the_slot_index_without_statistics`.
        for chunk in slots.chunks(LOOKUP_CHUNK) {
            let chains: Vec<&str> = chunk.iter().map(|s| s.0.as_str()).collect();
            let pay_to: Vec<&str> = chunk.iter().map(|s| s.1.as_str()).collect();
            let assets: Vec<&str> = chunk.iter().map(|s| s.2.as_str()).collect();
            let rows = sqlx::query(&by_slot)
                .bind(chains)
                .bind(pay_to)
                .bind(assets)
                .fetch_all(counted(pool))
                .await
                .map_err(|e| db_error("look up unpaid orders by deposit address", e))?;
            let unkeyed = rows
                .iter()
                .map(decode_row::<RawRow, _>)
                .filter(|raw| !matches!(raw, Ok(raw) if raw.tx_hash.is_some()));
            valid_rows(unkeyed)
                .into_iter()
                .for_each(|r| view.insert_unpaid(r));
        }
        Ok(view)
    }
    async fn rows_by_tx(
        pool: &PgPool,
        txs: &[&(String, TxHash)],
    ) -> Result<Vec<LedgerRow>, StoreError> {
        let sql = format!(
            "SELECT {ROW_COLUMNS} FROM UNNEST($1::text[], $2::text[]) AS t(chain, tx_hash) \
             JOIN orders o ON o.chain = t.chain AND o.tx_hash = t.tx_hash ORDER BY o.id"
        );
        let mut out = Vec::new();
        for chunk in txs.chunks(LOOKUP_CHUNK) {
            let chains: Vec<&str> = chunk.iter().map(|(c, _)| c.as_str()).collect();
            let hashes: Vec<&str> = chunk.iter().map(|(_, t)| t.as_str()).collect();
            let rows = sqlx::query(&sql)
                .bind(chains)
                .bind(hashes)
                .fetch_all(pool)
                .await
                .map_err(|e| db_error("look up orders by transaction", e))?;
            out.extend(valid_rows(rows.iter().map(decode_row)));
        }
        Ok(out)
    }
    async fn attached_keys(
        pool: &PgPool,
        keys: &[PaymentKey],
    ) -> Result<HashSet<(String, String, i64)>, StoreError> {
        let mut found = HashSet::new();
        let sql = format!(
            "SELECT o.chain, o.tx_hash, o.log_index {KEYS_JOIN} UNION SELECT p.chain, p.tx_hash, \
             p.log_index FROM UNNEST($1::text[], $2::text[], $3::bigint[]) AS k(chain, tx_hash, \
             log_index) JOIN payrecon_payments p ON p.chain = k.chain AND p.tx_hash = k.tx_hash \
             AND p.log_index = k.log_index"
        );
        for chunk in keys.chunks(LOOKUP_CHUNK) {
            let (c, t, l) = key_arrays(chunk);
            let rows: Vec<(String, String, i64)> = sqlx::query_as(&sql)
                .bind(c)
                .bind(t)
                .bind(l)
                .fetch_all(counted(pool))
                .await
                .map_err(|e| db_error("look up attached payment keys", e))?;
            found.extend(rows);
        }
        Ok(found)
    }

    async fn insert_webhook_delivery(
        pool: &PgPool,
        provider: &str,
        event_id: &str,
        body: &str,
        at: Timestamp,
    ) -> Result<Option<i64>, StoreError> {
        sqlx::query_scalar(
            "INSERT INTO payrecon_webhook_events (provider, event_id, body, received_at) \
             VALUES ($1, $2, $3, $4::timestamptz) ON CONFLICT (provider, event_id) DO NOTHING \
             RETURNING id",
        )
        .bind(provider)
        .bind(event_id)
        .bind(body)
        .bind(at.to_string())
        .fetch_optional(counted(pool))
        .await
        .map_err(|e| db_error("store a webhook event", e))
    }
    async fn advance_payment_states(
        pool: &PgPool,
        moves: &[(i64, State)],
        now: &str,
    ) -> Result<u64, sqlx::Error> {
        let ids: Vec<i64> = moves.iter().map(|(id, _)| *id).collect();
        let states: Vec<&str> = moves.iter().map(|(_, s)| s.as_str()).collect();
        let ranks: Vec<i64> = moves.iter().map(|(_, s)| s.rank()).collect();
        let sql = format!(
            "UPDATE payrecon_payments p SET state = v.state, \
             state_changed_at = $4::timestamptz \
             FROM UNNEST($1::bigint[], $2::text[], $3::bigint[]) AS v(id, state, rank) \
             WHERE p.id = v.id AND {} < v.rank",
            rank_sql("p.state")
        );
        sqlx::query(&sql)
            .bind(ids)
            .bind(states)
            .bind(ranks)
            .bind(now)
            .execute(counted(pool))
            .await
            .map(|r| r.rows_affected())
    }

    async fn sweep_page(
        pool: &PgPool,
        after_id: i64,
        limit: i64,
        recent_final: &[(String, Timestamp, Timestamp)],
    ) -> Result<(Vec<LedgerRow>, Option<i64>, usize), StoreError> {
        let chains: Vec<&str> = recent_final.iter().map(|(c, _, _)| c.as_str()).collect();
        let since: Vec<String> = recent_final.iter().map(|(_, t, _)| t.to_string()).collect();
        let before: Vec<String> = recent_final.iter().map(|(_, _, t)| t.to_string()).collect();
        let cols = crate::store::sweep::key_amount(
            <sqlx::Postgres as Dialect>::ROW_COLUMNS,
            "o.amount_paid::text",
            "text",
        );
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
        Ok(crate::store::sweep::sweep_rows(&rows))
    }

    async fn record_blocks(pool: &PgPool, rows: &[Rekey]) -> Result<u64, StoreError> {
        if rows.is_empty() {
            return Ok(0);
        }
        let ids: Vec<i64> = rows.iter().map(|r| r.order_id).collect();
        let txs: Vec<&str> = rows.iter().map(|r| r.tx_hash.as_str()).collect();
        let lis: Vec<i64> = rows.iter().map(|r| r.new_log_index).collect();
        let nums: Vec<i64> = rows
            .iter()
            .map(|r| crate::store::sweep::block_number(&r.new_block))
            .collect();
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
}

/// The same for PostgreSQL, over `UNNEST($1, $2, $3) AS k`.
fn by_key_sql(row_columns: &str) -> String {
    let k = "UNNEST($1::text[], $2::text[], $3::bigint[]) AS k(chain, tx_hash, log_index)";
    format!(
        "SELECT {row_columns}, k.tx_hash AS matched_tx_hash, k.log_index AS matched_log_index FROM {k} JOIN orders o \
         ON o.chain = k.chain AND o.tx_hash = k.tx_hash AND o.log_index = k.log_index \
         UNION SELECT {row_columns}, k.tx_hash AS matched_tx_hash, k.log_index AS matched_log_index FROM {k} JOIN payrecon_payments p \
         ON p.chain = k.chain AND p.tx_hash = k.tx_hash AND p.log_index = k.log_index \
         JOIN orders o ON o.id = p.order_id"
    )
}
