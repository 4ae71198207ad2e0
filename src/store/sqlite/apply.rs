//! The statements of Sqlite's write batch (`ApplySql`; the batch itself is `store::apply::apply_batch`).

use std::collections::HashMap;

use jiff::Timestamp;
use serde_json::json;
use sqlx::{Sqlite, Transaction};

use crate::domain::{PlannedTransition, State};
use crate::store::apply::ApplySql;
use crate::store::dialect::Dialect;
use crate::store::outbox::NewEvent;
use crate::store::rows::{counted, rank_sql, sqlite_ts};
use crate::store::WriteError;
use crate::store::{ApplyContext, ApplyOutcome, Fence};

impl ApplySql for Sqlite {
    async fn check_fence(
        tx: &mut Transaction<'static, Sqlite>,
        fence: &Fence,
    ) -> Result<(), WriteError> {
        let ok: Option<i64> = sqlx::query_scalar(
            "SELECT 1 FROM payrecon_leases WHERE provider = ?1 AND holder = ?2 AND token = ?3 \
             AND julianday(expires_at) > julianday(?4)",
        )
        .bind(&fence.provider)
        .bind(&fence.holder)
        .bind(fence.token)
        .bind(sqlite_ts(Timestamp::now()))
        .fetch_optional(counted(&mut **tx))
        .await?;
        ok.map(|_| ()).ok_or(WriteError::Fenced)
    }

    async fn lock_states(
        tx: &mut Transaction<'static, Sqlite>,
        ids: &[i64],
    ) -> Result<Vec<(i64, String)>, sqlx::Error> {
        sqlx::query_as("SELECT id, state FROM orders WHERE id IN (SELECT value FROM json_each(?1))")
            .bind(<Sqlite as Dialect>::ints(ids))
            .fetch_all(counted(&mut **tx))
            .await
    }

    async fn apply_set(
        tx: &mut Transaction<'static, Sqlite>,
        batch: &[PlannedTransition],
        ctx: &ApplyContext,
        now: &str,
        current: &HashMap<i64, String>,
    ) -> Result<Vec<Option<ApplyOutcome>>, WriteError> {
        // Keys the merchant's code wrote, recorded together (two statements); what they
        // miss goes row by row like the rest.
        let adopted = adopt_all(tx, batch, ctx, now, current).await?;
        Ok(crate::store::apply::adopted_outcomes(batch, &adopted))
    }

    async fn follow(
        sp: &mut Transaction<'_, Sqlite>,
        order_id: i64,
        to: State,
        now: &str,
    ) -> Result<(), sqlx::Error> {
        let rank = rank_sql("state");
        sqlx::query(&format!(
            "UPDATE payrecon_payments SET state = ?2, state_changed_at = ?3 \
             WHERE order_id = ?1 AND {rank} < ?4 AND (block_number IS NULL OR block_number <= \
             COALESCE((SELECT o.block_number FROM orders o WHERE o.id = ?1), block_number))"
        ))
        .bind(order_id)
        .bind(to.as_str())
        .bind(now)
        .bind(to.rank())
        .execute(counted(&mut **sp))
        .await?;
        Ok(())
    }

    async fn insert_event(
        sp: &mut Transaction<'_, Sqlite>,
        event: &NewEvent,
        now: &str,
    ) -> Result<(), sqlx::Error> {
        sqlx::query(
            "INSERT INTO payrecon_events \
             (id, transition_id, payment_id, order_id, type, body, created_at, next_attempt_at) \
             VALUES (?1, ?2, ?7, ?3, ?4, ?5, ?6, ?6)",
        )
        .bind(&event.id)
        .bind(event.transition_id)
        .bind(event.order_id)
        .bind(event.kind)
        .bind(&event.body)
        .bind(now)
        .bind(event.payment_id)
        .execute(counted(&mut **sp))
        .await?;
        Ok(())
    }
}

/// SQLite: records every key of `batch` the merchant's code wrote into an order that stays
/// where it is (`apply::is_adoption`; orders named once in the batch), in two statements: the
/// payment rows (guarded like `payments::credit!`), then the chain's amount and block on the
/// orders whose row was written. The ids of those orders; the others go row by row.
async fn adopt_all(
    tx: &mut Transaction<'_, Sqlite>,
    batch: &[crate::domain::PlannedTransition],
    ctx: &ApplyContext,
    now: &str,
    current: &HashMap<i64, String>,
) -> Result<std::collections::HashSet<i64>, sqlx::Error> {
    let rows = crate::store::apply::adoption_rows::<Sqlite>(batch, current);
    if rows.len() < 2 {
        return Ok(Default::default());
    }
    let rows = serde_json::Value::Array(rows).to_string();
    let written = insert_adopted(tx, &rows, ctx, now).await?;
    if written.is_empty() {
        return Ok(Default::default());
    }
    // Driven by the rows (each finds its order by id), not by the orders.
    let e = |i: usize| format!("json_extract(value, '$[{i}]')");
    sqlx::query(&format!(
        "UPDATE orders SET amount_paid = v.amount, block_number = v.bn, block_hash = v.bh \
         FROM (SELECT {id} AS id, {tx} AS tx, {li} AS li, {amount} AS amount, {bn} AS bn, \
         {bh} AS bh FROM json_each(?1) WHERE {id} IN (SELECT value FROM json_each(?2))) v \
         WHERE orders.id = v.id AND orders.tx_hash = v.tx AND orders.log_index = v.li",
        id = e(0),
        tx = e(2),
        li = e(3),
        amount = e(4),
        bn = e(5),
        bh = e(6),
    ))
    .bind(&rows)
    .bind(json!(written).to_string())
    .execute(counted(&mut **tx))
    .await?;
    Ok(written.into_iter().collect())
}

/// The payment rows of the adoptions (`adoption_rows`, as one JSON array), each guarded by
/// its order still holding the key: the order ids written.
async fn insert_adopted(
    tx: &mut Transaction<'_, Sqlite>,
    rows: &str,
    ctx: &ApplyContext,
    now: &str,
) -> Result<Vec<i64>, sqlx::Error> {
    let v = |i: usize| format!("json_extract(v.value, '$[{i}]')");
    sqlx::query_scalar(&format!(
        "INSERT INTO payrecon_payments (order_id, chain, tx_hash, log_index, amount, \
         block_number, block_hash, state, source, provider, run_id, created_at, \
         state_changed_at, block_time) \
         SELECT {id}, {chain}, {tx}, {li}, {amount}, {bn}, {bh}, {state}, 'merchant', ?2, ?3, \
         ?4, ?4, {bt} FROM json_each(?1) v \
         WHERE EXISTS (SELECT 1 FROM orders o WHERE o.id = {id} AND o.chain = {chain} \
         AND o.tx_hash = {tx} AND o.log_index = {li}) \
         ON CONFLICT (chain, tx_hash, log_index) DO NOTHING RETURNING order_id",
        id = v(0),
        chain = v(1),
        tx = v(2),
        li = v(3),
        amount = v(4),
        bn = v(5),
        bh = v(6),
        state = v(7),
        bt = v(8),
    ))
    .bind(rows)
    .bind(&ctx.provider)
    .bind(ctx.run_id_or_null())
    .bind(now)
    .fetch_all(counted(&mut **tx))
    .await
}
