//! MariaDB/MySQL: the forward steps of a write batch applied set-wise, as PostgreSQL's
//! `batch.rs` does, when every one goes through: the credits in one `INSERT … SELECT FROM
//! JSON_TABLE`, the orders in one `UPDATE orders … JOIN JSON_TABLE`, the audit rows in one
//! `INSERT … SELECT`, the payments that follow in one UPDATE and the events in one multi-row
//! INSERT. Neither server has `UPDATE … RETURNING` (MySQL no `RETURNING` at all), so what a
//! statement wrote is read back by key in the same transaction, under the row locks
//! `lock_states` took, when the events need it. Where PostgreSQL's UPDATE guards the payment
//! key with `NOT EXISTS` on `orders` (no other order holds it), MySQL would refuse that
//! subquery of the table it writes (error 1093), so the keys are checked first: one SELECT
//! joining the steps to the orders holding their keys, and no two steps attaching one key.
//! Either sends the batch row by row before anything is written. (The key's unique index on
//! `orders` refuses a collision again, as error 1062, where the table has it; a merchant's own
//! `orders` table may not.) Any step that does not go through (a count short, a 1062) rolls the
//! attempt back to its savepoint and the caller applies the steps row by row, so the outcomes
//! never depend on which path ran.

use std::collections::{HashMap, HashSet};

use sqlx::{MySql, Transaction};

use crate::domain::{NewPayment, PlannedTransition, State};
use crate::store::apply::{
    classify, credits_of, in_savepoint, needs_follow, payment_row, transition_events, Step,
};
use crate::store::dialect::Dialect;
use crate::store::outbox::{self, EventOrder, IdAndOrder, NewEvent};
use crate::store::rows::{counted, rank_sql};
use crate::store::{ApplyContext, ApplyOutcome};

use super::TS;

const RETURNING: &str = <MySql as Dialect>::RETURNING;
/// Events per multi-row INSERT: eight binds each, far below the protocol's 65,535.
const EVENTS_PER_INSERT: usize = 1_000;

/// The credits of `credit_all` (`apply::payment_row`, then the order's amount paid before and
/// the payment's source) as table `c`.
const CREDITS: &str = "JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT PATH '$[0]', \
     chain VARCHAR(64) CHARACTER SET ascii PATH '$[1]', \
     tx_hash VARCHAR(128) CHARACTER SET ascii PATH '$[2]', log_index BIGINT PATH '$[3]', \
     amount VARCHAR(80) CHARACTER SET ascii PATH '$[4]', bn BIGINT PATH '$[5]', \
     bh VARCHAR(128) CHARACTER SET ascii PATH '$[6]', \
     state VARCHAR(16) CHARACTER SET ascii PATH '$[7]', bt DATETIME(6) PATH '$[8]', \
     paid_before VARCHAR(80) CHARACTER SET ascii PATH '$[9]', \
     source VARCHAR(32) CHARACTER SET ascii PATH '$[10]', ord FOR ORDINALITY)) c";

/// The steps of `step_rows` as table `t`.
const STEPS: &str = "JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT PATH '$[0]', \
     from_state VARCHAR(16) CHARACTER SET ascii PATH '$[1]', \
     to_state VARCHAR(16) CHARACTER SET ascii PATH '$[2]', to_rank BIGINT PATH '$[3]', \
     att BIGINT PATH '$[4]', chain VARCHAR(64) CHARACTER SET ascii PATH '$[5]', \
     tx_hash VARCHAR(128) CHARACTER SET ascii PATH '$[6]', log_index BIGINT PATH '$[7]', \
     amount VARCHAR(80) CHARACTER SET ascii PATH '$[8]', bn BIGINT PATH '$[9]', \
     bh VARCHAR(128) CHARACTER SET ascii PATH '$[10]', ord FOR ORDINALITY)) t";

/// The outcomes of `batch` when every step moves a distinct order forward and all of them
/// went through; `None` when the caller must apply it row by row (nothing of this attempt is
/// left in the transaction then).
pub(super) async fn try_forward(
    tx: &mut Transaction<'static, MySql>,
    batch: &[PlannedTransition],
    ctx: &ApplyContext,
    now: &str,
    current: &HashMap<i64, String>,
) -> Result<Option<Vec<ApplyOutcome>>, sqlx::Error> {
    let Some(steps) = classify(batch, current) else {
        return Ok(None);
    };
    let from: Option<Vec<State>> = steps
        .iter()
        .map(|s| match s {
            Step::Forward(from) => Some(*from),
            Step::Adopt => None,
        })
        .collect();
    // An adoption left over here is one `adopt_all` did not take: row by row decides it.
    let Some(from) = from else {
        return Ok(None);
    };
    if !keys_free(tx, batch).await? {
        return Ok(None);
    }
    if !in_savepoint!(tx, |sp| write_all(&mut sp, batch, &from, ctx, now)) {
        return Ok(None);
    }
    Ok(Some(
        from.into_iter()
            .map(|from| ApplyOutcome::Applied { from })
            .collect(),
    ))
}

