//! Statements sent on the pool alike by every backend, as generic functions: a trait with one
//! blanket impl that carries sqlx's bounds once (as `apply::SharedSql`). The `*_returning`
//! operations are done in one statement with `RETURNING` (`INSERT … ON CONFLICT …
//! RETURNING`, `UPDATE … RETURNING`): `Backend`'s default methods send them on SQLite and
//! PostgreSQL, and MariaDB/MySQL, which has no `RETURNING`, overrides those methods
//! (`mysql/backend.rs`; docs/design/backends.md, "What the backends share, written once").

use jiff::Timestamp;
use sqlx::{Database, Decode, Encode, Executor, FromRow, IntoArguments, Pool, Type};

use crate::domain::ExpectedOrder;
use crate::store::dialect::Dialect;
use crate::store::rows::{counted, sqlite_ts, ClaimedRow, ViewRow};

/// What every backend sends alike on its pool.
pub(in crate::store) trait PoolSql: Dialect {
    /// The view of every ref of `batch`, read inside the batch's transaction `conn`.
    async fn read_views(
        conn: &mut <Self as Database>::Connection,
        batch: &[ExpectedOrder],
    ) -> Result<Vec<ViewRow>, sqlx::Error>;
    /// `Backend::claim_events` in one statement (`Dialect::claim_events_sql`).
    async fn claim_events_returning(
        pool: &Pool<Self>,
        holder: &str,
        now: Timestamp,
        until: Timestamp,
        limit: i64,
    ) -> Result<Vec<ClaimedRow>, sqlx::Error>;
    /// `Backend::claim_resend` in one upsert that writes `now` unless a request after
    /// `cutoff` is recorded (one row written: claimed).
    async fn claim_resend_returning(
        pool: &Pool<Self>,
        provider: &str,
        notification_id: &str,
        now: Timestamp,
        cutoff: Timestamp,
    ) -> Result<bool, sqlx::Error>;
    /// `Backend::take_lease` in one upsert that takes the row when it is free, expired or
    /// already `holder`'s, and returns the new token.
    async fn take_lease_returning(
        pool: &Pool<Self>,
        provider: &str,
        holder: &str,
        until: Timestamp,
        now: Timestamp,
    ) -> Result<Option<i64>, sqlx::Error>;
    /// `Backend::register_batch` in one transaction of two statements: the INSERT that
    /// skips taken refs and returns the refs it inserted, then `read_views`.
    async fn register_returning(
        pool: &Pool<Self>,
        batch: &[ExpectedOrder],
    ) -> Result<(Vec<String>, Vec<ViewRow>), sqlx::Error>;
}

