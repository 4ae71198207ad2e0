//! The outbox's delivery side (docs/reference.md §6, "Delivery"): claiming due events (one
//! instance at a time, per-order order) and recording each attempt. The operator's side is
//! `event_list.rs`.
//!
//! An event is *due* when it is pending (neither delivered nor dead), its `next_attempt_at`
//! has come, no live claim holds it, and no earlier event of its order is undelivered. That
//! one rule gives per-order order across instances and lets every other order proceed.

use std::time::Duration;

use jiff::Timestamp;

use super::backend::dispatch;
use super::due::waiting_sql;
use super::rows::{db_error, sqlite_ts};
use super::types::{Attempt, ClaimedEvent};
use super::{Store, StoreError};

impl Store {
    /// Claims up to `limit` due events for `holder` until `now + lease`, oldest due first.
    /// SQLite: one UPDATE (one writer at a time); PostgreSQL: `FOR UPDATE SKIP LOCKED`, so
    /// instances claiming at once take disjoint events.
    pub async fn claim_events(
        &self,
        holder: &str,
        now: Timestamp,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<ClaimedEvent>, StoreError> {
        let until = now + jiff::SignedDuration::try_from(lease).unwrap_or_default();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = dispatch!(self, p => D::claim_events(p, holder, now, until, limit).await)
            .map_err(|e| db_error("claim events to deliver", e))?;
        Ok(rows
            .into_iter()
            .map(|(id, order_id, body, attempts)| ClaimedEvent {
                id,
                order_id,
                body,
                attempts,
            })
            .collect())
    }

    /// Records one attempt of event `id` and releases the claim, only while `holder` still
    /// holds it and the event is pending: a late answer never undoes another instance's
    /// delivery, and a 2xx from before a replay never marks the replayed event delivered.
    pub async fn record_attempt(
        &self,
        id: &str,
        holder: &str,
        now: Timestamp,
        attempt: &Attempt,
    ) -> Result<(), StoreError> {
        let (status, error, next, dead) = match attempt {
            Attempt::Delivered { status } => (Some(*status), None, None, false),
            Attempt::Retry {
                status,
                error,
                next,
            } => (*status, Some(error.as_str()), Some(*next), false),
            Attempt::Dead { status, error } => (*status, Some(error.as_str()), None, true),
        };
        let status = status.map(i32::from);
        let now_s = sqlite_ts(now);
        dispatch!(self, pool => {
        let p = D::p;
        let res = if let Attempt::Delivered { .. } = attempt {
            // Only while this holder's claim stands: a 2xx that comes back after a replay
            // released the claim must not mark the replayed event delivered unsent.
            let sql = format!(
                "UPDATE payrecon_events SET attempts = attempts + 1, delivered_at = {}, \
                 last_status = {}, last_error = NULL, dead_at = NULL, claimed_by = NULL, \
                 claimed_until = NULL WHERE id = {} AND claimed_by = {} AND delivered_at IS NULL",
                D::ts(1),
                p(2),
                p(3),
                p(4)
            );
            sqlx::query(&sql)
                    .bind(&now_s)
                    .bind(status)
                    .bind(id)
                    .bind(holder)
                    .execute(pool)
                    .await
                    .map(|r| r.rows_affected())
        } else {
            // Dead: `next_attempt_at` stays (a replay sets it); retry: the next attempt.
            let next_s = next.map(sqlite_ts);
            let dead_at = dead.then(|| now_s.clone());
            let sql = format!(
                "UPDATE payrecon_events SET attempts = attempts + 1, last_status = {}, \
                 last_error = {}, next_attempt_at = COALESCE({}, next_attempt_at), \
                 dead_at = {}, claimed_by = NULL, claimed_until = NULL \
                 WHERE id = {} AND claimed_by = {} AND delivered_at IS NULL AND dead_at IS NULL",
                p(1),
                p(2),
                D::ts(3),
                D::ts(4),
                p(5),
                p(6)
            );
            sqlx::query(&sql)
                    .bind(status)
                    .bind(error)
                    .bind(&next_s)
                    .bind(&dead_at)
                    .bind(id)
                    .bind(holder)
                    .execute(pool)
                    .await
                    .map(|r| r.rows_affected())
        };
        res.map_err(|e| db_error("record an event delivery attempt", e))?;
        Ok(())
        })
    }

    /// When the next event that is not due yet becomes due (`None`: no such event).
    pub async fn next_due_at(&self, now: Timestamp) -> Result<Option<Timestamp>, StoreError> {
        let at: Option<String> = dispatch!(self, p => {
            sqlx::query_scalar(&format!(
                "SELECT {} FROM payrecon_events e WHERE {}",
                D::ts_text("MIN(e.next_attempt_at)"),
                waiting_sql(&D::ts(1))
            ))
            .bind(sqlite_ts(now))
            .fetch_one(p)
            .await
        })
        .map_err(|e| db_error("read when the next event is due", e))?;
        Ok(at.and_then(|t| t.parse().ok()))
    }
}
