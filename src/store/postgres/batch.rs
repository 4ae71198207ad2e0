//! PostgreSQL: a write batch applied set-wise, one `UPDATE ... FROM UNNEST` and one audit
//! `INSERT ... SELECT FROM UNNEST`, when every transition of the batch goes through. When one
//! does not (a state moved on, an audit row already there, a payment key taken, the same order
//! twice), the attempt is rolled back to its savepoint and the caller applies the batch row by
//! row, so the outcomes never depend on which path ran. The rows stay locked (`FOR UPDATE`,
//! taken before the savepoint) between the two.

use std::collections::HashMap;

use sqlx::{Postgres, Transaction};

use crate::domain::{Attach, NewPayment, PlannedTransition, State};
use crate::store::apply::{classify, credits_of, in_savepoint, transition_events, Step};
use crate::store::dialect::Dialect;
use crate::store::outbox::{self, IdAndOrder, NewEvent};
use crate::store::rows::{counted, rank_sql};
use crate::store::{ApplyContext, ApplyOutcome};

const RETURNING: &str = <Postgres as Dialect>::RETURNING;

/// The outcomes of `batch` in order, or `None` when the caller must apply it row by row
/// (nothing of this attempt is left in the transaction then).
pub(super) async fn try_apply(
    tx: &mut Transaction<'static, Postgres>,
    batch: &[PlannedTransition],
    ctx: &ApplyContext,
    now: &str,
    current: &HashMap<i64, String>,
) -> Result<Option<Vec<ApplyOutcome>>, sqlx::Error> {
    let Some(steps) = classify(batch, current) else {
        return Ok(None);
    };
    if !in_savepoint!(tx, |sp| write_all(&mut sp, batch, &steps, ctx, now)) {
        return Ok(None);
    }
    Ok(Some(
        steps
            .into_iter()
            .map(|step| match step {
                Step::Forward(from) => ApplyOutcome::Applied { from },
                Step::Adopt => ApplyOutcome::Attached,
            })
            .collect(),
    ))
}

/// The credits, then the forward steps (`write`) and the adoptions (`adopt`); true when every
/// step went through.
async fn write_all(
    sp: &mut Transaction<'_, Postgres>,
    batch: &[PlannedTransition],
    steps: &[Step],
    ctx: &ApplyContext,
    now: &str,
) -> Result<bool, sqlx::Error> {
    // Credits first: each is guarded by the order's amount_paid and missing key, as read (or
    // by the order's own key, for an adoption).
    let credits = credits_of(batch);
    if !credits.is_empty() {
        let ids = credit_all(sp, &credits, ctx, now).await?;
        if ids.len() != credits.len() {
            return Ok(false);
        }
        if ctx.events {
            // Each payment's event before its order's transition event; none for a key the
            // merchant's code wrote (recorded, not credited).
            let events: Vec<NewEvent> = batch
                .iter()
                .filter_map(|t| {
                    let p = t.credit.as_ref().filter(|p| !p.merchant)?;
                    let id = ids.get(&t.order_id)?;
                    Some(outbox::payment_event(*id, t, p, ctx, now))
                })
                .collect();
            insert_events(sp, &events, now).await?;
        }
    }
    let mut forward = Vec::new();
    let mut from = Vec::new();
    let mut adopted = Vec::new();
    for (t, step) in batch.iter().zip(steps) {
        match step {
            Step::Forward(s) => {
                forward.push(t.clone());
                from.push(*s);
            }
            Step::Adopt => adopted.push(t),
        }
    }
    if !adopted.is_empty() && !adopt(sp, &adopted).await? {
        return Ok(false);
    }
    Ok(forward.is_empty() || write(sp, &forward, &from, ctx, now).await?)
}

