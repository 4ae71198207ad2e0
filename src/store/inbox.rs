//! The webhook inbox (`payrecon_webhook_events`): each authentic delivery stored once per
//! `(provider, event_id)` before it is answered, then listed oldest first until it is marked
//! processed. SQLite and PostgreSQL side by side, one statement per call (SQLite's insert
//! adds two PRAGMAs around it, see `sqlite_insert`).

use jiff::Timestamp;
use sqlx::{PgPool, SqlitePool};

use super::rows::{counted, db_error, sqlite_ts};
use super::{Store, StoreError};

/// One stored delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEvent {
    pub id: i64,
    pub provider: String,
    pub event_id: String,
    /// The raw body, exactly as received.
    pub body: String,
    /// As stored: milliseconds on SQLite, microseconds on PostgreSQL.
    pub received_at: Timestamp,
}

impl Store {
    /// Stores a delivery; None when `(provider, event_id)` is already stored (a duplicate).
    /// One `INSERT … ON CONFLICT DO NOTHING`: concurrent deliveries of one event store it
    /// once and exactly one of them gets `Some`. Committed (and, on SQLite, synced to disk)
    /// when it returns.
    pub async fn insert_webhook_event(
        &self,
        provider: &str,
        event_id: &str,
        body: &str,
        received_at: Timestamp,
    ) -> Result<Option<StoredEvent>, StoreError> {
        let (id, received_at) = match self {
            Store::Sqlite(p) => {
                let at = Timestamp::from_millisecond(received_at.as_millisecond())
                    .unwrap_or(received_at);
                (sqlite_insert(p, provider, event_id, body, at).await?, at)
            }
            Store::Postgres(p) => {
                let at = Timestamp::from_microsecond(received_at.as_microsecond())
                    .unwrap_or(received_at);
                (pg_insert(p, provider, event_id, body, at).await?, at)
            }
        };
        Ok(id.map(|id| StoredEvent {
            id,
            provider: provider.to_string(),
            event_id: event_id.to_string(),
            body: body.to_string(),
            received_at,
        }))
    }

    /// Events not yet marked, of one provider or all, oldest first (`received_at`, then id).
    pub async fn unprocessed_webhook_events(
        &self,
        provider: Option<&str>,
        limit: i64,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        const DOING: &str = "list unprocessed webhook events";
        let raws: Vec<(i64, String, String, String, String)> = match self {
            Store::Sqlite(p) => sqlx::query(
                "SELECT id, provider, event_id, body, received_at FROM payrecon_webhook_events \
                 WHERE processed_at IS NULL AND (?1 IS NULL OR provider = ?1) \
                 ORDER BY received_at, id LIMIT ?2",
            )
            .bind(provider)
            .bind(limit.max(0))
            .fetch_all(counted(p))
            .await
            .map_err(|e| db_error(DOING, e))?
            .iter()
            .map(decode)
            .collect::<Result<_, _>>(),
            Store::Postgres(p) => sqlx::query(
                "SELECT id, provider, event_id, body, \
                 to_char(received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') \
                 FROM payrecon_webhook_events \
                 WHERE processed_at IS NULL AND ($1::text IS NULL OR provider = $1) \
                 ORDER BY received_at, id LIMIT $2",
            )
            .bind(provider)
            .bind(limit.max(0))
            .fetch_all(counted(p))
            .await
            .map_err(|e| db_error(DOING, e))?
            .iter()
            .map(decode)
            .collect::<Result<_, _>>(),
        }
        .map_err(|e| db_error(DOING, e))?;
        let mut out = Vec::with_capacity(raws.len());
        for (id, provider, event_id, body, at) in raws {
            match at.parse::<Timestamp>() {
                Ok(received_at) => out.push(StoredEvent {
                    id,
                    provider,
                    event_id,
                    body,
                    received_at,
                }),
                Err(e) => tracing::warn!(id, provider = %provider, error = %e,
                    "Skipped a webhook event whose received_at cannot be read."),
            }
        }
        Ok(out)
    }

