//! The outbox read side (SPEC §10): claiming due events for delivery (one instance at a time,
//! per-order order), recording each attempt, and the operator's list, replay and counts.
//!
//! An event is *due* when it is pending (neither delivered nor dead), its `next_attempt_at`
//! has come, no live claim holds it, and no earlier event of its order is undelivered. That
//! one rule gives per-order order across instances and lets every other order proceed.

use std::time::Duration;

use jiff::Timestamp;
use serde::Serialize;

use super::rows::{db_error, sqlite_ts};
use super::{Store, StoreError};

/// An event claimed for one delivery attempt.
#[derive(Debug, Clone)]
pub struct ClaimedEvent {
    pub id: String,
    pub order_id: i64,
    pub body: String,
    /// Attempts made before this one.
    pub attempts: i64,
}

/// What one attempt came to.
#[derive(Debug, Clone)]
pub enum Attempt {
    /// A 2xx within the timeout.
    Delivered { status: u16 },
    /// Failed; the next attempt is at `next`.
    Retry {
        status: Option<u16>,
        error: String,
        next: Timestamp,
    },
    /// Failed after the last delay of the schedule: kept as dead until replayed.
    Dead { status: Option<u16>, error: String },
}

/// One row of `payrecon events`.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct EventRow {
    pub id: String,
    pub order_ref: Option<String>,
    pub order_id: i64,
    #[serde(rename = "type")]
    pub kind: String,
    /// `pending` | `delivered` | `dead`.
    pub status: String,
    pub attempts: i64,
    pub created_at: String,
    pub next_attempt_at: Option<String>,
    pub delivered_at: Option<String>,
    pub dead_at: Option<String>,
    pub last_status: Option<i64>,
    pub last_error: Option<String>,
}

/// Filters of `payrecon events` (and which events `replay` takes).
#[derive(Debug, Clone, Default)]
pub struct EventFilter {
    /// `pending` | `delivered` | `dead`.
    pub status: Option<String>,
    pub order_ref: Option<String>,
    pub id: Option<String>,
    /// Events written at or after this time.
    pub since: Option<Timestamp>,
    pub limit: i64,
}

/// Pending and dead counts, and the oldest pending event's creation time.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct EventCounts {
    pub pending: i64,
    pub dead: i64,
    pub oldest_pending: Option<String>,
}

const PENDING: &str = "e.delivered_at IS NULL AND e.dead_at IS NULL";

/// `WHERE` of the due rule, binding `now` as parameter `now`.
fn due_sql(now: &str) -> String {
    format!("e.next_attempt_at <= {now} AND {}", waiting_sql(now))
}

/// Pending, not claimed by a live claim, and first undelivered of its order: due once its
/// `next_attempt_at` comes.
fn waiting_sql(now: &str) -> String {
    format!(
        "{PENDING} AND (e.claimed_until IS NULL OR e.claimed_until < {now}) \
         AND NOT EXISTS (SELECT 1 FROM payrecon_events p WHERE p.order_id = e.order_id \
         AND p.transition_id < e.transition_id AND p.delivered_at IS NULL)"
    )
}

/// `WHERE` of a filter: the clauses and their text binds, in order (`?` / `$n` by backend).
fn filter_sql(f: &EventFilter, pg: bool) -> (String, Vec<String>) {
    let mut clauses = Vec::new();
    let mut binds = Vec::new();
    let bind = |v: String, binds: &mut Vec<String>| {
        binds.push(v);
        if pg {
            format!("${}", binds.len())
        } else {
            format!("?{}", binds.len())
        }
    };
    match f.status.as_deref() {
        Some("pending") => clauses.push(PENDING.to_string()),
        Some("delivered") => clauses.push("e.delivered_at IS NOT NULL".into()),
        Some("dead") => clauses.push("e.dead_at IS NOT NULL".into()),
        _ => {}
    }
    if let Some(id) = &f.id {
        let p = bind(id.clone(), &mut binds);
        clauses.push(format!("e.id = {p}"));
    }
    if let Some(r) = &f.order_ref {
        let p = bind(r.clone(), &mut binds);
        clauses.push(format!(
            "e.order_id IN (SELECT id FROM orders WHERE order_ref = {p})"
        ));
    }
    if let Some(t) = f.since {
        let p = bind(sqlite_ts(t), &mut binds);
        let p = if pg { format!("{p}::timestamptz") } else { p };
        clauses.push(format!("e.created_at >= {p}"));
    }
    if clauses.is_empty() {
        clauses.push("TRUE".into());
    }
    (clauses.join(" AND "), binds)
}