/// Writes the chain's amount and block on the orders whose key the merchant's code wrote, in
/// one `UPDATE ... FROM UNNEST` guarded by that key; true when it took every one.
async fn adopt(
    sp: &mut Transaction<'_, Postgres>,
    adopted: &[&PlannedTransition],
) -> Result<bool, sqlx::Error> {
    let attaches: Vec<(i64, &Attach)> = adopted
        .iter()
        .filter_map(|t| Some((t.order_id, t.attach.as_ref()?)))
        .collect();
    if attaches.len() != adopted.len() {
        return Ok(false);
    }
    let col = |f: fn(&Attach) -> String| column(&attaches, f);
    let ids: Vec<i64> = attaches.iter().map(|(id, _)| *id).collect();
    let log_indexes = column(&attaches, |a| a.key.log_index);
    let blocks = column(&attaches, |a| crate::store::sweep::block_number(&a.block));
    let res = sqlx::query(
        "UPDATE orders o SET amount_paid = v.amount::numeric, block_number = v.block_number, \
         block_hash = v.block_hash \
         FROM UNNEST($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::text[], \
         $6::bigint[], $7::text[]) \
         AS v(id, chain, tx_hash, log_index, amount, block_number, block_hash) \
         WHERE o.id = v.id AND o.chain = v.chain AND o.tx_hash = v.tx_hash \
         AND o.log_index = v.log_index",
    )
    .bind(&ids)
    .bind(col(|a| a.key.chain.clone()))
    .bind(col(|a| a.key.tx_hash.as_str().to_string()))
    .bind(&log_indexes)
    .bind(col(|a| a.amount.to_string()))
    .bind(&blocks)
    .bind(col(|a| a.block.hash.clone()))
    .execute(counted(&mut **sp))
    .await?;
    Ok(res.rows_affected() == adopted.len() as u64)
}

/// The set-wise transitions of `batch` (the order's state before each in `from`): the
/// orders' UPDATE, the audit rows, the payments that follow, the events. False when any row
/// did not take its step (the caller goes row by row instead).
async fn write(
    sp: &mut Transaction<'_, Postgres>,
    batch: &[PlannedTransition],
    from: &[State],
    ctx: &ApplyContext,
    now: &str,
) -> Result<bool, sqlx::Error> {
    let updated = update_orders(sp, batch, now).await?;
    if updated.len() != batch.len() {
        return Ok(false);
    }
    let inserted = insert_transitions(sp, batch, from, ctx, now).await?;
    if inserted.len() != batch.len() {
        return Ok(false);
    }
    let follow: Vec<(i64, &str)> = batch
        .iter()
        .filter(|t| crate::store::apply::needs_follow(t))
        .map(|t| (t.order_id, t.to.as_str()))
        .collect();
    if !follow.is_empty() {
        let (ids, to): (Vec<i64>, Vec<&str>) = follow.into_iter().unzip();
        follow_all(sp, &ids, &to, now).await?;
    }
    if !ctx.events {
        return Ok(true);
    }
    let orders = updated.into_iter().map(|u| (u.id, u.order)).collect();
    let transitions = inserted.into_iter().collect();
    let Some(events) = transition_events(batch, from, &orders, &transitions, ctx, now) else {
        return Ok(false);
    };
    insert_events(sp, &events, now).await?;
    Ok(true)
}

/// One UPDATE moving every order of `batch` forward (and writing its attach when its key is
/// free): the orders as it left them.
async fn update_orders(
    sp: &mut Transaction<'_, Postgres>,
    batch: &[PlannedTransition],
    now: &str,
) -> Result<Vec<IdAndOrder>, sqlx::Error> {
    // A text column of the attach, NULL for transitions without one.
    let attach = |f: fn(&Attach) -> String| -> Vec<Option<String>> {
        batch.iter().map(|t| t.attach.as_ref().map(f)).collect()
    };
    let ids: Vec<i64> = batch.iter().map(|t| t.order_id).collect();
    let to_states: Vec<&str> = batch.iter().map(|t| t.to.as_str()).collect();
    let to_ranks: Vec<i64> = batch.iter().map(|t| t.to.rank()).collect();
    let attaches: Vec<bool> = batch.iter().map(|t| t.attach.is_some()).collect();
    let log_indexes: Vec<Option<i64>> = batch
        .iter()
        .map(|t| t.attach.as_ref().map(|a| a.key.log_index))
        .collect();
    let block_numbers: Vec<Option<i64>> = batch
        .iter()
        .map(|t| {
            t.attach
                .as_ref()
                .map(|a| i64::try_from(a.block.number).unwrap_or(i64::MAX))
        })
        .collect();
    let rank = rank_sql("o.state");
    let cols = RETURNING;
    sqlx::query_as::<_, IdAndOrder>(&format!(
        "UPDATE orders o SET state = t.to_state, state_changed_at = $11::timestamptz, \
         tx_hash = CASE WHEN t.attach THEN t.tx_hash ELSE o.tx_hash END, \
         log_index = CASE WHEN t.attach THEN t.log_index ELSE o.log_index END, \
         amount_paid = CASE WHEN t.attach THEN t.amount::numeric ELSE o.amount_paid END, \
         block_number = CASE WHEN t.attach THEN t.block_number ELSE o.block_number END, \
         block_hash = CASE WHEN t.attach THEN t.block_hash ELSE o.block_hash END \
         FROM UNNEST($1::bigint[], $2::text[], $3::bigint[], $4::bool[], $5::text[], \
         $6::bigint[], $7::text[], $8::bigint[], $9::text[], $10::text[]) \
         AS t(id, to_state, to_rank, attach, tx_hash, log_index, amount, block_number, \
         block_hash, chain) \
         WHERE o.id = t.id AND {rank} < t.to_rank AND (NOT t.attach OR (o.chain = t.chain \
         AND (o.tx_hash IS NULL OR (o.tx_hash = t.tx_hash AND o.log_index = t.log_index)) \
         AND NOT EXISTS (SELECT 1 FROM orders o2 WHERE o2.chain = t.chain \
         AND o2.tx_hash = t.tx_hash AND o2.log_index = t.log_index AND o2.id <> o.id))) \
         RETURNING o.id, {cols}"
    ))
    .bind(&ids)
    .bind(&to_states)
    .bind(&to_ranks)
    .bind(&attaches)
    .bind(attach(|a| a.key.tx_hash.as_str().to_string()))
    .bind(&log_indexes)
    .bind(attach(|a| a.amount.to_string()))
    .bind(&block_numbers)
    .bind(attach(|a| a.block.hash.clone()))
    .bind(attach(|a| a.key.chain.clone()))
    .bind(now)
    .fetch_all(counted(&mut **sp))
    .await
}