/// Whether every key the batch attaches is free: no two steps attach one key, and no other
/// order holds one (a SELECT, when any step attaches), as `Dialect::key_free` guards a step
/// row by row. Read before the savepoint: a key taken sends the batch row by row, which tells
/// which step it was.
async fn keys_free(
    tx: &mut Transaction<'static, MySql>,
    batch: &[PlannedTransition],
) -> Result<bool, sqlx::Error> {
    let mut keys = HashSet::new();
    for a in batch.iter().filter_map(|t| t.attach.as_ref()) {
        if !keys.insert(&a.key) {
            return Ok(false);
        }
    }
    if keys.is_empty() {
        return Ok(true);
    }
    let rows: Vec<serde_json::Value> = batch
        .iter()
        .filter_map(|t| {
            let a = t.attach.as_ref()?;
            Some(serde_json::json!([
                t.order_id,
                a.key.chain,
                a.key.tx_hash.as_str(),
                a.key.log_index
            ]))
        })
        .collect();
    let held: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT PATH '$[0]', \
         chain VARCHAR(64) CHARACTER SET ascii PATH '$[1]', \
         tx_hash VARCHAR(128) CHARACTER SET ascii PATH '$[2]', log_index BIGINT PATH '$[3]')) k \
         JOIN orders o2 ON o2.chain = k.chain AND o2.tx_hash = k.tx_hash \
         AND o2.log_index = k.log_index AND o2.id <> k.id",
    )
    .bind(serde_json::Value::Array(rows).to_string())
    .fetch_one(counted(&mut **tx))
    .await?;
    Ok(held == 0)
}

/// The credits and their events, then the orders, the audit rows, the payments that follow
/// and the transitions' events; true when every step went through.
async fn write_all(
    sp: &mut Transaction<'_, MySql>,
    batch: &[PlannedTransition],
    from: &[State],
    ctx: &ApplyContext,
    now: &str,
) -> Result<bool, sqlx::Error> {
    let credits = credits_of(batch);
    let mut events = Vec::new();
    if !credits.is_empty() {
        let Some(ids) = credit_all(sp, &credits, ctx, now).await? else {
            return Ok(false);
        };
        if ctx.events {
            // Each payment's event before its order's transition event; none for a key the
            // merchant's code wrote (recorded, not credited).
            for t in batch {
                let Some(p) = t.credit.as_ref().filter(|p| !p.merchant) else {
                    continue;
                };
                let Some(id) = ids.get(&t.order_id) else {
                    return Ok(false);
                };
                events.push(outbox::payment_event(*id, t, p, ctx, now));
            }
        }
    }
    let rows = step_rows(batch, from);
    let n = batch.len();
    let Some(orders) = update_orders(sp, &rows, n, ctx.events, now).await? else {
        return Ok(false);
    };
    let Some(transitions) = insert_transitions(sp, &rows, n, ctx, now).await? else {
        return Ok(false);
    };
    let follow: Vec<serde_json::Value> = batch
        .iter()
        .filter(|t| needs_follow(t))
        .map(|t| serde_json::json!([t.order_id, t.to.as_str()]))
        .collect();
    if !follow.is_empty() {
        follow_all(sp, &follow, now).await?;
    }
    if ctx.events {
        let Some(moved) = transition_events(batch, from, &orders, &transitions, ctx, now) else {
            return Ok(false);
        };
        events.extend(moved);
        insert_events(sp, &events, now).await?;
    }
    Ok(true)
}

