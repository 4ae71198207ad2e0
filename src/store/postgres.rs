//! PostgreSQL: lists passed as arrays (`UNNEST`), a write batch locks its rows up front
//! (`FOR UPDATE`, in id order, one statement), amounts travel as text cast to NUMERIC.

use std::collections::{HashMap, HashSet};
use std::str::FromStr;
use std::time::Duration;

use jiff::Timestamp;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{PgPool, Postgres, Transaction};

use super::apply::{advance, apply_one, record_transition, ApplySql};
use super::outbox::{self, EventOrder, NewEvent, PG_RETURNING};
use super::rows::{
    connect_error, counted, cutoff, db_error, decode_raw_row, rank_sql, valid_rows, LOOKUP_CHUNK,
    PG_ROW_COLUMNS,
};
use super::{ApplyContext, ApplyOutcome, FindingRow, RunRow, RunTotals, StoreError};
use crate::domain::{
    Attach, LedgerRow, LedgerView, NewPayment, PaymentKey, PlannedTransition, State, TxHash,
};

/// Rows per multi-row INSERT of findings (11 binds each; PostgreSQL allows 65,535).
const FINDINGS_CHUNK: usize = 1_000;
/// Rows per `INSERT ... SELECT FROM UNNEST(...)` of orders.
#[cfg(feature = "demo")]
const ORDERS_CHUNK: usize = 10_000;

/// Acquire waits up to 10 s, retrying a refused connect: a shorter restart costs no run.
/// `test_before_acquire` (sqlx's default, kept explicit): connections a restart cut are
/// replaced, not handed to the next run (`tests/it/depfaults/pg_outage.rs` fails without it).
pub(super) async fn connect(url: &str, max_connections: u32) -> Result<PgPool, StoreError> {
    let options = PgConnectOptions::from_str(url).map_err(|e| connect_error(url, e))?;
    PgPoolOptions::new()
        .max_connections(max_connections.max(1))
        .acquire_timeout(Duration::from_secs(10))
        .test_before_acquire(true)
        .connect_with(options)
        .await
        .map_err(|e| connect_error(url, e))
}

pub(super) async fn migrate(pool: &PgPool) -> Result<(), StoreError> {
    sqlx::migrate!("migrations/postgres")
        .run(pool)
        .await
        .map_err(|e| StoreError::Migrate {
            backend: "PostgreSQL",
            reason: e.to_string(),
        })
}

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

pub(super) async fn load_view(
    pool: &PgPool,
    keys: &[PaymentKey],
    slots: &[&(String, String, String)],
) -> Result<LedgerView, StoreError> {
    let mut view = LedgerView::default();
    let by_key = super::payments::pg_by_key_sql(PG_ROW_COLUMNS);
    for chunk in keys.chunks(LOOKUP_CHUNK) {
        let (c, t, l) = key_arrays(chunk);
        let rows = sqlx::query(&by_key)
            .bind(c)
            .bind(t)
            .bind(l)
            .fetch_all(counted(pool))
            .await
            .map_err(|e| db_error("look up orders by payment key", e))?;
        super::payments::insert_by_key!(&mut view, rows);
    }
    let by_slot = format!(
        "SELECT {PG_ROW_COLUMNS} \
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
            .map(|r| decode_raw_row!(r))
            .filter(|raw| !matches!(raw, Ok(raw) if raw.tx_hash.is_some()));
        valid_rows(unkeyed)
            .into_iter()
            .for_each(|r| view.insert_unpaid(r));
    }
    Ok(view)
}

pub(super) async fn rows_by_tx(
    pool: &PgPool,
    txs: &[&(String, TxHash)],
) -> Result<Vec<LedgerRow>, StoreError> {
    let sql = format!(
        "SELECT {PG_ROW_COLUMNS} FROM UNNEST($1::text[], $2::text[]) AS t(chain, tx_hash) \
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
        out.extend(valid_rows(rows.iter().map(|r| decode_raw_row!(r))));
    }
    Ok(out)
}