impl<DB> PoolSql for DB
where
    DB: Dialect,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> <DB as Database>::Arguments<'q>: IntoArguments<'q, DB>,
    for<'q> i64: Encode<'q, DB> + Type<DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> String: Encode<'q, DB> + Type<DB>,
    for<'q> Option<String>: Encode<'q, DB> + Type<DB>,
    for<'r> i64: Decode<'r, DB>,
    for<'r> String: Decode<'r, DB>,
    for<'r> ClaimedRow: FromRow<'r, DB::Row>,
    for<'r> ViewRow: FromRow<'r, DB::Row>,
    usize: sqlx::ColumnIndex<DB::Row>,
{
    async fn read_views(
        conn: &mut <DB as Database>::Connection,
        batch: &[ExpectedOrder],
    ) -> Result<Vec<ViewRow>, sqlx::Error> {
        let list: Vec<String> = (1..=batch.len()).map(DB::p).collect();
        let sql = format!(
            "SELECT {} FROM orders o WHERE o.order_ref IN ({})",
            view_columns::<DB>(),
            list.join(", ")
        );
        let mut q = sqlx::query_as::<_, ViewRow>(&sql);
        for o in batch {
            q = q.bind(o.order_ref.as_str());
        }
        q.fetch_all(counted(conn)).await
    }

    async fn claim_events_returning(
        pool: &Pool<DB>,
        holder: &str,
        now: Timestamp,
        until: Timestamp,
        limit: i64,
    ) -> Result<Vec<ClaimedRow>, sqlx::Error> {
        let due = crate::store::due::due_sql(&DB::ts(1));
        let sql = DB::claim_events_sql(&due);
        let mut conn = pool.acquire().await?;
        sqlx::query_as(&sql)
            .bind(sqlite_ts(now))
            .bind(holder)
            .bind(sqlite_ts(until))
            .bind(limit)
            .fetch_all(&mut *conn)
            .await
    }

    async fn claim_resend_returning(
        pool: &Pool<DB>,
        provider: &str,
        notification_id: &str,
        now: Timestamp,
        cutoff: Timestamp,
    ) -> Result<bool, sqlx::Error> {
        let sql = format!(
            "INSERT INTO payrecon_resends (provider, notification_id, requested_at) \
             VALUES ({}, {}, {}) ON CONFLICT (provider, notification_id) \
             DO UPDATE SET requested_at = excluded.requested_at \
             WHERE payrecon_resends.requested_at <= {}",
            DB::p(1),
            DB::p(2),
            DB::ts(3),
            DB::ts(4)
        );
        let mut conn = pool.acquire().await?;
        let done = sqlx::query(&sql)
            .bind(provider)
            .bind(notification_id)
            .bind(DB::ts_bind(now))
            .bind(DB::ts_bind(cutoff))
            .execute(counted(&mut *conn))
            .await?;
        Ok(DB::affected(&done) == 1)
    }

    async fn take_lease_returning(
        pool: &Pool<DB>,
        provider: &str,
        holder: &str,
        until: Timestamp,
        now: Timestamp,
    ) -> Result<Option<i64>, sqlx::Error> {
        let sql = format!(
            "INSERT INTO payrecon_leases (provider, holder, token, expires_at) \
             VALUES ({}, {}, 1, {}) ON CONFLICT (provider) DO UPDATE \
             SET holder = excluded.holder, token = payrecon_leases.token + 1, \
             expires_at = excluded.expires_at \
             WHERE payrecon_leases.holder = excluded.holder \
             OR {} <= {} RETURNING token",
            DB::p(1),
            DB::p(2),
            DB::ts(3),
            DB::cmp_time("payrecon_leases.expires_at"),
            DB::cmp_ts(4)
        );
        let mut conn = pool.acquire().await?;
        sqlx::query_scalar(&sql)
            .bind(provider)
            .bind(holder)
            .bind(DB::ts_bind(until))
            .bind(DB::ts_bind(now))
            .fetch_optional(counted(&mut *conn))
            .await
    }

    async fn register_returning(
        pool: &Pool<DB>,
        batch: &[ExpectedOrder],
    ) -> Result<(Vec<String>, Vec<ViewRow>), sqlx::Error> {
        let mut n = 0;
        let mut next = || {
            n += 1;
            DB::p(n)
        };
        let rows: Vec<String> = batch
            .iter()
            .map(|_| {
                let cols: Vec<String> = (0..4).map(|_| next()).collect();
                let due = format!("{}{}", next(), DB::AMOUNT_CAST);
                let expires = format!("{}{}", next(), DB::TS_CAST);
                format!("({}, {due}, {expires}, {})", cols.join(", "), next())
            })
            .collect();
        let sql = format!(
            "INSERT INTO orders (order_ref, chain, pay_to, asset, amount_due, expires_at, \
             reference) VALUES {} ON CONFLICT (order_ref) DO NOTHING RETURNING order_ref",
            rows.join(", ")
        );
        let mut q = sqlx::query_scalar::<_, String>(&sql);
        for o in batch {
            q = q
                .bind(o.order_ref.as_str())
                .bind(o.chain.as_str())
                .bind(o.pay_to.as_str())
                .bind(o.asset.as_str())
                .bind(o.amount_due.to_string())
                .bind(o.expires_at.map(sqlite_ts))
                .bind(o.reference.clone());
        }
        let mut tx = counted(pool).begin_with(DB::BEGIN_WRITE).await?;
        let inserted = q.fetch_all(counted(&mut *tx)).await?;
        let views = DB::read_views(&mut tx, batch).await?;
        counted(tx).commit().await?;
        Ok((inserted, views))
    }
}

/// The view's columns.
pub(crate) fn view_columns<D: Dialect>() -> String {
    format!(
        "o.id, {order_ref} AS order_ref, o.chain, o.pay_to, o.asset, {due} AS amount_due, \
         {paid} AS amount_paid, o.state, o.tx_hash, o.log_index, o.block_number, o.block_hash, \
         {exp} AS expires_ms, {created} AS created_ms, {changed} AS changed_ms, \
         {updated} AS updated_ms, {reference} AS reference",
        order_ref = D::exact_text("o.order_ref"),
        due = D::amount_text("o.amount_due"),
        paid = D::amount_text("o.amount_paid"),
        exp = D::ms("o.expires_at"),
        created = D::ms("o.created_at"),
        changed = D::ms("o.state_changed_at"),
        updated = D::ms("o.payrecon_updated_at"),
        reference = D::exact_text("o.reference"),
    )
}