/// Every credit of the batch in one `INSERT … SELECT`, each guarded as `payments::credit!`
/// (the order's `amount_paid` and missing key as read, or its own key; no other order holding
/// the key), then, for the events, their ids read back by key (by order id; empty with events
/// off). `None` unless every one was written.
async fn credit_all(
    sp: &mut Transaction<'_, MySql>,
    credits: &[(i64, &NewPayment)],
    ctx: &ApplyContext,
    now: &str,
) -> Result<Option<HashMap<i64, i64>>, sqlx::Error> {
    let rows: Vec<serde_json::Value> = credits
        .iter()
        .map(|(id, p)| {
            let mut row = payment_row::<MySql>(*id, p);
            row.push(p.paid_before.map(|a| a.to_string()).into());
            row.push(crate::store::payments::payment_source(p, ctx).into());
            serde_json::Value::Array(row)
        })
        .collect();
    let rows = serde_json::Value::Array(rows).to_string();
    let written = sqlx::query(&format!(
        "INSERT INTO payrecon_payments (order_id, chain, tx_hash, log_index, amount, \
         block_number, block_hash, state, source, provider, run_id, created_at, \
         state_changed_at, block_time) \
         SELECT c.id, c.chain, c.tx_hash, c.log_index, CAST(c.amount AS DECIMAL(65,0)), c.bn, \
         c.bh, c.state, c.source, ?, ?, {TS}, {TS}, c.bt FROM {CREDITS} \
         WHERE EXISTS (SELECT 1 FROM orders o WHERE o.id = c.id AND ((o.tx_hash IS NULL \
         AND o.amount_paid <=> CAST(c.paid_before AS DECIMAL(65,0))) OR (o.chain = c.chain \
         AND o.tx_hash = c.tx_hash AND o.log_index = c.log_index))) \
         AND NOT EXISTS (SELECT 1 FROM orders o2 WHERE o2.chain = c.chain \
         AND o2.tx_hash = c.tx_hash AND o2.log_index = c.log_index AND o2.id <> c.id) \
         ORDER BY c.ord"
    ))
    .bind(&ctx.provider)
    .bind(ctx.run_id_or_null())
    .bind(now)
    .bind(now)
    .bind(&rows)
    .execute(counted(&mut **sp))
    .await?;
    if written.rows_affected() != credits.len() as u64 {
        return Ok(None);
    }
    if !ctx.events {
        return Ok(Some(HashMap::new()));
    }
    let ids: Vec<(i64, i64)> = sqlx::query_as(&format!(
        "SELECT p.order_id, p.id FROM {CREDITS} JOIN payrecon_payments p \
         ON p.chain = c.chain AND p.tx_hash = c.tx_hash AND p.log_index = c.log_index \
         AND p.order_id = c.id"
    ))
    .bind(&rows)
    .fetch_all(counted(&mut **sp))
    .await?;
    Ok((ids.len() == credits.len()).then(|| ids.into_iter().collect()))
}

/// The steps as JSON rows for `STEPS`: order id, from, to, its rank, whether it attaches,
/// then the attach's chain, tx hash, log index, amount, block number and block hash (null
/// without one).
fn step_rows(batch: &[PlannedTransition], from: &[State]) -> String {
    let rows: Vec<serde_json::Value> = batch
        .iter()
        .zip(from)
        .map(|(t, from)| {
            let a = t.attach.as_ref();
            serde_json::json!([
                t.order_id,
                from.as_str(),
                t.to.as_str(),
                t.to.rank(),
                i64::from(a.is_some()),
                a.map(|a| a.key.chain.as_str()),
                a.map(|a| a.key.tx_hash.as_str()),
                a.map(|a| a.key.log_index),
                a.map(|a| a.amount.to_string()),
                a.map(|a| i64::try_from(a.block.number).unwrap_or(i64::MAX)),
                a.map(|a| a.block.hash.as_str()),
            ])
        })
        .collect();
    serde_json::Value::Array(rows).to_string()
}

/// One UPDATE moving every order of the batch forward (and writing its attach), guarded by
/// rank and by the order's own key (`keys_free` checked the others'); then, when `read_back`
/// (for the events), the orders as it left them, by id. `None` unless it moved all `n`.
async fn update_orders(
    sp: &mut Transaction<'_, MySql>,
    rows: &str,
    n: usize,
    read_back: bool,
    now: &str,
) -> Result<Option<HashMap<i64, EventOrder>>, sqlx::Error> {
    let rank = rank_sql("o.state");
    // `att` picks each column: with MySQL's multiple-table UPDATE the order of assignments is
    // not fixed, so no assignment reads a column another one writes.
    let pick = |col: &str, value: &str| {
        format!("o.{col} = CASE WHEN t.att = 1 THEN {value} ELSE o.{col} END")
    };
    let moved = sqlx::query(&format!(
        "UPDATE orders o JOIN {STEPS} ON o.id = t.id SET o.state = t.to_state, \
         o.state_changed_at = {TS}, {}, {}, {}, {}, {} \
         WHERE {rank} < t.to_rank AND (t.att = 0 OR (o.chain = t.chain AND (o.tx_hash IS NULL \
         OR (o.tx_hash = t.tx_hash AND o.log_index = t.log_index))))",
        pick("tx_hash", "t.tx_hash"),
        pick("log_index", "t.log_index"),
        pick("amount_paid", "CAST(t.amount AS DECIMAL(65,0))"),
        pick("block_number", "t.bn"),
        pick("block_hash", "t.bh"),
    ))
    .bind(rows)
    .bind(now)
    .execute(counted(&mut **sp))
    .await?;
    if moved.rows_affected() != n as u64 {
        return Ok(None);
    }
    if !read_back {
        return Ok(Some(HashMap::new()));
    }
    let orders: Vec<IdAndOrder> = sqlx::query_as(&format!(
        "SELECT o.id, {RETURNING} FROM {STEPS} JOIN orders o ON o.id = t.id"
    ))
    .bind(rows)
    .fetch_all(counted(&mut **sp))
    .await?;
    Ok((orders.len() == n).then(|| orders.into_iter().map(|u| (u.id, u.order)).collect()))
}