pub(super) async fn attached_keys(
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

pub(super) async fn apply(
    pool: &PgPool,
    batch: &[PlannedTransition],
    ctx: &ApplyContext,
    guard: super::Guard<'_>,
) -> Result<Vec<ApplyOutcome>, sqlx::Error> {
    let now = super::rows::sqlite_ts(Timestamp::now());
    let mut tx = counted(pool).begin().await?;
    if let super::Guard::Lease(f) = guard {
        super::lease::pg_check(&mut tx, f).await?;
    }
    let ids: Vec<i64> = batch.iter().map(|t| t.order_id).collect();
    let rows: Vec<(i64, String)> =
        sqlx::query_as("SELECT id, state FROM orders WHERE id = ANY($1) ORDER BY id FOR UPDATE")
            .bind(ids)
            .fetch_all(counted(&mut *tx))
            .await?;
    let mut current: HashMap<i64, String> = rows.into_iter().collect();
    if let super::Guard::Exception(r) = guard {
        super::exceptions::check_paid!(tx, true, r)?;
    }
    let out = match super::pg_batch::try_apply(&mut tx, batch, ctx, &now, &current).await? {
        Some(out) => out,
        None => {
            let mut out = Vec::with_capacity(batch.len());
            for t in batch {
                out.push(apply_one(&mut tx, t, ctx, &now, &mut current).await?);
            }
            out
        }
    };
    if let super::Guard::Exception(r) = guard {
        super::exceptions::claim!(tx, true, r, &out)?;
    }
    counted(tx).commit().await?;
    Ok(out)
}

impl ApplySql for Postgres {
    async fn attach_only(
        sp: &mut Transaction<'_, Postgres>,
        order_id: i64,
        a: &Attach,
    ) -> Result<ApplyOutcome, sqlx::Error> {
        super::attach::pg_attach_only(sp, order_id, a).await
    }

    async fn credit(
        sp: &mut Transaction<'_, Postgres>,
        order_id: i64,
        p: &NewPayment,
        ctx: &ApplyContext,
        now: &str,
    ) -> Result<Option<i64>, sqlx::Error> {
        super::payments::pg_credit(sp, order_id, p, ctx, now).await
    }

    async fn key_taken(
        sp: &mut Transaction<'_, Postgres>,
        key: &crate::domain::PaymentKey,
    ) -> Result<bool, sqlx::Error> {
        sqlx::query_scalar::<_, i64>(
            "SELECT COUNT(*) FROM (SELECT 1 AS x FROM payrecon_payments WHERE chain = $1 \
             AND tx_hash = $2 AND log_index = $3 UNION ALL SELECT 1 FROM orders \
             WHERE chain = $1 AND tx_hash = $2 AND log_index = $3) k",
        )
        .bind(&key.chain)
        .bind(key.tx_hash.as_str())
        .bind(key.log_index)
        .fetch_one(counted(&mut **sp))
        .await
        .map(|n| n > 0)
    }

    async fn set_paid(
        sp: &mut Transaction<'_, Postgres>,
        order_id: i64,
        p: &NewPayment,
    ) -> Result<bool, sqlx::Error> {
        super::payments::pg_set_paid(sp, order_id, p).await
    }

    async fn follow(
        sp: &mut Transaction<'_, Postgres>,
        order_id: i64,
        to: State,
        now: &str,
    ) -> Result<(), sqlx::Error> {
        super::payments::pg_follow(sp, &[order_id], &[to.as_str()], now).await
    }

    async fn advance(
        sp: &mut Transaction<'_, Postgres>,
        t: &PlannedTransition,
        now: &str,
    ) -> Result<Option<EventOrder>, sqlx::Error> {
        let rank = rank_sql("state");
        let cols = PG_RETURNING;
        advance!(
            sp,
            t,
            now,
            format!(
                "UPDATE orders o SET state = $2, state_changed_at = $3::timestamptz \
                 WHERE id = $1 AND {rank} < $4 RETURNING {cols}"
            ),
            format!(
                "UPDATE orders o SET state = $2, state_changed_at = $3::timestamptz, \
                 tx_hash = $5, log_index = $6, amount_paid = $7::numeric, \
                 block_number = $8, block_hash = $9 \
                 WHERE id = $1 AND {rank} < $4 AND chain = $10 \
                 AND (tx_hash IS NULL OR (tx_hash = $5 AND log_index = $6)) \
                 AND NOT EXISTS (SELECT 1 FROM orders o2 WHERE o2.chain = $10 \
                 AND o2.tx_hash = $5 AND o2.log_index = $6 AND o2.id <> $1) RETURNING {cols}"
            )
        )
    }

    async fn state_of(
        tx: &mut Transaction<'static, Postgres>,
        order_id: i64,
    ) -> Result<Option<String>, sqlx::Error> {
        sqlx::query_scalar("SELECT state FROM orders WHERE id = $1")
            .bind(order_id)
            .fetch_optional(counted(&mut **tx))
            .await
    }

    async fn record_transition(
        sp: &mut Transaction<'_, Postgres>,
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
             VALUES ($1, $2, $3, $4, $5, $6, $7::timestamptz) \
             ON CONFLICT (order_id, to_state) DO NOTHING RETURNING id"
        )
    }

    async fn insert_event(
        sp: &mut Transaction<'_, Postgres>,
        event: &NewEvent,
        now: &str,
    ) -> Result<(), sqlx::Error> {
        outbox::pg_insert(sp, std::slice::from_ref(event), now).await
    }
}

