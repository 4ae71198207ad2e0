//! The statements of Postgres's write batch (`ApplySql`; the batch itself is `store::apply::apply_batch`).

use std::collections::HashMap;

use sqlx::{Postgres, Transaction};

use crate::domain::{NewPayment, PlannedTransition, State};
use crate::store::apply::{advance, record_transition, ApplySql};
use crate::store::dialect::Dialect;
use crate::store::outbox::{EventOrder, NewEvent};
use crate::store::rows::{counted, rank_sql};
use crate::store::WriteError;
use crate::store::{ApplyContext, ApplyOutcome, Fence, FindingRow};

const RETURNING: &str = <Postgres as Dialect>::RETURNING;

impl ApplySql for Postgres {
    crate::store::apply::shared_apply_sql!(Postgres);

    async fn check_fence(
        tx: &mut Transaction<'static, Postgres>,
        fence: &Fence,
    ) -> Result<(), WriteError> {
        let ok: Option<i32> = sqlx::query_scalar(
            "SELECT 1 FROM payrecon_leases WHERE provider = $1 AND holder = $2 AND token = $3 \
             AND expires_at > now() FOR SHARE",
        )
        .bind(&fence.provider)
        .bind(&fence.holder)
        .bind(fence.token)
        .fetch_optional(counted(&mut **tx))
        .await?;
        ok.map(|_| ()).ok_or(WriteError::Fenced)
    }

    async fn lock_states(
        tx: &mut Transaction<'static, Postgres>,
        ids: &[i64],
    ) -> Result<Vec<(i64, String)>, sqlx::Error> {
        sqlx::query_as("SELECT id, state FROM orders WHERE id = ANY($1) ORDER BY id FOR UPDATE")
            .bind(ids)
            .fetch_all(counted(&mut **tx))
            .await
    }

    async fn open_exceptions(
        tx: &mut Transaction<'static, Postgres>,
        by: &str,
        rows: &[FindingRow],
        ids: &HashMap<&str, i64>,
    ) -> Result<(), sqlx::Error> {
        let id_of = |r: &str| ids.get(r).copied();
        crate::store::exceptions::upsert!(
            Postgres,
            *tx,
            by,
            rows,
            <Postgres as Dialect>::NOW,
            id_of
        )
    }

    async fn apply_set(
        tx: &mut Transaction<'static, Postgres>,
        batch: &[PlannedTransition],
        ctx: &ApplyContext,
        now: &str,
        current: &HashMap<i64, String>,
    ) -> Result<Vec<Option<ApplyOutcome>>, sqlx::Error> {
        Ok(
            match super::batch::try_apply(tx, batch, ctx, now, current).await? {
                Some(out) => out.into_iter().map(Some).collect(),
                None => vec![None; batch.len()],
            },
        )
    }

    async fn credit(
        sp: &mut Transaction<'_, Postgres>,
        order_id: i64,
        p: &NewPayment,
        ctx: &ApplyContext,
        now: &str,
    ) -> Result<Option<i64>, sqlx::Error> {
        crate::store::payments::credit!(Postgres, sp, order_id, p, ctx, now)
    }

    async fn follow(
        sp: &mut Transaction<'_, Postgres>,
        order_id: i64,
        to: State,
        now: &str,
    ) -> Result<(), sqlx::Error> {
        super::batch::follow_all(sp, &[order_id], &[to.as_str()], now).await
    }

    async fn advance(
        sp: &mut Transaction<'_, Postgres>,
        t: &PlannedTransition,
        now: &str,
    ) -> Result<Option<EventOrder>, sqlx::Error> {
        let rank = rank_sql("state");
        let cols = RETURNING;
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
        super::batch::insert_events(sp, std::slice::from_ref(event), now).await
    }
}
