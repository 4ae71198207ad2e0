//! The statements of Postgres's write batch (`ApplySql`; the batch itself is `store::apply::apply_batch`).

use std::collections::HashMap;

use sqlx::{Postgres, Transaction};

use crate::domain::{PlannedTransition, State};
use crate::store::apply::ApplySql;
use crate::store::outbox::NewEvent;
use crate::store::rows::counted;
use crate::store::WriteError;
use crate::store::{ApplyContext, ApplyOutcome, Fence};

impl ApplySql for Postgres {
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

    async fn apply_set(
        tx: &mut Transaction<'static, Postgres>,
        batch: &[PlannedTransition],
        ctx: &ApplyContext,
        now: &str,
        current: &HashMap<i64, String>,
    ) -> Result<Vec<Option<ApplyOutcome>>, WriteError> {
        Ok(
            match super::batch::try_apply(tx, batch, ctx, now, current).await? {
                Some(out) => out.into_iter().map(Some).collect(),
                None => vec![None; batch.len()],
            },
        )
    }

    async fn follow(
        sp: &mut Transaction<'_, Postgres>,
        order_id: i64,
        to: State,
        now: &str,
    ) -> Result<(), sqlx::Error> {
        super::batch::follow_all(sp, &[order_id], &[to.as_str()], now).await
    }

    async fn insert_event(
        sp: &mut Transaction<'_, Postgres>,
        event: &NewEvent,
        now: &str,
    ) -> Result<(), sqlx::Error> {
        super::batch::insert_events(sp, std::slice::from_ref(event), now).await
    }
}