/// The audit rows of `batch` in one INSERT: `(order id, transition id)` of each written.
async fn insert_transitions(
    sp: &mut Transaction<'_, Postgres>,
    batch: &[PlannedTransition],
    from: &[State],
    ctx: &ApplyContext,
    now: &str,
) -> Result<Vec<(i64, i64)>, sqlx::Error> {
    let ids: Vec<i64> = batch.iter().map(|t| t.order_id).collect();
    let from_states: Vec<&str> = from.iter().map(|s| s.as_str()).collect();
    let to_states: Vec<&str> = batch.iter().map(|t| t.to.as_str()).collect();
    sqlx::query_as::<_, (i64, i64)>(
        "INSERT INTO payrecon_transitions \
         (order_id, from_state, to_state, source, provider, run_id, created_at) \
         SELECT t.id, t.from_state, t.to_state, $4, $5, $6, $7::timestamptz \
         FROM UNNEST($1::bigint[], $2::text[], $3::text[]) AS t(id, from_state, to_state) \
         ON CONFLICT (order_id, to_state) DO NOTHING RETURNING order_id, id",
    )
    .bind(&ids)
    .bind(&from_states)
    .bind(&to_states)
    .bind(ctx.source.as_str())
    .bind(&ctx.provider)
    .bind(ctx.run_id_or_null())
    .bind(now)
    .fetch_all(counted(&mut **sp))
    .await
}

