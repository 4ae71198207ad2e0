//! The statements of MariaDB/MySQL's write batch (`ApplySql`; the batch itself is
//! `store::apply::apply_batch`). Neither server has `UPDATE … RETURNING` (and MySQL no
//! `RETURNING` at all): an UPDATE's row is read back in the same transaction, an INSERT's id is
//! `last_insert_id()`, and a conflict is the unique key's error 1062, which rolls back the
//! statement only.

use std::collections::{HashMap, HashSet};

use sqlx::{MySql, Transaction};

use crate::domain::{NewPayment, PlannedTransition, State};
use crate::store::apply::{ApplySql, SharedSql};
use crate::store::dialect::Dialect;
use crate::store::outbox::{EventOrder, NewEvent};
use crate::store::rows::{counted, rank_sql};
use crate::store::{is_unique_violation, ApplyContext, ApplyOutcome, Fence, WriteError};

use super::TS;

const RETURNING: &str = <MySql as Dialect>::RETURNING;

/// The id an INSERT wrote; `None` when the unique key refused it (error 1062).
fn inserted_id(
    res: Result<sqlx::mysql::MySqlQueryResult, sqlx::Error>,
) -> Result<Option<i64>, sqlx::Error> {
    match res {
        Ok(done) if done.rows_affected() == 1 => Ok(i64::try_from(done.last_insert_id()).ok()),
        Ok(_) => Ok(None),
        Err(e) if is_unique_violation(&e) => Ok(None),
        Err(e) => Err(e),
    }
}

impl ApplySql for MySql {
    /// The lease row is read with a shared lock against the server's clock, as PostgreSQL's
    /// `now() … FOR SHARE`: a taker must wait for this batch to commit.
    async fn check_fence(
        tx: &mut Transaction<'static, MySql>,
        fence: &Fence,
    ) -> Result<(), WriteError> {
        let ok: Option<i32> = sqlx::query_scalar(
            "SELECT 1 FROM payrecon_leases WHERE provider = ? AND holder = ? AND token = ? \
             AND expires_at > UTC_TIMESTAMP(6) LOCK IN SHARE MODE",
        )
        .bind(&fence.provider)
        .bind(&fence.holder)
        .bind(fence.token)
        .fetch_optional(counted(&mut **tx))
        .await?;
        ok.map(|_| ()).ok_or(WriteError::Fenced)
    }

    /// Locks the batch's orders up front, in id order (one statement), as PostgreSQL does.
    async fn lock_states(
        tx: &mut Transaction<'static, MySql>,
        ids: &[i64],
    ) -> Result<Vec<(i64, String)>, sqlx::Error> {
        sqlx::query_as(
            "SELECT id, state FROM orders WHERE id IN (SELECT j.v FROM \
             JSON_TABLE(?, '$[*]' COLUMNS (v BIGINT PATH '$')) j) ORDER BY id FOR UPDATE",
        )
        .bind(<MySql as Dialect>::ints(ids))
        .fetch_all(counted(&mut **tx))
        .await
    }

    /// The keys the merchant's code wrote, recorded together (`adopt_all`, three
    /// statements); then the rest set-wise when every one moves a distinct order forward
    /// and goes through (`batch::try_forward`), else row by row.
    async fn apply_set(
        tx: &mut Transaction<'static, MySql>,
        batch: &[PlannedTransition],
        ctx: &ApplyContext,
        now: &str,
        current: &HashMap<i64, String>,
    ) -> Result<Vec<Option<ApplyOutcome>>, WriteError> {
        let adopted = adopt_all(tx, batch, ctx, now, current).await?;
        let mut out = crate::store::apply::adopted_outcomes(batch, &adopted);
        let forward = if adopted.is_empty() {
            super::batch::try_forward(tx, batch, ctx, now, current).await?
        } else {
            let rest: Vec<PlannedTransition> = batch
                .iter()
                .filter(|t| !adopted.contains(&t.order_id))
                .cloned()
                .collect();
            super::batch::try_forward(tx, &rest, ctx, now, current).await?
        };
        if let Some(forward) = forward {
            let open = out.iter_mut().filter(|o| o.is_none());
            for (slot, outcome) in open.zip(forward) {
                *slot = Some(outcome);
            }
        }
        Ok(out)
    }

