//! Leases: one row per provider naming the `serve` instance that may reconcile it now, until
//! `expires_at`. Taking a lease (free, expired, or already ours) increments its `token`, a
//! fencing token: every write batch of the holder checks, inside its transaction, that the
//! row still names it with that token and has not expired — a holder that stalled past its
//! lease cannot write after another instance took over.

use std::time::Duration;

use jiff::Timestamp;
use sqlx::{Postgres, Transaction};

use super::rows::{counted, db_error, sqlite_ts};
use super::{Store, StoreError};

/// A lease held: what a write batch presents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fence {
    pub provider: String,
    pub holder: String,
    pub token: i64,
}

/// The sentinel a fenced write batch fails with (mapped to a `StoreError`).
pub(super) const FENCED: &str = "payrecon: lease lost";

fn expiry(now: Timestamp, ttl: Duration) -> Timestamp {
    jiff::SignedDuration::try_from(ttl)
        .ok()
        .and_then(|d| now.checked_add(d).ok())
        .unwrap_or(Timestamp::MAX)
}

impl Store {
    /// Takes the lease of `provider` for `holder` when it is free, expired or already
    /// `holder`'s; `None` when another holder has it.
    pub async fn acquire_lease(
        &self,
        provider: &str,
        holder: &str,
        now: Timestamp,
        ttl: Duration,
    ) -> Result<Option<Fence>, StoreError> {
        let until = expiry(now, ttl);
        let token: Option<i64> = match self {
            Store::Sqlite(p) => {
                sqlx::query_scalar(
                    "INSERT INTO payrecon_leases (provider, holder, token, expires_at) \
                 VALUES (?1, ?2, 1, ?3) ON CONFLICT (provider) DO UPDATE \
                 SET holder = excluded.holder, token = payrecon_leases.token + 1, \
                 expires_at = excluded.expires_at \
                 WHERE payrecon_leases.holder = excluded.holder \
                 OR julianday(payrecon_leases.expires_at) <= julianday(?4) RETURNING token",
                )
                .bind(provider)
                .bind(holder)
                .bind(sqlite_ts(until))
                .bind(sqlite_ts(now))
                .fetch_optional(counted(p))
                .await
            }
            Store::Postgres(p) => {
                sqlx::query_scalar(
                    "INSERT INTO payrecon_leases (provider, holder, token, expires_at) \
                 VALUES ($1, $2, 1, $3::timestamptz) ON CONFLICT (provider) DO UPDATE \
                 SET holder = excluded.holder, token = payrecon_leases.token + 1, \
                 expires_at = excluded.expires_at \
                 WHERE payrecon_leases.holder = excluded.holder \
                 OR payrecon_leases.expires_at <= $4::timestamptz RETURNING token",
                )
                .bind(provider)
                .bind(holder)
                .bind(until.to_string())
                .bind(now.to_string())
                .fetch_optional(counted(p))
                .await
            }
        }
        .map_err(|e| db_error("take a lease", e))?;
        Ok(token.map(|token| Fence {
            provider: provider.to_string(),
            holder: holder.to_string(),
            token,
        }))
    }

    /// Extends a lease still held with this token; false when it was lost.
    pub async fn renew_lease(
        &self,
        fence: &Fence,
        now: Timestamp,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        let until = expiry(now, ttl);
        let n = match self {
            Store::Sqlite(p) => sqlx::query(
                "UPDATE payrecon_leases SET expires_at = ?4 WHERE provider = ?1 AND holder = ?2 \
                 AND token = ?3 AND julianday(expires_at) > julianday(?5)",
            )
            .bind(&fence.provider)
            .bind(&fence.holder)
            .bind(fence.token)
            .bind(sqlite_ts(until))
            .bind(sqlite_ts(now))
            .execute(counted(p))
            .await
            .map(|r| r.rows_affected()),
            Store::Postgres(p) => sqlx::query(
                "UPDATE payrecon_leases SET expires_at = $4::timestamptz WHERE provider = $1 \
                 AND holder = $2 AND token = $3 AND expires_at > $5::timestamptz",
            )
            .bind(&fence.provider)
            .bind(&fence.holder)
            .bind(fence.token)
            .bind(until.to_string())
            .bind(now.to_string())
            .execute(counted(p))
            .await
            .map(|r| r.rows_affected()),
        }
        .map_err(|e| db_error("renew a lease", e))?;
        Ok(n == 1)
    }

    /// Gives a lease up (it expires now), if still held with this token.
    pub async fn release_lease(&self, fence: &Fence) -> Result<(), StoreError> {
        let now = Timestamp::now();
        let r = match self {
            Store::Sqlite(p) => sqlx::query(
                "UPDATE payrecon_leases SET expires_at = ?4 WHERE provider = ?1 AND holder = ?2 \
                 AND token = ?3",
            )
            .bind(&fence.provider)
            .bind(&fence.holder)
            .bind(fence.token)
            .bind(sqlite_ts(now))
            .execute(counted(p))
            .await
            .map(|_| ()),
            Store::Postgres(p) => sqlx::query(
                "UPDATE payrecon_leases SET expires_at = $4::timestamptz WHERE provider = $1 \
                 AND holder = $2 AND token = $3",
            )
            .bind(&fence.provider)
            .bind(&fence.holder)
            .bind(fence.token)
            .bind(now.to_string())
            .execute(counted(p))
            .await
            .map(|_| ()),
        };
        r.map_err(|e| db_error("release a lease", e))
    }
}

/// Inside a write transaction (SQLite holds the write lock): the fence still holds.
pub(super) async fn sqlite_check(
    tx: &mut Transaction<'static, sqlx::Sqlite>,
    fence: &Fence,
) -> Result<(), sqlx::Error> {
    let ok: Option<i64> = sqlx::query_scalar(
        "SELECT 1 FROM payrecon_leases WHERE provider = ?1 AND holder = ?2 AND token = ?3 \
         AND julianday(expires_at) > julianday(?4)",
    )
    .bind(&fence.provider)
    .bind(&fence.holder)
    .bind(fence.token)
    .bind(sqlite_ts(Timestamp::now()))
    .fetch_optional(counted(&mut **tx))
    .await?;
    ok.map(|_| ()).ok_or(sqlx::Error::Protocol(FENCED.into()))
}

/// Inside a write transaction: the fence still holds; the row stays locked (FOR SHARE) until
/// the commit, so no one takes the lease over in between.
pub(super) async fn pg_check(
    tx: &mut Transaction<'static, Postgres>,
    fence: &Fence,
) -> Result<(), sqlx::Error> {
    let ok: Option<i32> = sqlx::query_scalar(
        "SELECT 1 FROM payrecon_leases WHERE provider = $1 AND holder = $2 AND token = $3 \
         AND expires_at > now() FOR SHARE",
    )
    .bind(&fence.provider)
    .bind(&fence.holder)
    .bind(fence.token)
    .fetch_optional(counted(&mut **tx))
    .await?;
    ok.map(|_| ()).ok_or(sqlx::Error::Protocol(FENCED.into()))
}