pub(super) async fn claim_resend(
    pool: &PgPool,
    provider: &str,
    notification_id: &str,
    now: Timestamp,
    cooldown: Duration,
) -> Result<bool, StoreError> {
    let written = sqlx::query(
        "INSERT INTO payrecon_resends (provider, notification_id, requested_at) \
         VALUES ($1, $2, $3::timestamptz) ON CONFLICT (provider, notification_id) \
         DO UPDATE SET requested_at = excluded.requested_at \
         WHERE payrecon_resends.requested_at <= $4::timestamptz",
    )
    .bind(provider)
    .bind(notification_id)
    .bind(now.to_string())
    .bind(cutoff(now, cooldown).to_string())
    .execute(counted(pool))
    .await
    .map_err(|e| db_error("claim a resend", e))?
    .rows_affected();
    Ok(written == 1)
}

pub(super) async fn start_run(pool: &PgPool, run: &RunRow) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO payrecon_runs (id, \"trigger\", started_at, \"since\", \"until\") \
         VALUES ($1, $2, $3::timestamptz, $4::timestamptz, $5::timestamptz)",
    )
    .bind(&run.id)
    .bind(&run.trigger)
    .bind(run.started_at.to_string())
    .bind(run.since.to_string())
    .bind(run.until.to_string())
    .execute(counted(pool))
    .await
    .map_err(|e| db_error("record the start of a run", e))?;
    Ok(())
}

pub(super) async fn finish_run(
    pool: &PgPool,
    run_id: &str,
    finished_at: Timestamp,
    totals: &RunTotals,
) -> Result<u64, StoreError> {
    let done = sqlx::query(
        "UPDATE payrecon_runs SET finished_at = $2::timestamptz, status = $3, checked = $4, \
         gaps = $5, applied = $6, resends_requested = $7, error = $8, providers = $9 WHERE id = $1",
    )
    .bind(run_id)
    .bind(finished_at.to_string())
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
    pool: &PgPool,
    run_id: &str,
    findings: &[FindingRow],
) -> Result<(), StoreError> {
    super::rows::insert_findings!(
        Postgres,
        counted(pool).begin(),
        run_id,
        findings,
        FINDINGS_CHUNK,
        "now()"
    )
}

#[cfg(feature = "demo")]
pub(super) async fn insert_orders(
    pool: &PgPool,
    orders: &[super::NewOrder],
) -> Result<(), StoreError> {
    let mut tx = counted(pool)
        .begin()
        .await
        .map_err(|e| db_error("insert orders", e))?;
    for chunk in orders.chunks(ORDERS_CHUNK) {
        let refs: Vec<&str> = chunk.iter().map(|o| o.order_ref.as_str()).collect();
        let chains: Vec<&str> = chunk.iter().map(|o| o.chain.as_str()).collect();
        let pay_to: Vec<&str> = chunk.iter().map(|o| o.pay_to.as_str()).collect();
        let assets: Vec<&str> = chunk.iter().map(|o| o.asset.as_str()).collect();
        let amounts: Vec<String> = chunk.iter().map(|o| o.amount_due.to_string()).collect();
        sqlx::query(
            "INSERT INTO orders (order_ref, chain, pay_to, asset, amount_due) \
             SELECT r, c, p, a, d::numeric \
             FROM UNNEST($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) \
             WITH ORDINALITY AS u(r, c, p, a, d, n) ORDER BY n",
        )
        .bind(refs)
        .bind(chains)
        .bind(pay_to)
        .bind(assets)
        .bind(amounts)
        .execute(counted(&mut *tx))
        .await
        .map_err(|e| db_error("insert orders", e))?;
    }
    counted(tx)
        .commit()
        .await
        .map_err(|e| db_error("insert orders", e))
}
