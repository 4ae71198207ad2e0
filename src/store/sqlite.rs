//! SQLite: WAL, a 5 s busy timeout, lists passed as one JSON array (`json_each`), and every
//! write batch in a `BEGIN IMMEDIATE` transaction so that writers queue instead of deadlocking.

use std::collections::{HashMap, HashSet};
use std::str::FromStr;
use std::time::Duration;

use jiff::Timestamp;
use serde_json::json;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Sqlite, SqlitePool, Transaction};

use super::apply::{advance, apply_one, record_transition, ApplySql};
use super::outbox::{self, EventOrder, NewEvent, SQLITE_RETURNING};
use super::rows::{
    connect_error, counted, cutoff, db_error, decode_raw_row, rank_sql, sqlite_ts, valid_rows,
    LOOKUP_CHUNK, SQLITE_ROW_COLUMNS,
};
use super::{ApplyContext, ApplyOutcome, FindingRow, RunRow, RunTotals, StoreError};
use crate::domain::{
    Attach, LedgerRow, LedgerView, NewPayment, PaymentKey, PlannedTransition, State, TxHash,
};

/// Rows per multi-row INSERT (SQLite allows 32,766 bound values per statement).
const INSERT_CHUNK: usize = 500;

pub(super) async fn connect(url: &str, max_connections: u32) -> Result<SqlitePool, StoreError> {
    let options = SqliteConnectOptions::from_str(url)
        .map_err(|e| connect_error(url, e))?
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .busy_timeout(Duration::from_secs(5))
        .foreign_keys(true);
    SqlitePoolOptions::new()
        .max_connections(max_connections.max(1))
        .connect_with(options)
        .await
        .map_err(|e| connect_error(url, e))
}

pub(super) async fn migrate(pool: &SqlitePool) -> Result<(), StoreError> {
    sqlx::migrate!("migrations/sqlite")
        .run(pool)
        .await
        .map_err(|e| StoreError::Migrate {
            backend: "SQLite",
            reason: e.to_string(),
        })
}

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
    let sql = format!(
        "{KEYS_CTE} {}",
        super::payments::sqlite_by_key_sql(SQLITE_ROW_COLUMNS)
    );
    let rows = sqlx::query(&sql)
        .bind(keys_json(keys))
        .fetch_all(counted(pool))
        .await
        .map_err(|e| db_error("look up orders by payment key", e))?;
    super::payments::insert_by_key!(view, rows);
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
         SELECT {SQLITE_ROW_COLUMNS} FROM s CROSS JOIN orders o \
         ON o.chain = s.chain AND o.pay_to = s.pay_to AND o.asset = s.asset \
         WHERE o.state = 'unpaid' AND o.tx_hash IS NULL ORDER BY o.created_at, o.id"
    );
    let rows = sqlx::query(&sql)
        .bind(serde_json::Value::Array(items).to_string())
        .fetch_all(counted(pool))
        .await
        .map_err(|e| db_error("look up unpaid orders by deposit address", e))?;
    Ok(valid_rows(rows.iter().map(|r| decode_raw_row!(r))))
}

