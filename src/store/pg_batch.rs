//! PostgreSQL: a write batch applied set-wise, one `UPDATE ... FROM UNNEST` and one audit
//! `INSERT ... SELECT FROM UNNEST`, when every transition of the batch goes through. When one
//! does not (a state moved on, an audit row already there, a payment key taken, the same order
//! twice), the attempt is rolled back to its savepoint and the caller applies the batch row by
//! row, so the outcomes never depend on which path ran. The rows stay locked (`FOR UPDATE`,
//! taken before the savepoint) between the two.

use std::collections::{HashMap, HashSet};

use sqlx::{Acquire, Postgres, Transaction};

use super::rows::{counted, rank_sql};
use super::{is_unique_violation, ApplyContext, ApplyOutcome};
use crate::domain::{PlannedTransition, State};

/// The outcomes of `batch` in order, or `None` when the caller must apply it row by row
/// (nothing of this attempt is left in the transaction then).
pub(super) async fn try_apply(
    tx: &mut Transaction<'static, Postgres>,
    batch: &[PlannedTransition],
    ctx: &ApplyContext,
    now: &str,
    current: &HashMap<i64, String>,
) -> Result<Option<Vec<ApplyOutcome>>, sqlx::Error> {
    let Some(from) = all_forward(batch, current) else {
        return Ok(None);
    };
    let n = batch.len();
    let mut a = Arrays::with_capacity(n);
    for t in batch {
        a.push(t);
    }
    let mut sp = Acquire::begin(counted(&mut *tx)).await?;
    let rank = rank_sql("o.state");
    let updated = sqlx::query_scalar::<_, i64>(&format!(
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
         RETURNING o.id"
    ))
    .bind(&a.ids)
    .bind(&a.to_states)
    .bind(&a.to_ranks)
    .bind(&a.attach)
    .bind(&a.tx_hashes)
    .bind(&a.log_indexes)
    .bind(&a.amounts)
    .bind(&a.block_numbers)
    .bind(&a.block_hashes)
    .bind(&a.chains)
    .bind(now)
    .fetch_all(counted(&mut *sp))
    .await;
    let updated = match updated {
        Ok(ids) => ids,
        // Two transitions of the batch attaching one key, or a key another row holds.
        Err(e) if is_unique_violation(&e) => {
            counted(sp).rollback().await?;
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    if updated.len() != n {
        counted(sp).rollback().await?;
        return Ok(None);
    }
    let from_states: Vec<&str> = from.iter().map(|s| s.as_str()).collect();
    let inserted = sqlx::query_scalar::<_, i64>(
        "INSERT INTO payrecon_transitions \
         (order_id, from_state, to_state, source, provider, run_id, created_at) \
         SELECT t.id, t.from_state, t.to_state, $4, $5, $6, $7::timestamptz \
         FROM UNNEST($1::bigint[], $2::text[], $3::text[]) AS t(id, from_state, to_state) \
         ON CONFLICT (order_id, to_state) DO NOTHING RETURNING order_id",
    )
    .bind(&a.ids)
    .bind(&from_states)
    .bind(&a.to_states)
    .bind(ctx.source.as_str())
    .bind(&ctx.provider)
    .bind(ctx.run_id_or_null())
    .bind(now)
    .fetch_all(counted(&mut *sp))
    .await?;
    if inserted.len() != n {
        // (order, to_state) applied before (the row has been moved back since): row by row,
        // which undoes just that one.
        counted(sp).rollback().await?;
        return Ok(None);
    }
    counted(sp).commit().await?;
    Ok(Some(
        from.into_iter()
            .map(|from| ApplyOutcome::Applied { from })
            .collect(),
    ))
}

/// The locked state of each order when every transition moves a distinct order forward and
/// none is an attach-only one; `None` otherwise (the row-by-row path decides those).
fn all_forward(batch: &[PlannedTransition], current: &HashMap<i64, String>) -> Option<Vec<State>> {
    if batch.len() < 2 {
        return None;
    }
    let mut ids = HashSet::with_capacity(batch.len());
    let mut from = Vec::with_capacity(batch.len());
    for t in batch {
        if !ids.insert(t.order_id) || (t.attach.is_some() && t.from == t.to) {
            return None;
        }
        let s = State::parse(current.get(&t.order_id)?).ok()?;
        if s >= t.to {
            return None;
        }
        from.push(s);
    }
    Some(from)
}

/// The batch as columns, for `UNNEST`.
struct Arrays<'a> {
    ids: Vec<i64>,
    to_states: Vec<&'static str>,
    to_ranks: Vec<i64>,
    attach: Vec<bool>,
    tx_hashes: Vec<Option<&'a str>>,
    log_indexes: Vec<Option<i64>>,
    amounts: Vec<Option<String>>,
    block_numbers: Vec<Option<i64>>,
    block_hashes: Vec<Option<&'a str>>,
    chains: Vec<Option<&'a str>>,
}

impl<'a> Arrays<'a> {
    fn with_capacity(n: usize) -> Arrays<'a> {
        Arrays {
            ids: Vec::with_capacity(n),
            to_states: Vec::with_capacity(n),
            to_ranks: Vec::with_capacity(n),
            attach: Vec::with_capacity(n),
            tx_hashes: Vec::with_capacity(n),
            log_indexes: Vec::with_capacity(n),
            amounts: Vec::with_capacity(n),
            block_numbers: Vec::with_capacity(n),
            block_hashes: Vec::with_capacity(n),
            chains: Vec::with_capacity(n),
        }
    }

    fn push(&mut self, t: &'a PlannedTransition) {
        self.ids.push(t.order_id);
        self.to_states.push(t.to.as_str());
        self.to_ranks.push(t.to.rank());
        self.attach.push(t.attach.is_some());
        let a = t.attach.as_ref();
        self.tx_hashes.push(a.map(|a| a.key.tx_hash.as_str()));
        self.log_indexes.push(a.map(|a| a.key.log_index));
        self.amounts.push(a.map(|a| a.amount.to_string()));
        self.block_numbers
            .push(a.map(|a| i64::try_from(a.block.number).unwrap_or(i64::MAX)));
        self.block_hashes.push(a.map(|a| a.block.hash.as_str()));
        self.chains.push(a.map(|a| a.key.chain.as_str()));
    }
}