    async fn credit(
        sp: &mut Transaction<'_, MySql>,
        order_id: i64,
        p: &NewPayment,
        ctx: &ApplyContext,
        now: &str,
    ) -> Result<Option<i64>, sqlx::Error> {
        let sql = crate::store::payments::credit_insert_sql::<MySql>(" FROM DUAL");
        let res = MySql::credit_query(&sql, order_id, p, ctx, now)
            .execute(counted(&mut **sp))
            .await;
        inserted_id(res)
    }

    async fn follow(
        sp: &mut Transaction<'_, MySql>,
        order_id: i64,
        to: State,
        now: &str,
    ) -> Result<(), sqlx::Error> {
        let row = serde_json::json!([order_id, to.as_str()]);
        super::batch::follow_all(sp, &[row], now).await
    }

    /// The UPDATE, then the row as it left it (the row is locked by `lock_states`).
    async fn advance(
        sp: &mut Transaction<'_, MySql>,
        t: &PlannedTransition,
        now: &str,
    ) -> Result<Option<EventOrder>, sqlx::Error> {
        let rank = rank_sql("state");
        let done = match &t.attach {
            None => {
                sqlx::query(&format!(
                    "UPDATE orders SET state = ?, state_changed_at = {TS} WHERE id = ? \
                     AND {rank} < ?"
                ))
                .bind(t.to.as_str())
                .bind(now)
                .bind(t.order_id)
                .bind(t.to.rank())
                .execute(counted(&mut **sp))
                .await?
            }
            Some(a) => {
                let free = MySql::key_free(1);
                sqlx::query(&format!(
                    "UPDATE orders SET state = ?, state_changed_at = {TS}, tx_hash = ?, \
                     log_index = ?, amount_paid = CAST(? AS DECIMAL(65,0)), block_number = ?, \
                     block_hash = ? WHERE id = ? AND {rank} < ? AND chain = ? \
                     AND (tx_hash IS NULL OR (tx_hash = ? AND log_index = ?)) \
                     AND {free}"
                ))
                .bind(t.to.as_str())
                .bind(now)
                .bind(a.key.tx_hash.as_str())
                .bind(a.key.log_index)
                .bind(a.amount.to_string())
                .bind(i64::try_from(a.block.number).unwrap_or(i64::MAX))
                .bind(&a.block.hash)
                .bind(t.order_id)
                .bind(t.to.rank())
                .bind(&a.key.chain)
                .bind(a.key.tx_hash.as_str())
                .bind(a.key.log_index)
                .bind(&a.key.chain)
                .bind(a.key.tx_hash.as_str())
                .bind(a.key.log_index)
                .bind(t.order_id)
                .execute(counted(&mut **sp))
                .await?
            }
        };
        if done.rows_affected() == 0 {
            return Ok(None);
        }
        sqlx::query_as(&format!("SELECT {RETURNING} FROM orders o WHERE o.id = ?"))
            .bind(t.order_id)
            .fetch_optional(counted(&mut **sp))
            .await
    }

    async fn record_transition(
        sp: &mut Transaction<'_, MySql>,
        t: &PlannedTransition,
        from: State,
        ctx: &ApplyContext,
        now: &str,
    ) -> Result<Option<i64>, sqlx::Error> {
        let res = sqlx::query(&format!(
            "INSERT INTO payrecon_transitions \
             (order_id, from_state, to_state, source, provider, run_id, created_at) \
             VALUES (?, ?, ?, ?, ?, ?, {TS})"
        ))
        .bind(t.order_id)
        .bind(from.as_str())
        .bind(t.to.as_str())
        .bind(ctx.source.as_str())
        .bind(&ctx.provider)
        .bind(ctx.run_id_or_null())
        .bind(now)
        .execute(counted(&mut **sp))
        .await;
        inserted_id(res)
    }

    async fn insert_event(
        sp: &mut Transaction<'_, MySql>,
        event: &NewEvent,
        now: &str,
    ) -> Result<(), sqlx::Error> {
        super::batch::insert_events(sp, std::slice::from_ref(event), now).await
    }
}

