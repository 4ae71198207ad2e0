//! Leases: one row per provider naming the `serve` instance that may reconcile it now, until
//! `expires_at`. Taking a lease (free, expired, or already ours) increments its `token`, a
//! fencing token: every write batch of the holder checks, inside its transaction, that the
//! row still names it with that token and has not expired — a holder that stalled past its
//! lease cannot write after another instance took over.

use std::time::Duration;

use jiff::Timestamp;

use super::backend::dispatch;
use super::rows::{counted, db_error};
use super::types::Fence;
use super::{Store, StoreError};

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
        let token: Option<i64> =
            dispatch!(self, p => D::take_lease(p, provider, holder, until, now).await)
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
        let n = dispatch!(self, p => {
            let sql = format!(
                "UPDATE payrecon_leases SET expires_at = {} WHERE provider = {} AND holder = {} \
                 AND token = {} AND {} > {}",
                D::ts(1),
                D::p(2),
                D::p(3),
                D::p(4),
                D::cmp_time("expires_at"),
                D::cmp_ts(5)
            );
            sqlx::query(&sql)
                .bind(D::ts_bind(until))
                .bind(&fence.provider)
                .bind(&fence.holder)
                .bind(fence.token)
                .bind(D::ts_bind(now))
                .execute(counted(p))
                .await
                .map(|r| r.rows_affected())
        })
        .map_err(|e| db_error("renew a lease", e))?;
        Ok(n == 1)
    }

    /// Gives a lease up (it expires now), if still held with this token.
    pub async fn release_lease(&self, fence: &Fence) -> Result<(), StoreError> {
        let now = Timestamp::now();
        let r = dispatch!(self, p => {
            let sql = format!(
                "UPDATE payrecon_leases SET expires_at = {} WHERE provider = {} AND holder = {} \
                 AND token = {}",
                D::ts(1),
                D::p(2),
                D::p(3),
                D::p(4)
            );
            sqlx::query(&sql)
                .bind(D::ts_bind(now))
                .bind(&fence.provider)
                .bind(&fence.holder)
                .bind(fence.token)
                .execute(counted(p))
                .await
                .map(|_| ())
        });
        r.map_err(|e| db_error("release a lease", e))
    }
}
