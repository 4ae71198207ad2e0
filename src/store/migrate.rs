//! Running the embedded migrations, the same way on every backend.
//!
//! sqlx's `Migrator::run` takes the database's migration lock (`GET_LOCK` on MariaDB/MySQL,
//! `pg_advisory_lock` on PostgreSQL) on a pooled connection and releases it only when every
//! step succeeded: a refused step (a user without `CREATE`) returned the connection to the pool
//! with the lock still held, and the next migrating client waited on it forever. Here the
//! connection of a refused migration is closed, and the lock with it, before the error is
//! returned.

use sqlx::migrate::{Migrate, Migrator};
use sqlx::{Database, Pool};

use super::StoreError;

/// Applies `migrator`'s migrations on one connection of `pool`, closed afterwards.
pub(crate) async fn run<DB>(
    migrator: &Migrator,
    pool: &Pool<DB>,
    backend: &'static str,
) -> Result<(), StoreError>
where
    DB: Database,
    DB::Connection: Migrate,
{
    let fail = |reason: String| StoreError::Migrate { backend, reason };
    let mut conn = pool.acquire().await.map_err(|e| fail(e.to_string()))?;
    match migrator.run_direct(&mut *conn).await {
        // Released by the migrator; the connection goes back to the pool (an in-memory SQLite
        // database lives in it).
        Ok(()) => Ok(()),
        Err(e) => {
            // Closing the session ends the lock; a close that fails drops the socket, which
            // ends the session all the same.
            let _ = conn.close().await;
            Err(fail(e.to_string()))
        }
    }
}
