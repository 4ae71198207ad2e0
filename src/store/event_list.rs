//! The outbox as the operator sees it: `payrecon events` (list, counts, read-only),
//! `payrecon events replay`, the counts of `payrecon status` and the metrics, and the
//! retention `serve` applies.

use jiff::Timestamp;

use super::backend::dispatch;
use super::dialect::Dialect;
use super::due::PENDING;
use super::rows::{db_error, sqlite_ts};
use super::types::{EventCounts, EventFilter, EventRow};
use super::{Store, StoreError};

/// `WHERE` of a filter: the clauses and their text binds, in order.
fn filter_sql<D: Dialect>(f: &EventFilter, first: usize) -> (String, Vec<String>) {
    let mut clauses = Vec::new();
    let mut binds = Vec::new();
    let n = |binds: &Vec<String>| first + binds.len() - 1;
    match f.status.as_deref() {
        Some("pending") => clauses.push(PENDING.to_string()),
        Some("delivered") => clauses.push("e.delivered_at IS NOT NULL".into()),
        Some("dead") => clauses.push("e.dead_at IS NOT NULL".into()),
        _ => {}
    }
    if let Some(id) = &f.id {
        binds.push(id.clone());
        clauses.push(format!("e.id = {}", D::p(n(&binds))));
    }
    if let Some(r) = &f.order_ref {
        binds.push(r.clone());
        clauses.push(format!(
            "e.order_id IN (SELECT id FROM orders WHERE order_ref = {})",
            D::p(n(&binds))
        ));
    }
    if let Some(t) = f.since {
        binds.push(sqlite_ts(t));
        clauses.push(format!("e.created_at >= {}", D::ts(n(&binds))));
    }
    if let Some(seq) = f.before_seq {
        // An integer, written in the statement (the binds are text).
        clauses.push(format!("e.seq < {seq}"));
    }
    if clauses.is_empty() {
        clauses.push("TRUE".into());
    }
    (clauses.join(" AND "), binds)
}

from_row! {
    /// A row of `list_events`' query.
    struct RawEvent {
        seq: i64,
        id: String,
        order_ref: Option<String>,
        order_id: i64,
        kind: String,
        attempts: i64,
        created_at: String,
        next_attempt_at: Option<String>,
        delivered_at: Option<String>,
        dead_at: Option<String>,
        last_status: Option<i64>,
        last_error: Option<String>,
    }
}

impl From<RawEvent> for EventRow {
    fn from(r: RawEvent) -> EventRow {
        let status = if r.delivered_at.is_some() {
            "delivered"
        } else if r.dead_at.is_some() {
            "dead"
        } else {
            "pending"
        };
        EventRow {
            seq: r.seq,
            id: r.id,
            order_ref: r.order_ref,
            order_id: r.order_id,
            kind: r.kind,
            status: status.into(),
            attempts: r.attempts,
            created_at: r.created_at,
            next_attempt_at: (status == "pending").then_some(r.next_attempt_at).flatten(),
            delivered_at: r.delivered_at,
            dead_at: r.dead_at,
            last_status: r.last_status,
            last_error: r.last_error,
        }
    }
}

impl Store {
    /// Pending and dead counts and the oldest pending event (one query).
    pub async fn event_counts(&self) -> Result<EventCounts, StoreError> {
        type Row = (i64, i64, Option<String>);
        let row: Row = dispatch!(self, p => {
            let sql = format!(
                "SELECT COUNT(CASE WHEN e.dead_at IS NULL THEN 1 END), \
                 COUNT(CASE WHEN e.dead_at IS NOT NULL THEN 1 END), \
                 MIN(CASE WHEN e.dead_at IS NULL THEN {} END) \
                 FROM payrecon_events e WHERE e.delivered_at IS NULL",
                D::ts_text("e.created_at")
            );
            sqlx::query_as(&sql).fetch_one(p).await
        })
        .map_err(|e| db_error("count pending events", e))?;
        Ok(EventCounts {
            pending: row.0,
            dead: row.1,
            oldest_pending: row.2,
        })
    }

    /// `payrecon events`: the newest `limit` events matching `f`, oldest first.
    pub async fn list_events(&self, f: &EventFilter) -> Result<Vec<EventRow>, StoreError> {
        let rows: Vec<RawEvent> = dispatch!(self, p => {
            let (clause, binds) = filter_sql::<D>(f, 1);
            let ts = D::ts_text;
            let sql = format!(
                "SELECT {} AS seq, e.id, {} AS order_ref, e.order_id, e.type AS kind, {} AS attempts, \
                 {} AS created_at, {} AS next_attempt_at, {} AS delivered_at, {} AS dead_at, \
                 {} AS last_status, e.last_error \
                 FROM payrecon_events e LEFT JOIN orders o ON o.id = e.order_id \
                 WHERE {clause} ORDER BY e.seq DESC LIMIT {}",
                D::int8("e.seq"),
                D::exact_text("o.order_ref"),
                D::int8("e.attempts"),
                ts("e.created_at"),
                ts("e.next_attempt_at"),
                ts("e.delivered_at"),
                ts("e.dead_at"),
                D::int8("e.last_status"),
                D::p(binds.len() + 1),
            );
            let mut q = sqlx::query_as(&sql);
            for b in &binds {
                q = q.bind(b);
            }
            q.bind(f.limit).fetch_all(p).await
        })
        .map_err(|e| db_error("list events", e))?;
        let mut out: Vec<EventRow> = rows.into_iter().map(EventRow::from).collect();
        out.reverse();
        Ok(out)
    }

    /// `payrecon events replay`: delivered or dead events matching `f` are pending again, due
    /// at once, with their ids and bodies unchanged and a fresh retry schedule. Returns how
    /// many.
    pub async fn replay_events(&self, f: &EventFilter, now: Timestamp) -> Result<u64, StoreError> {
        let res = dispatch!(self, p => {
            // The time first: each placeholder once, in the order of the text.
            let (clause, binds) = filter_sql::<D>(f, 2);
            let replayable = D::own_table(&format!(
                "SELECT e.id FROM payrecon_events e WHERE {clause} \
                 AND (e.delivered_at IS NOT NULL OR e.dead_at IS NOT NULL)"
            ));
            let sql = format!(
                "UPDATE payrecon_events SET delivered_at = NULL, dead_at = NULL, attempts = 0, \
                 next_attempt_at = {}, claimed_by = NULL, claimed_until = NULL, \
                 last_error = NULL WHERE id IN ({replayable})",
                D::ts(1)
            );
            let mut q = sqlx::query(&sql).bind(sqlite_ts(now));
            for b in &binds {
                q = q.bind(b);
            }
            q.execute(p)
                .await
                .map(|r| r.rows_affected())
        });
        res.map_err(|e| db_error("replay events", e))
    }

    /// Deletes delivered events delivered before `before` (retention); pending and dead
    /// events are never deleted. Returns how many.
    pub async fn prune_events(&self, before: Timestamp) -> Result<u64, StoreError> {
        let res = dispatch!(self, p => {
            let sql = format!(
                "DELETE FROM payrecon_events WHERE delivered_at IS NOT NULL AND delivered_at < {}",
                D::ts(1)
            );
            sqlx::query(&sql)
                .bind(sqlite_ts(before))
                .execute(p)
                .await
                .map(|r| r.rows_affected())
        });
        res.map_err(|e| db_error("delete delivered events past retention", e))
    }
}