    /// Marks events processed with `outcome`, in one statement. An event already marked
    /// keeps its first outcome.
    pub async fn mark_webhook_events(
        &self,
        ids: &[i64],
        outcome: &str,
        processed_at: Timestamp,
    ) -> Result<(), StoreError> {
        if ids.is_empty() {
            return Ok(());
        }
        let res = match self {
            Store::Sqlite(p) => sqlx::query(
                "UPDATE payrecon_webhook_events SET processed_at = ?1, outcome = ?2 \
                 WHERE processed_at IS NULL AND id IN (SELECT value FROM json_each(?3))",
            )
            .bind(sqlite_ts(processed_at))
            .bind(outcome)
            .bind(serde_json::Value::from(ids.to_vec()).to_string())
            .execute(counted(p))
            .await
            .map(|_| ()),
            Store::Postgres(p) => sqlx::query(
                "UPDATE payrecon_webhook_events SET processed_at = $1::timestamptz, \
                 outcome = $2 WHERE processed_at IS NULL AND id = ANY($3)",
            )
            .bind(processed_at.to_string())
            .bind(outcome)
            .bind(ids)
            .execute(counted(p))
            .await
            .map(|_| ()),
        };
        res.map_err(|e| db_error("mark webhook events processed", e))
    }

    /// Stored events of `provider`, processed or not (tests, inspection).
    pub async fn webhook_event_count(&self, provider: &str) -> Result<i64, StoreError> {
        let res = match self {
            Store::Sqlite(p) => {
                sqlx::query_scalar(
                    "SELECT COUNT(*) FROM payrecon_webhook_events WHERE provider = ?1",
                )
                .bind(provider)
                .fetch_one(counted(p))
                .await
            }
            Store::Postgres(p) => {
                sqlx::query_scalar(
                    "SELECT COUNT(*) FROM payrecon_webhook_events WHERE provider = $1",
                )
                .bind(provider)
                .fetch_one(counted(p))
                .await
            }
        };
        res.map_err(|e| db_error("count webhook events", e))
    }
}

type RawEvent = (i64, String, String, String, String);

fn decode<R>(r: &R) -> Result<RawEvent, sqlx::Error>
where
    R: sqlx::Row,
    usize: sqlx::ColumnIndex<R>,
    i64: for<'r> sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    String: for<'r> sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    Ok((
        r.try_get(0)?,
        r.try_get(1)?,
        r.try_get(2)?,
        r.try_get(3)?,
        r.try_get(4)?,
    ))
}

/// The pool runs `synchronous = NORMAL` (WAL), where a commit may be lost to a power cut:
/// an acknowledged delivery must not be, so this one commit runs with `FULL` (the WAL is
/// synced before it returns) and the connection goes back to `NORMAL` afterwards.
async fn sqlite_insert(
    pool: &SqlitePool,
    provider: &str,
    event_id: &str,
    body: &str,
    at: Timestamp,
) -> Result<Option<i64>, StoreError> {
    const DOING: &str = "store a webhook event";
    let mut conn = pool.acquire().await.map_err(|e| db_error(DOING, e))?;
    sqlx::query("PRAGMA synchronous = FULL")
        .execute(counted(&mut *conn))
        .await
        .map_err(|e| db_error(DOING, e))?;
    let inserted = sqlx::query_scalar(
        "INSERT INTO payrecon_webhook_events (provider, event_id, body, received_at) \
         VALUES (?1, ?2, ?3, ?4) ON CONFLICT (provider, event_id) DO NOTHING RETURNING id",
    )
    .bind(provider)
    .bind(event_id)
    .bind(body)
    .bind(sqlite_ts(at))
    .fetch_optional(counted(&mut *conn))
    .await;
    let reset = sqlx::query("PRAGMA synchronous = NORMAL")
        .execute(counted(&mut *conn))
        .await;
    if reset.is_err() {
        // Do not hand a connection in an unknown mode back to the pool.
        conn.detach();
    }
    inserted.map_err(|e| db_error(DOING, e))
}

async fn pg_insert(
    pool: &PgPool,
    provider: &str,
    event_id: &str,
    body: &str,
    at: Timestamp,
) -> Result<Option<i64>, StoreError> {
    sqlx::query_scalar(
        "INSERT INTO payrecon_webhook_events (provider, event_id, body, received_at) \
         VALUES ($1, $2, $3, $4::timestamptz) ON CONFLICT (provider, event_id) DO NOTHING \
         RETURNING id",
    )
    .bind(provider)
    .bind(event_id)
    .bind(body)
    .bind(at.to_string())
    .fetch_optional(counted(pool))
    .await
    .map_err(|e| db_error("store a webhook event", e))
}