/// Credits every payment of the batch in one INSERT, each guarded like `payments::credit!`;
/// the id of each payment written, by order (a batch here has one step per order).
async fn credit_all(
    sp: &mut Transaction<'_, Postgres>,
    credits: &[(i64, &NewPayment)],
    ctx: &ApplyContext,
    now: &str,
) -> Result<HashMap<i64, i64>, sqlx::Error> {
    let col = |f: fn(&NewPayment) -> String| column(credits, f);
    let ids: Vec<i64> = credits.iter().map(|(id, _)| *id).collect();
    let log_indexes = column(credits, |p| p.key.log_index);
    let blocks = column(credits, |p| crate::store::sweep::block_number(&p.block));
    let before = column(credits, |p| p.paid_before.map(|a| a.to_string()));
    let times = column(credits, |p| p.block_time.map(|t| t.to_string()));
    let written: Vec<(i64, i64)> = sqlx::query_as(
        "INSERT INTO payrecon_payments (order_id, chain, tx_hash, log_index, amount, \
         block_number, block_hash, state, source, provider, run_id, created_at, state_changed_at, \
         block_time) \
         SELECT c.id, c.chain, c.tx_hash, c.log_index, c.amount::numeric, c.block_number, \
         c.block_hash, c.state, c.source, $11, $12, $13::timestamptz, $13::timestamptz, \
         c.block_time::timestamptz \
         FROM UNNEST($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::text[], \
         $6::bigint[], $7::text[], $8::text[], $9::text[], $14::text[], $10::text[]) \
         AS c(id, chain, tx_hash, log_index, amount, block_number, block_hash, state, before, \
         block_time, source) \
         WHERE EXISTS (SELECT 1 FROM orders o WHERE o.id = c.id AND ((o.tx_hash IS NULL \
         AND o.amount_paid IS NOT DISTINCT FROM c.before::numeric) OR (o.chain = c.chain \
         AND o.tx_hash = c.tx_hash AND o.log_index = c.log_index))) AND NOT EXISTS (SELECT 1 \
         FROM orders o2 WHERE o2.chain = c.chain AND o2.tx_hash = c.tx_hash \
         AND o2.log_index = c.log_index AND o2.id <> c.id) \
         ON CONFLICT (chain, tx_hash, log_index) DO NOTHING RETURNING order_id, id",
    )
    .bind(&ids)
    .bind(col(|p| p.key.chain.clone()))
    .bind(col(|p| p.key.tx_hash.as_str().to_string()))
    .bind(&log_indexes)
    .bind(col(|p| p.amount.to_string()))
    .bind(&blocks)
    .bind(col(|p| p.block.hash.clone()))
    .bind(col(|p| p.state.as_str().to_string()))
    .bind(&before)
    .bind(
        credits
            .iter()
            .map(|(_, p)| crate::store::payments::payment_source(p, ctx))
            .collect::<Vec<&str>>(),
    )
    .bind(&ctx.provider)
    .bind(ctx.run_id_or_null())
    .bind(now)
    .bind(&times)
    .fetch_all(counted(&mut **sp))
    .await?;
    Ok(written.into_iter().collect())
}

/// One column of `(order id, item)` pairs, for an `UNNEST` bind.
fn column<T, V>(items: &[(i64, &T)], f: impl Fn(&T) -> V) -> Vec<V> {
    items.iter().map(|(_, x)| f(x)).collect()
}

pub(super) async fn follow_all(
    sp: &mut Transaction<'_, Postgres>,
    order_ids: &[i64],
    to: &[&str],
    now: &str,
) -> Result<(), sqlx::Error> {
    let rank = rank_sql("p.state");
    let to_rank = rank_sql("t.to_state");
    sqlx::query(&format!(
        "UPDATE payrecon_payments p SET state = t.to_state, state_changed_at = $3::timestamptz \
         FROM UNNEST($1::bigint[], $2::text[]) AS t(id, to_state) JOIN orders o ON o.id = t.id \
         WHERE p.order_id = t.id AND {rank} < {to_rank} \
         AND (p.block_number IS NULL OR p.block_number <= COALESCE(o.block_number, p.block_number))"
    ))
    .bind(order_ids)
    .bind(to)
    .bind(now)
    .execute(counted(&mut **sp))
    .await?;
    Ok(())
}

/// One statement for any number of events (the set-wise batch and row by row alike).
pub(super) async fn insert_events(
    tx: &mut Transaction<'_, Postgres>,
    events: &[NewEvent],
    now: &str,
) -> Result<(), sqlx::Error> {
    if events.is_empty() {
        return Ok(());
    }
    let ids: Vec<&str> = events.iter().map(|e| e.id.as_str()).collect();
    let transitions: Vec<Option<i64>> = events.iter().map(|e| e.transition_id).collect();
    let payments: Vec<Option<i64>> = events.iter().map(|e| e.payment_id).collect();
    let orders: Vec<i64> = events.iter().map(|e| e.order_id).collect();
    let kinds: Vec<&str> = events.iter().map(|e| e.kind).collect();
    let bodies: Vec<&str> = events.iter().map(|e| e.body.as_str()).collect();
    sqlx::query(
        "INSERT INTO payrecon_events \
         (id, transition_id, payment_id, order_id, type, body, created_at, next_attempt_at) \
         SELECT t.id, t.transition_id, t.payment_id, t.order_id, t.type, t.body, \
         $6::timestamptz, $6::timestamptz FROM UNNEST($1::text[], $2::bigint[], \
         $7::bigint[], $3::bigint[], $4::text[], $5::text[]) WITH ORDINALITY \
         AS t(id, transition_id, payment_id, order_id, type, body, ord) ORDER BY t.ord",
    )
    .bind(&ids)
    .bind(&transitions)
    .bind(&orders)
    .bind(&kinds)
    .bind(&bodies)
    .bind(now)
    .bind(&payments)
    .execute(counted(&mut **tx))
    .await?;
    Ok(())
}