fn pg_ts(column: &str) -> String {
    format!("to_char({column} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')")
}

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
        type Row = (String, i64, String, i64);
        let rows: Vec<Row> = match self {
            Store::Sqlite(p) => {
                sqlx::query_as(&format!(
                    "UPDATE payrecon_events SET claimed_by = ?2, claimed_until = ?3 \
                 WHERE id IN (SELECT e.id FROM payrecon_events e WHERE {} \
                 ORDER BY e.next_attempt_at, e.transition_id LIMIT ?4) \
                 RETURNING id, order_id, body, attempts",
                    due_sql("?1")
                ))
                .bind(sqlite_ts(now))
                .bind(holder)
                .bind(sqlite_ts(until))
                .bind(limit)
                .fetch_all(p)
                .await
            }
            Store::Postgres(p) => {
                sqlx::query_as(&format!(
                    "WITH due AS (SELECT e.id FROM payrecon_events e WHERE {} \
                 ORDER BY e.next_attempt_at, e.transition_id LIMIT $4 FOR UPDATE SKIP LOCKED) \
                 UPDATE payrecon_events e SET claimed_by = $2, claimed_until = $3::timestamptz \
                 FROM due WHERE e.id = due.id \
                 RETURNING e.id, e.order_id, e.body, e.attempts::bigint",
                    due_sql("$1::timestamptz")
                ))
                .bind(sqlite_ts(now))
                .bind(holder)
                .bind(sqlite_ts(until))
                .bind(limit)
                .fetch_all(p)
                .await
            }
        }
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

    /// Records one attempt of event `id` and releases the claim. A failure is recorded only
    /// while `holder` still holds the claim and the event is pending (a late answer never
    /// undoes another instance's delivery); a 2xx is always recorded.
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
        let (pg, cast) = match self {
            Store::Sqlite(_) => (false, ""),
            Store::Postgres(_) => (true, "::timestamptz"),
        };
        let p = |n: usize| if pg { format!("${n}") } else { format!("?{n}") };
        let res = if let Attempt::Delivered { .. } = attempt {
            let sql = format!(
                "UPDATE payrecon_events SET attempts = attempts + 1, delivered_at = {}{cast}, \
                 last_status = {}, last_error = NULL, claimed_by = NULL, claimed_until = NULL \
                 WHERE id = {} AND delivered_at IS NULL",
                p(1),
                p(2),
                p(3)
            );
            match self {
                Store::Sqlite(pool) => sqlx::query(&sql)
                    .bind(&now_s)
                    .bind(status)
                    .bind(id)
                    .execute(pool)
                    .await
                    .map(|r| r.rows_affected()),
                Store::Postgres(pool) => sqlx::query(&sql)
                    .bind(&now_s)
                    .bind(status)
                    .bind(id)
                    .execute(pool)
                    .await
                    .map(|r| r.rows_affected()),
            }
        } else {
            // Dead: `next_attempt_at` stays (a replay sets it); retry: the next attempt.
            let next_s = next.map(sqlite_ts);
            let dead_at = dead.then(|| now_s.clone());
            let sql = format!(
                "UPDATE payrecon_events SET attempts = attempts + 1, last_status = {}, \
                 last_error = {}, next_attempt_at = COALESCE({}{cast}, next_attempt_at), \
                 dead_at = {}{cast}, claimed_by = NULL, claimed_until = NULL \
                 WHERE id = {} AND claimed_by = {} AND delivered_at IS NULL AND dead_at IS NULL",
                p(1),
                p(2),
                p(3),
                p(4),
                p(5),
                p(6)
            );
            match self {
                Store::Sqlite(pool) => sqlx::query(&sql)
                    .bind(status)
                    .bind(error)
                    .bind(&next_s)
                    .bind(&dead_at)
                    .bind(id)
                    .bind(holder)
                    .execute(pool)
                    .await
                    .map(|r| r.rows_affected()),
                Store::Postgres(pool) => sqlx::query(&sql)
                    .bind(status)
                    .bind(error)
                    .bind(&next_s)
                    .bind(&dead_at)
                    .bind(id)
                    .bind(holder)
                    .execute(pool)
                    .await
                    .map(|r| r.rows_affected()),
            }
        };
        res.map_err(|e| db_error("record an event delivery attempt", e))?;
        Ok(())
    }

    /// When the next event that is not due yet becomes due (`None`: no such event).
    pub async fn next_due_at(&self, now: Timestamp) -> Result<Option<Timestamp>, StoreError> {
        let at: Option<String> = match self {
            Store::Sqlite(p) => {
                sqlx::query_scalar(&format!(
                    "SELECT MIN(e.next_attempt_at) FROM payrecon_events e WHERE {}",
                    waiting_sql("?1")
                ))
                .bind(sqlite_ts(now))
                .fetch_one(p)
                .await
            }
            Store::Postgres(p) => {
                sqlx::query_scalar(&format!(
                    "SELECT {} FROM payrecon_events e WHERE {}",
                    pg_ts("MIN(e.next_attempt_at)"),
                    waiting_sql("$1::timestamptz")
                ))
                .bind(sqlite_ts(now))
                .fetch_one(p)
                .await
            }
        }
        .map_err(|e| db_error("read when the next event is due", e))?;
        Ok(at.and_then(|t| t.parse().ok()))
    }

    /// Gives up the claims `holder` still holds on `ids` (shutdown before sending them).
    pub async fn release_claims(&self, holder: &str, ids: &[String]) -> Result<(), StoreError> {
        if ids.is_empty() {
            return Ok(());
        }
        let json = serde_json::to_string(ids).unwrap_or_else(|_| "[]".into());
        let res = match self {
            Store::Sqlite(p) => sqlx::query(
                "UPDATE payrecon_events SET claimed_by = NULL, claimed_until = NULL \
                 WHERE claimed_by = ?1 AND id IN (SELECT value FROM json_each(?2))",
            )
            .bind(holder)
            .bind(json)
            .execute(p)
            .await
            .map(|r| r.rows_affected()),
            Store::Postgres(p) => sqlx::query(
                "UPDATE payrecon_events SET claimed_by = NULL, claimed_until = NULL \
                 WHERE claimed_by = $1 AND id = ANY($2)",
            )
            .bind(holder)
            .bind(ids)
            .execute(p)
            .await
            .map(|r| r.rows_affected()),
        };
        res.map_err(|e| db_error("release event claims", e))?;
        Ok(())
    }

    /// Pending and dead counts and the oldest pending event (one query).
    pub async fn event_counts(&self) -> Result<EventCounts, StoreError> {
        let sql = |ts: String| {
            format!(
                "SELECT COUNT(*) FILTER (WHERE e.dead_at IS NULL), \
                 COUNT(*) FILTER (WHERE e.dead_at IS NOT NULL), \
                 MIN(CASE WHEN e.dead_at IS NULL THEN {ts} END) \
                 FROM payrecon_events e WHERE e.delivered_at IS NULL"
            )
        };
        type Row = (i64, i64, Option<String>);
        let row: Row = match self {
            Store::Sqlite(p) => {
                sqlx::query_as(&sql("e.created_at".into()))
                    .fetch_one(p)
                    .await
            }
            Store::Postgres(p) => {
                sqlx::query_as(&sql(pg_ts("e.created_at")))
                    .fetch_one(p)
                    .await
            }
        }
        .map_err(|e| db_error("count pending events", e))?;
        Ok(EventCounts {
            pending: row.0,
            dead: row.1,
            oldest_pending: row.2,
        })
    }

    /// `payrecon events`: the newest `limit` events matching `f`, oldest first.
    pub async fn list_events(&self, f: &EventFilter) -> Result<Vec<EventRow>, StoreError> {
        type Row = (
            String,
            Option<String>,
            i64,
            String,
            i64,
            String,
            Option<String>,
            Option<String>,
            Option<String>,
            Option<i64>,
            Option<String>,
        );
        let (pg, ts): (bool, fn(&str) -> String) = match self {
            Store::Sqlite(_) => (false, |c| c.to_string()),
            Store::Postgres(_) => (true, pg_ts),
        };
        let (clause, binds) = filter_sql(f, pg);
        let limit = if pg {
            format!("${}", binds.len() + 1)
        } else {
            format!("?{}", binds.len() + 1)
        };
        let sql = format!(
            "SELECT e.id, o.order_ref, e.order_id, e.type, {attempts}, {created}, {next}, \
             {delivered}, {dead}, {status}, e.last_error \
             FROM payrecon_events e LEFT JOIN orders o ON o.id = e.order_id \
             WHERE {clause} ORDER BY e.transition_id DESC LIMIT {limit}",
            attempts = if pg {
                "e.attempts::bigint"
            } else {
                "e.attempts"
            },
            created = ts("e.created_at"),
            next = ts("e.next_attempt_at"),
            delivered = ts("e.delivered_at"),
            dead = ts("e.dead_at"),
            status = if pg {
                "e.last_status::bigint"
            } else {
                "e.last_status"
            },
        );
        let rows: Vec<Row> = match self {
            Store::Sqlite(p) => {
                let mut q = sqlx::query_as(&sql);
                for b in &binds {
                    q = q.bind(b);
                }
                q.bind(f.limit).fetch_all(p).await
            }
            Store::Postgres(p) => {
                let mut q = sqlx::query_as(&sql);
                for b in &binds {
                    q = q.bind(b);
                }
                q.bind(f.limit).fetch_all(p).await
            }
        }
        .map_err(|e| db_error("list events", e))?;
        let mut out: Vec<EventRow> = rows
            .into_iter()
            .map(|r| {
                let status = if r.7.is_some() {
                    "delivered"
                } else if r.8.is_some() {
                    "dead"
                } else {
                    "pending"
                };
                EventRow {
                    id: r.0,
                    order_ref: r.1,
                    order_id: r.2,
                    kind: r.3,
                    status: status.into(),
                    attempts: r.4,
                    created_at: r.5,
                    next_attempt_at: (status == "pending").then_some(r.6).flatten(),
                    delivered_at: r.7,
                    dead_at: r.8,
                    last_status: r.9,
                    last_error: r.10,
                }
            })
            .collect();
        out.reverse();
        Ok(out)
    }

    /// `payrecon events replay`: delivered or dead events matching `f` are pending again, due
    /// at once, with their ids and bodies unchanged and a fresh retry schedule. Returns how
    /// many.
    pub async fn replay_events(&self, f: &EventFilter, now: Timestamp) -> Result<u64, StoreError> {
        let pg = matches!(self, Store::Postgres(_));
        let (clause, binds) = filter_sql(f, pg);
        let n = binds.len() + 1;
        let set_now = if pg {
            format!("${n}::timestamptz")
        } else {
            format!("?{n}")
        };
        let sql = format!(
            "UPDATE payrecon_events SET delivered_at = NULL, dead_at = NULL, attempts = 0, \
             next_attempt_at = {set_now}, claimed_by = NULL, claimed_until = NULL, \
             last_error = NULL WHERE id IN (SELECT e.id FROM payrecon_events e WHERE {clause} \
             AND (e.delivered_at IS NOT NULL OR e.dead_at IS NOT NULL))"
        );
        let res = match self {
            Store::Sqlite(p) => {
                let mut q = sqlx::query(&sql);
                for b in &binds {
                    q = q.bind(b);
                }
                q.bind(sqlite_ts(now))
                    .execute(p)
                    .await
                    .map(|r| r.rows_affected())
            }
            Store::Postgres(p) => {
                let mut q = sqlx::query(&sql);
                for b in &binds {
                    q = q.bind(b);
                }
                q.bind(sqlite_ts(now))
                    .execute(p)
                    .await
                    .map(|r| r.rows_affected())
            }
        };
        res.map_err(|e| db_error("replay events", e))
    }

    /// Deletes delivered events delivered before `before` (retention); pending and dead
    /// events are never deleted. Returns how many.
    pub async fn prune_events(&self, before: Timestamp) -> Result<u64, StoreError> {
        let res = match self {
            Store::Sqlite(p) => sqlx::query(
                "DELETE FROM payrecon_events WHERE delivered_at IS NOT NULL \
                     AND delivered_at < ?1",
            )
            .bind(sqlite_ts(before))
            .execute(p)
            .await
            .map(|r| r.rows_affected()),
            Store::Postgres(p) => sqlx::query(
                "DELETE FROM payrecon_events WHERE delivered_at IS NOT NULL \
                     AND delivered_at < $1::timestamptz",
            )
            .bind(sqlite_ts(before))
            .execute(p)
            .await
            .map(|r| r.rows_affected()),
        };
        res.map_err(|e| db_error("delete delivered events past retention", e))
    }
}