pub(super) async fn load_view(
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

pub(super) async fn rows_by_tx(
    pool: &SqlitePool,
    txs: &[&(String, TxHash)],
) -> Result<Vec<LedgerRow>, StoreError> {
    let sql = format!(
        "WITH t(chain, tx_hash) AS (SELECT json_extract(value, '$[0]'), \
         json_extract(value, '$[1]') FROM json_each(?1)) \
         SELECT {SQLITE_ROW_COLUMNS} FROM t CROSS JOIN orders o \
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
        out.extend(valid_rows(rows.iter().map(|r| decode_raw_row!(r))));
    }
    Ok(out)
}

pub(super) async fn attached_keys(
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

pub(super) async fn apply(
    pool: &SqlitePool,
    batch: &[PlannedTransition],
    ctx: &ApplyContext,
    guard: super::Guard<'_>,
) -> Result<Vec<ApplyOutcome>, sqlx::Error> {
    let now = sqlite_ts(Timestamp::now());
    let mut tx = counted(pool).begin_with("BEGIN IMMEDIATE").await?;
    if let super::Guard::Lease(f) = guard {
        super::lease::sqlite_check(&mut tx, f).await?;
    }
    let ids: Vec<i64> = batch.iter().map(|t| t.order_id).collect();
    let rows: Vec<(i64, String)> = sqlx::query_as(
        "SELECT id, state FROM orders WHERE id IN (SELECT value FROM json_each(?1))",
    )
    .bind(serde_json::to_string(&ids).unwrap_or_else(|_| "[]".into()))
    .fetch_all(counted(&mut *tx))
    .await?;
    let mut current: HashMap<i64, String> = rows.into_iter().collect();
    if let super::Guard::Exception(r) = guard {
        super::exceptions::check_paid!(tx, false, r)?;
    }
    // Keys the merchant's code wrote, recorded together (two statements); what they miss
    // goes row by row like the rest.
    let adopted = super::payments::sqlite_adopt_all(&mut tx, batch, ctx, &now, &current).await?;
    let mut out = Vec::with_capacity(batch.len());
    for t in batch {
        if adopted.contains(&t.order_id) {
            out.push(ApplyOutcome::Attached);
            continue;
        }
        out.push(apply_one(&mut tx, t, ctx, &now, &mut current).await?);
    }
    if let super::Guard::Exception(r) = guard {
        super::exceptions::claim!(tx, false, r, &out)?;
    }
    counted(tx).commit().await?;
    Ok(out)
}

impl ApplySql for Sqlite {
    async fn attach_only(
        sp: &mut Transaction<'_, Sqlite>,
        order_id: i64,
        a: &Attach,
    ) -> Result<ApplyOutcome, sqlx::Error> {
        super::attach::sqlite_attach_only(sp, order_id, a).await
    }

    async fn credit(
        sp: &mut Transaction<'_, Sqlite>,
        order_id: i64,
        p: &NewPayment,
        ctx: &ApplyContext,
        now: &str,
    ) -> Result<Option<i64>, sqlx::Error> {
        super::payments::sqlite_credit(sp, order_id, p, ctx, now).await
    }

    async fn key_taken(
        sp: &mut Transaction<'_, Sqlite>,
        key: &crate::domain::PaymentKey,
    ) -> Result<bool, sqlx::Error> {
        sqlx::query_scalar::<_, i64>(
            "SELECT COUNT(*) FROM (SELECT 1 AS x FROM payrecon_payments WHERE chain = ?1 \
             AND tx_hash = ?2 AND log_index = ?3 UNION ALL SELECT 1 FROM orders \
             WHERE chain = ?1 AND tx_hash = ?2 AND log_index = ?3) k",
        )
        .bind(&key.chain)
        .bind(key.tx_hash.as_str())
        .bind(key.log_index)
        .fetch_one(counted(&mut **sp))
        .await
        .map(|n| n > 0)
    }

    async fn set_paid(
        sp: &mut Transaction<'_, Sqlite>,
        order_id: i64,
        p: &NewPayment,
    ) -> Result<bool, sqlx::Error> {
        super::payments::sqlite_set_paid(sp, order_id, p).await
    }

    async fn follow(
        sp: &mut Transaction<'_, Sqlite>,
        order_id: i64,
        to: State,
        now: &str,
    ) -> Result<(), sqlx::Error> {
        super::payments::sqlite_follow(sp, order_id, to, now).await
    }

    async fn advance(
        sp: &mut Transaction<'_, Sqlite>,
        t: &PlannedTransition,
        now: &str,
    ) -> Result<Option<EventOrder>, sqlx::Error> {
        let rank = rank_sql("state");
        let cols = SQLITE_RETURNING;
        advance!(
            sp,
            t,
            now,
            format!(
                "UPDATE orders SET state = ?2, state_changed_at = ?3 \
                 WHERE id = ?1 AND {rank} < ?4 RETURNING {cols}"
            ),
            format!(
                "UPDATE orders SET state = ?2, state_changed_at = ?3, tx_hash = ?5, \
                 log_index = ?6, amount_paid = ?7, block_number = ?8, block_hash = ?9 \
                 WHERE id = ?1 AND {rank} < ?4 AND chain = ?10 \
                 AND (tx_hash IS NULL OR (tx_hash = ?5 AND log_index = ?6)) \
                 AND NOT EXISTS (SELECT 1 FROM orders o2 WHERE o2.chain = ?10 \
                 AND o2.tx_hash = ?5 AND o2.log_index = ?6 AND o2.id <> ?1) RETURNING {cols}"
            )
        )
    }

    async fn state_of(
        tx: &mut Transaction<'static, Sqlite>,
        order_id: i64,
    ) -> Result<Option<String>, sqlx::Error> {
        sqlx::query_scalar("SELECT state FROM orders WHERE id = ?1")
            .bind(order_id)
            .fetch_optional(counted(&mut **tx))
            .await
    }

    async fn record_transition(
        sp: &mut Transaction<'_, Sqlite>,
        t: &PlannedTransition,
        from: State,
        ctx: &ApplyContext,
        now: &str,
    ) -> Result<Option<i64>, sqlx::Error> {
        record_transition!(
            sp,
            t,
            from,
            ctx,
            now,
            "INSERT INTO payrecon_transitions \
             (order_id, from_state, to_state, source, provider, run_id, created_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (order_id, to_state) DO NOTHING \
             RETURNING id"
        )
    }

    async fn insert_event(
        sp: &mut Transaction<'_, Sqlite>,
        event: &NewEvent,
        now: &str,
    ) -> Result<(), sqlx::Error> {
        outbox::sqlite_insert(sp, event, now).await
    }
}

pub(super) async fn claim_resend(
    pool: &SqlitePool,
    provider: &str,
    notification_id: &str,
    now: Timestamp,
    cooldown: Duration,
) -> Result<bool, StoreError> {
    let written = sqlx::query(
        "INSERT INTO payrecon_resends (provider, notification_id, requested_at) \
         VALUES (?1, ?2, ?3) ON CONFLICT (provider, notification_id) \
         DO UPDATE SET requested_at = excluded.requested_at \
         WHERE payrecon_resends.requested_at <= ?4",
    )
    .bind(provider)
    .bind(notification_id)
    .bind(sqlite_ts(now))
    .bind(sqlite_ts(cutoff(now, cooldown)))
    .execute(counted(pool))
    .await
    .map_err(|e| db_error("claim a resend", e))?
    .rows_affected();
    Ok(written == 1)
}

pub(super) async fn start_run(pool: &SqlitePool, run: &RunRow) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO payrecon_runs (id, \"trigger\", started_at, \"since\", \"until\") \
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )
    .bind(&run.id)
    .bind(&run.trigger)
    .bind(sqlite_ts(run.started_at))
    .bind(sqlite_ts(run.since))
    .bind(sqlite_ts(run.until))
    .execute(counted(pool))
    .await
    .map_err(|e| db_error("record the start of a run", e))?;
    Ok(())
}

pub(super) async fn finish_run(
    pool: &SqlitePool,
    run_id: &str,
    finished_at: Timestamp,
    totals: &RunTotals,
) -> Result<u64, StoreError> {
    let done = sqlx::query(
        "UPDATE payrecon_runs SET finished_at = ?2, status = ?3, checked = ?4, gaps = ?5, \
         applied = ?6, resends_requested = ?7, error = ?8, providers = ?9 WHERE id = ?1",
    )
    .bind(run_id)
    .bind(sqlite_ts(finished_at))
    .bind(&totals.status)
    .bind(totals.checked)
    .bind(totals.gaps)
    .bind(totals.applied)
    .bind(totals.resends_requested)
    .bind(&totals.error)
    .bind(&totals.providers)
    .execute(counted(pool))
    .await
    .map_err(|e| db_error("record the end of a run", e))?;
    Ok(done.rows_affected())
}

pub(super) async fn insert_findings(
    pool: &SqlitePool,
    run_id: &str,
    findings: &[FindingRow],
) -> Result<(), StoreError> {
    super::rows::insert_findings!(
        Sqlite,
        counted(pool).begin_with("BEGIN IMMEDIATE"),
        run_id,
        findings,
        INSERT_CHUNK,
        "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"
    )
}

#[cfg(feature = "demo")]
pub(super) async fn insert_orders(
    pool: &SqlitePool,
    orders: &[super::NewOrder],
) -> Result<(), StoreError> {
    let mut tx = counted(pool)
        .begin_with("BEGIN IMMEDIATE")
        .await
        .map_err(|e| db_error("insert orders", e))?;
    for chunk in orders.chunks(INSERT_CHUNK) {
        let mut qb = sqlx::QueryBuilder::<Sqlite>::new(
            "INSERT INTO orders (order_ref, chain, pay_to, asset, amount_due) ",
        );
        qb.push_values(chunk, |mut b, o| {
            b.push_bind(&o.order_ref)
                .push_bind(&o.chain)
                .push_bind(&o.pay_to)
                .push_bind(&o.asset)
                .push_bind(o.amount_due.to_string());
        });
        qb.build()
            .execute(counted(&mut *tx))
            .await
            .map_err(|e| db_error("insert orders", e))?;
    }
    counted(tx)
        .commit()
        .await
        .map_err(|e| db_error("insert orders", e))
}