/// The audit rows of the batch in one `INSERT … SELECT` (an audited step again is 1062), then,
/// for the events, their ids read back by `(order_id, to_state)`, by order id (empty with
/// events off). `None` unless all `n` were written.
async fn insert_transitions(
    sp: &mut Transaction<'_, MySql>,
    rows: &str,
    n: usize,
    ctx: &ApplyContext,
    now: &str,
) -> Result<Option<HashMap<i64, i64>>, sqlx::Error> {
    let written = sqlx::query(&format!(
        "INSERT INTO payrecon_transitions \
         (order_id, from_state, to_state, source, provider, run_id, created_at) \
         SELECT t.id, t.from_state, t.to_state, ?, ?, ?, {TS} FROM {STEPS} ORDER BY t.ord"
    ))
    .bind(ctx.source.as_str())
    .bind(&ctx.provider)
    .bind(ctx.run_id_or_null())
    .bind(now)
    .bind(rows)
    .execute(counted(&mut **sp))
    .await?;
    if written.rows_affected() != n as u64 {
        return Ok(None);
    }
    if !ctx.events {
        return Ok(Some(HashMap::new()));
    }
    let ids: Vec<(i64, i64)> = sqlx::query_as(&format!(
        "SELECT a.order_id, a.id FROM {STEPS} JOIN payrecon_transitions a \
         ON a.order_id = t.id AND a.to_state = t.to_state"
    ))
    .bind(rows)
    .fetch_all(counted(&mut **sp))
    .await?;
    Ok((ids.len() == n).then(|| ids.into_iter().collect()))
}

/// The orders' other payments follow them (`ApplySql::follow`, for every row `[order id, to
/// state]` at once), up to the order's block.
pub(super) async fn follow_all(
    sp: &mut Transaction<'_, MySql>,
    rows: &[serde_json::Value],
    now: &str,
) -> Result<(), sqlx::Error> {
    let rank = rank_sql("p.state");
    let to_rank = rank_sql("f.to_state");
    sqlx::query(&format!(
        "UPDATE payrecon_payments p JOIN JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT PATH '$[0]', \
         to_state VARCHAR(16) CHARACTER SET ascii PATH '$[1]')) f ON p.order_id = f.id \
         JOIN orders o ON o.id = f.id \
         SET p.state = f.to_state, p.state_changed_at = {TS} \
         WHERE {rank} < {to_rank} AND (p.block_number IS NULL \
         OR p.block_number <= COALESCE(o.block_number, p.block_number))"
    ))
    .bind(serde_json::Value::Array(rows.to_vec()).to_string())
    .bind(now)
    .execute(counted(&mut **sp))
    .await?;
    Ok(())
}

/// The events in multi-row INSERTs of up to `EVENTS_PER_INSERT`, in order.
pub(super) async fn insert_events(
    sp: &mut Transaction<'_, MySql>,
    events: &[NewEvent],
    now: &str,
) -> Result<(), sqlx::Error> {
    for chunk in events.chunks(EVENTS_PER_INSERT) {
        let values = vec![format!("(?, ?, ?, ?, ?, ?, {TS}, {TS})"); chunk.len()].join(", ");
        let sql = format!(
            "INSERT INTO payrecon_events \
             (id, transition_id, payment_id, order_id, type, body, created_at, next_attempt_at) \
             VALUES {values}"
        );
        let mut q = sqlx::query(&sql);
        for e in chunk {
            q = q
                .bind(&e.id)
                .bind(e.transition_id)
                .bind(e.payment_id)
                .bind(e.order_id)
                .bind(e.kind)
                .bind(&e.body)
                .bind(now)
                .bind(now);
        }
        q.execute(counted(&mut **sp)).await?;
    }
    Ok(())
}
