//! Running the embedded migrations, the same way on every backend.
//!
//! The migrations are `migrations/<backend>/<version>_<description>.sql`, embedded at build
//! time (build.rs lists each folder into `$OUT_DIR/migrations.rs`) and read as sqlx's
//! `migrate!` reads them: the same versions, descriptions and checksums (SHA-384 of the text),
//! without sqlx's proc-macro crate.
//!
//! sqlx's `Migrator::run` takes the database's migration lock (`GET_LOCK` on MariaDB/MySQL,
//! `pg_advisory_lock` on PostgreSQL) on a pooled connection and releases it only when every
//! step succeeded: a refused step (a user without `CREATE`) returned the connection to the pool
//! with the lock still held, and the next migrating client waited on it forever. Here the
//! connection of a refused migration is closed, and the lock with it, before the error is
//! returned.

use std::borrow::Cow;

use futures::future::BoxFuture;
use sqlx::error::BoxDynError;
use sqlx::migrate::{Migrate, Migration, MigrationSource, MigrationType, Migrator};
use sqlx::{Database, Pool};

use super::StoreError;

include!(concat!(env!("OUT_DIR"), "/migrations.rs"));

/// One backend's embedded migrations: `(version, description, SQL)`, in version order.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Embedded(&'static [(i64, &'static str, &'static str)]);

impl Embedded {
    /// How many migrations there are.
    pub(crate) fn len(self) -> usize {
        self.0.len()
    }
}

impl MigrationSource<'static> for Embedded {
    fn resolve(self) -> BoxFuture<'static, Result<Vec<Migration>, BoxDynError>> {
        let migrations = self
            .0
            .iter()
            .map(|&(version, description, sql)| {
                // A file opting out of the migration's transaction, as sqlx reads it.
                let no_tx = sql.starts_with("-- no-transaction");
                Migration::new(
                    version,
                    Cow::Borrowed(description),
                    MigrationType::Simple,
                    Cow::Borrowed(sql),
                    no_tx,
                )
            })
            .collect();
        Box::pin(std::future::ready(Ok(migrations)))
    }
}

/// Applies `migrations` on one connection of `pool`, closed afterwards.
pub(crate) async fn run<DB>(
    migrations: Embedded,
    pool: &Pool<DB>,
    backend: &'static str,
) -> Result<(), StoreError>
where
    DB: Database,
    DB::Connection: Migrate,
{
    let fail = |reason: String| StoreError::Migrate { backend, reason };
    let migrator = Migrator::new(migrations)
        .await
        .map_err(|e| fail(e.to_string()))?;
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