/// The adoption rows of `crate::store::apply::adoption_rows` as table `v`.
const ADOPTIONS: &str = "JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT PATH '$[0]', \
     chain VARCHAR(64) CHARACTER SET ascii PATH '$[1]', \
     tx_hash VARCHAR(128) CHARACTER SET ascii PATH '$[2]', log_index BIGINT PATH '$[3]', \
     amount VARCHAR(80) CHARACTER SET ascii PATH '$[4]', bn BIGINT PATH '$[5]', \
     bh VARCHAR(128) CHARACTER SET ascii PATH '$[6]', \
     state VARCHAR(16) CHARACTER SET ascii PATH '$[7]', bt DATETIME(6) PATH '$[8]')) v";

/// MariaDB/MySQL: records every key of `batch` the merchant's code wrote into an order that
/// stays where it is, in three statements: which of them no payment row holds yet (their
/// orders are locked by `lock_states`, so they keep their keys), those payment rows, then the
/// chain's amount and block on those orders. Without `RETURNING` (MySQL has none) the first
/// read says which rows the INSERT writes: it writes all of them, or a key another
/// transaction wrote since makes it fail with 1062, which undoes the statement only, and then
/// every step goes row by row. The ids of the orders recorded.
async fn adopt_all(
    tx: &mut Transaction<'static, MySql>,
    batch: &[PlannedTransition],
    ctx: &ApplyContext,
    now: &str,
    current: &HashMap<i64, String>,
) -> Result<HashSet<i64>, WriteError> {
    let rows = crate::store::apply::adoption_rows::<MySql>(batch, current);
    if rows.len() < 2 {
        return Ok(HashSet::new());
    }
    let free: Vec<i64> = sqlx::query_scalar(&format!(
        "SELECT v.id FROM {ADOPTIONS} JOIN orders o ON o.id = v.id AND o.chain = v.chain \
         AND o.tx_hash = v.tx_hash AND o.log_index = v.log_index \
         WHERE NOT EXISTS (SELECT 1 FROM payrecon_payments p WHERE p.chain = v.chain \
         AND p.tx_hash = v.tx_hash AND p.log_index = v.log_index)"
    ))
    .bind(serde_json::Value::Array(rows.clone()).to_string())
    .fetch_all(counted(&mut **tx))
    .await?;
    let free: HashSet<i64> = free.into_iter().collect();
    let rows: Vec<serde_json::Value> = rows
        .into_iter()
        .filter(|r| r[0].as_i64().is_some_and(|id| free.contains(&id)))
        .collect();
    if rows.is_empty() {
        return Ok(HashSet::new());
    }
    let written = rows.len();
    let rows = serde_json::Value::Array(rows).to_string();
    let inserted = sqlx::query(&format!(
        "INSERT INTO payrecon_payments (order_id, chain, tx_hash, log_index, amount, \
         block_number, block_hash, state, source, provider, run_id, created_at, \
         state_changed_at, block_time) \
         SELECT v.id, v.chain, v.tx_hash, v.log_index, CAST(v.amount AS DECIMAL(65,0)), v.bn, \
         v.bh, v.state, 'merchant', ?, ?, {TS}, {TS}, v.bt FROM {ADOPTIONS}"
    ))
    .bind(&ctx.provider)
    .bind(ctx.run_id_or_null())
    .bind(now)
    .bind(now)
    .bind(&rows)
    .execute(counted(&mut **tx))
    .await;
    match inserted {
        // Every row it read as free is written: the orders are locked, and a key another
        // transaction wrote since is a 1062 (below), not a row skipped. Checked all the same,
        // in release builds too: the UPDATE below writes amounts these rows must back.
        Ok(done) if done.rows_affected() == written as u64 => {}
        Ok(done) => {
            return Err(WriteError::Miscounted {
                what: "recording the payment keys the shop wrote",
                expected: written as u64,
                written: done.rows_affected(),
            })
        }
        Err(e) if is_unique_violation(&e) => return Ok(HashSet::new()),
        Err(e) => return Err(e.into()),
    }
    sqlx::query(&format!(
        "UPDATE orders o JOIN {ADOPTIONS} ON o.id = v.id AND o.chain = v.chain \
         AND o.tx_hash = v.tx_hash AND o.log_index = v.log_index \
         SET o.amount_paid = CAST(v.amount AS DECIMAL(65,0)), o.block_number = v.bn, \
         o.block_hash = v.bh"
    ))
    .bind(&rows)
    .execute(counted(&mut **tx))
    .await?;
    Ok(free)
}
