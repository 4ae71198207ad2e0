//! The outbox as the operator sees it: `payrecon events` (list, counts, read-only),
//! `payrecon events replay`, the counts of `payrecon status` and the metrics, and the
//! retention `serve` applies.

use jiff::Timestamp;
use serde::Serialize;

use super::events::PENDING;
use super::rows::{db_error, on_pool, sqlite_ts};
use super::status::pg_ts;
use super::{Store, StoreError};

/// One row of `payrecon events`.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, utoipa::ToSchema)]
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

impl Store {
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
             WHERE {clause} ORDER BY e.seq DESC LIMIT {limit}",
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
        let rows: Vec<Row> = on_pool!(self, p => {
            let mut q = sqlx::query_as(&sql);
            for b in &binds {
                q = q.bind(b);
            }
            q.bind(f.limit).fetch_all(p).await
        })
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
        let res = on_pool!(self, p => {
            let mut q = sqlx::query(&sql);
            for b in &binds {
                q = q.bind(b);
            }
            q.bind(sqlite_ts(now))
                .execute(p)
                .await
                .map(|r| r.rows_affected())
        });
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
