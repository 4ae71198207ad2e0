//! What SQLite and PostgreSQL share of `Backend`: the operations each does in one statement.

/// The `Backend` operations SQLite and PostgreSQL each do in one statement (`INSERT … ON
/// CONFLICT … RETURNING`, `UPDATE … RETURNING`), written once and expanded inside their
/// `impl Backend` as `one_statement_ops!(Backend);`. MariaDB/MySQL has no `RETURNING` and
/// writes its own (`mysql/backend.rs`). Not default methods of the trait: those would be
/// generic over the backend, with sqlx's bounds spelled for each type bound or read
/// (docs/design/backends.md, "The write path, decided once").
macro_rules! one_statement_ops {
    ($db:ty) => {
        async fn claim_events(
            pool: &sqlx::Pool<Self>,
            holder: &str,
            now: jiff::Timestamp,
            until: jiff::Timestamp,
            limit: i64,
        ) -> Result<Vec<$crate::store::rows::ClaimedRow>, sqlx::Error> {
            $crate::store::events::claim_in_one!($db, pool, holder, now, until, limit)
        }

        async fn claim_resend(
            pool: &sqlx::Pool<Self>,
            provider: &str,
            notification_id: &str,
            now: jiff::Timestamp,
            cutoff: jiff::Timestamp,
        ) -> Result<bool, sqlx::Error> {
            $crate::store::runs::upsert_resend!($db, pool, provider, notification_id, now, cutoff)
        }

        async fn take_lease(
            pool: &sqlx::Pool<Self>,
            provider: &str,
            holder: &str,
            until: jiff::Timestamp,
            now: jiff::Timestamp,
        ) -> Result<Option<i64>, sqlx::Error> {
            $crate::store::lease::upsert_lease!($db, pool, provider, holder, until, now)
        }

        async fn register_batch(
            pool: &sqlx::Pool<Self>,
            batch: &[$crate::domain::ExpectedOrder],
            // One statement, nothing to run again.
            _retries: &$crate::store::Retries,
        ) -> Result<(Vec<String>, Vec<$crate::store::rows::ViewRow>), sqlx::Error> {
            $crate::store::registry::register_in_one!($db, pool, batch)
        }
    };
}
pub(crate) use one_statement_ops;
