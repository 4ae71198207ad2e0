//! Statements every backend sends alike, as generic functions: a trait with one blanket impl
//! that carries sqlx's bounds once (`ApplySql: SharedSql`, so a generic caller needs none of
//! them), its bodies spelled with the `Dialect`'s placeholders. The `*_returning` statements
//! read their result with `RETURNING`: `ApplySql`'s default methods send them, and
//! MariaDB/MySQL, which has no `RETURNING`, overrides those methods (docs/design/backends.md,
//! "What the backends share, written once").

use sqlx::query::Query;
use sqlx::{Database, Decode, Encode, Executor, FromRow, IntoArguments, Row, Transaction, Type};

use crate::domain::{Attach, NewPayment, PaymentKey, PlannedTransition, State};
use crate::store::dialect::Dialect;
use crate::store::outbox::EventOrder;
use crate::store::rows::{counted, rank_sql, sqlite_ts};
use crate::store::{ApplyContext, ApplyOutcome, Resolve, WriteError};

/// A query of backend `DB` with its arguments.
pub(in crate::store) type Q<'q, DB> = Query<'q, DB, <DB as Database>::Arguments<'q>>;

/// What every backend sends alike inside a write batch.
pub(in crate::store) trait SharedSql: Dialect {
    /// Whether a payment row, or an order, holds this key already (read after a credit that
    /// wrote nothing, to tell a duplicate from an order that changed since it was planned).
    async fn key_taken(
        sp: &mut Transaction<'_, Self>,
        key: &PaymentKey,
    ) -> Result<bool, sqlx::Error>;
    /// The order's stored state, read after a miss.
    async fn state_of(
        tx: &mut Transaction<'_, Self>,
        order_id: i64,
    ) -> Result<Option<String>, sqlx::Error>;
    /// Fails the decision's transaction with `WriteError::Unchanged` when the order's
    /// `amount_paid` is no longer what the decision read (a payment was credited meanwhile).
    /// Run after the order's row is locked (PostgreSQL and MySQL `FOR UPDATE`; SQLite's
    /// write lock is taken at `BEGIN`).
    async fn check_paid(tx: &mut Transaction<'_, Self>, r: &Resolve) -> Result<(), WriteError>;
    /// Claims `r` as the last statement of a transaction of the apply path, after its
    /// decision was applied: `WriteError::Unchanged` when the decision changed nothing (the
    /// order moved, or the payment was credited, meanwhile), `WriteError::Taken` when the
    /// exception is no longer open, so that a decision is written whole with its claim or not
    /// at all.
    async fn claim(
        tx: &mut Transaction<'_, Self>,
        r: &Resolve,
        out: &[ApplyOutcome],
    ) -> Result<(), WriteError>;
    /// Writes the payment columns of an order that has none (or its own key again, with the
    /// chain's amount and block), when no other order holds the key; its state stays.
    async fn attach_only(
        sp: &mut Transaction<'_, Self>,
        order_id: i64,
        a: &Attach,
    ) -> Result<ApplyOutcome, sqlx::Error>;
    /// The held case: the order's `amount_paid` after a credit that leaves it short; true
    /// when written.
    async fn set_paid(
        sp: &mut Transaction<'_, Self>,
        order_id: i64,
        p: &NewPayment,
    ) -> Result<bool, sqlx::Error>;
    /// `sql` (a credit's `INSERT … SELECT`, `payments::credit_insert_sql`) with a credit's
    /// values bound in the order that text numbers them.
    fn credit_query<'q>(
        sql: &'q str,
        order_id: i64,
        p: &'q NewPayment,
        ctx: &'q ApplyContext,
        now: &'q str,
    ) -> Q<'q, Self>;
    /// The credit's INSERT with `RETURNING id`: the payment's id, `None` when nothing was
    /// written (the key is credited already, or the order moved).
    async fn credit_returning(
        sp: &mut Transaction<'_, Self>,
        order_id: i64,
        p: &NewPayment,
        ctx: &ApplyContext,
        now: &str,
    ) -> Result<Option<i64>, sqlx::Error>;
    /// The conditional UPDATE of a transition with `RETURNING` the order's event columns.
    async fn advance_returning(
        sp: &mut Transaction<'_, Self>,
        t: &PlannedTransition,
        now: &str,
    ) -> Result<Option<EventOrder>, sqlx::Error>;
    /// The audit row's INSERT with `RETURNING id`, nothing on conflict.
    async fn record_transition_returning(
        sp: &mut Transaction<'_, Self>,
        t: &PlannedTransition,
        from: State,
        ctx: &ApplyContext,
        now: &str,
    ) -> Result<Option<i64>, sqlx::Error>;
}

impl<DB> SharedSql for DB
where
    DB: Dialect,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> <DB as Database>::Arguments<'q>: IntoArguments<'q, DB>,
    for<'q> i64: Encode<'q, DB> + Type<DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> &'q String: Encode<'q, DB> + Type<DB>,
    for<'q> String: Encode<'q, DB>,
    for<'q> Option<&'q str>: Encode<'q, DB> + Type<DB>,
    for<'q> Option<String>: Encode<'q, DB> + Type<DB>,
    for<'r> i64: Decode<'r, DB>,
    for<'r> String: Decode<'r, DB> + Type<DB>,
    for<'r> EventOrder: FromRow<'r, DB::Row>,
    usize: sqlx::ColumnIndex<DB::Row>,
{
    async fn key_taken(
        sp: &mut Transaction<'_, DB>,
        key: &PaymentKey,
    ) -> Result<bool, sqlx::Error> {
        let p = DB::p;
        let sql = format!(
            "SELECT COUNT(*) FROM (SELECT 1 AS x FROM payrecon_payments WHERE chain = {} \
             AND tx_hash = {} AND log_index = {} UNION ALL SELECT 1 FROM orders \
             WHERE chain = {} AND tx_hash = {} AND log_index = {}) k",
            p(1),
            p(2),
            p(3),
            p(4),
            p(5),
            p(6)
        );
        // Each placeholder once, in order (MariaDB/MySQL's `?` are positional).
        sqlx::query_scalar::<_, i64>(&sql)
            .bind(&key.chain)
            .bind(key.tx_hash.as_str())
            .bind(key.log_index)
            .bind(&key.chain)
            .bind(key.tx_hash.as_str())
            .bind(key.log_index)
            .fetch_one(counted(&mut **sp))
            .await
            .map(|n| n > 0)
    }

    async fn state_of(
        tx: &mut Transaction<'_, DB>,
        order_id: i64,
    ) -> Result<Option<String>, sqlx::Error> {
        let sql = format!("SELECT state FROM orders WHERE id = {}", DB::p(1));
        sqlx::query_scalar(&sql)
            .bind(order_id)
            .fetch_optional(counted(&mut **tx))
            .await
    }

    async fn check_paid(tx: &mut Transaction<'_, DB>, r: &Resolve) -> Result<(), WriteError> {
        let Some((id, want)) = &r.order_paid else {
            return Ok(());
        };
        let sql = format!(
            "SELECT {} FROM orders WHERE id = {}",
            DB::amount_text("amount_paid"),
            DB::p(1)
        );
        let got: Option<Option<String>> = sqlx::query_scalar(&sql)
            .bind(*id)
            .fetch_optional(counted(&mut **tx))
            .await?;
        let norm = |v: Option<&str>| v.and_then(|v| crate::domain::parse_base_units(v).ok());
        if norm(got.flatten().as_deref()) == norm(want.as_deref()) {
            Ok(())
        } else {
            Err(WriteError::Unchanged)
        }
    }

    async fn claim(
        tx: &mut Transaction<'_, DB>,
        r: &Resolve,
        out: &[ApplyOutcome],
    ) -> Result<(), WriteError> {
        use ApplyOutcome as O;
        let changed = out
            .iter()
            .all(|o| matches!(o, O::Applied { .. } | O::Credited | O::Attached));
        if !changed {
            return Err(WriteError::Unchanged);
        }
        let sql = crate::store::exceptions::claim_sql::<DB>();
        let now = sqlite_ts(jiff::Timestamp::now());
        let done = sqlx::query(&sql)
            .bind(r.resolution)
            .bind(&r.by)
            .bind(&r.note)
            .bind(&now)
            .bind(r.id)
            .execute(counted(&mut **tx))
            .await?;
        if DB::affected(&done) == 1 {
            Ok(())
        } else {
            Err(WriteError::Taken)
        }
    }

    async fn attach_only(
        sp: &mut Transaction<'_, DB>,
        order_id: i64,
        a: &Attach,
    ) -> Result<ApplyOutcome, sqlx::Error> {
        let sql = crate::store::attach::attach_only_sql::<DB>();
        let res = sqlx::query(&sql)
            .bind(a.key.tx_hash.as_str())
            .bind(a.key.log_index)
            .bind(a.amount.to_string())
            .bind(i64::try_from(a.block.number).unwrap_or(i64::MAX))
            .bind(&a.block.hash)
            .bind(order_id)
            .bind(&a.key.chain)
            .bind(a.key.tx_hash.as_str())
            .bind(a.key.log_index)
            .bind(&a.key.chain)
            .bind(a.key.tx_hash.as_str())
            .bind(a.key.log_index)
            .bind(order_id)
            .execute(counted(&mut **sp))
            .await;
        crate::store::attach::attach_outcome(res.map(|r| DB::affected(&r)))
    }

    async fn set_paid(
        sp: &mut Transaction<'_, DB>,
        order_id: i64,
        p: &NewPayment,
    ) -> Result<bool, sqlx::Error> {
        let sql = format!(
            "UPDATE orders SET amount_paid = {} WHERE id = {} AND (tx_hash IS NULL OR tx_hash = {})",
            DB::amount(1),
            DB::p(2),
            DB::p(3)
        );
        sqlx::query(&sql)
            .bind(p.paid_after.to_string())
            .bind(order_id)
            .bind(p.key.tx_hash.as_str())
            .execute(counted(&mut **sp))
            .await
            .map(|r| DB::affected(&r) == 1)
    }

    /// Each placeholder once in the order of the text (MariaDB/MySQL's `?` are positional):
    /// the row (1 order id, 2 chain, 3 tx hash, 4 log index, 5 amount, 6 block number, 7
    /// block hash, 8 state, 9 source, 10 provider, 11 run id, 12 and 13 now, 14 block time),
    /// then the guards (15 order id, 16 amount before, 17–19 the key, 20–22 the key, 23 order
    /// id).
    fn credit_query<'q>(
        sql: &'q str,
        order_id: i64,
        p: &'q NewPayment,
        ctx: &'q ApplyContext,
        now: &'q str,
    ) -> Q<'q, DB> {
        sqlx::query(sql)
            .bind(order_id)
            .bind(&p.key.chain)
            .bind(p.key.tx_hash.as_str())
            .bind(p.key.log_index)
            .bind(p.amount.to_string())
            .bind(i64::try_from(p.block.number).unwrap_or(i64::MAX))
            .bind(&p.block.hash)
            .bind(p.state.as_str())
            .bind(crate::store::payments::payment_source(p, ctx))
            .bind(&ctx.provider)
            .bind(ctx.run_id_or_null())
            .bind(now)
            .bind(now)
            .bind(p.block_time.map(DB::ts_bind))
            .bind(order_id)
            .bind(p.paid_before.map(|a| a.to_string()))
            .bind(&p.key.chain)
            .bind(p.key.tx_hash.as_str())
            .bind(p.key.log_index)
            .bind(&p.key.chain)
            .bind(p.key.tx_hash.as_str())
            .bind(p.key.log_index)
            .bind(order_id)
    }

    async fn credit_returning(
        sp: &mut Transaction<'_, DB>,
        order_id: i64,
        p: &NewPayment,
        ctx: &ApplyContext,
        now: &str,
    ) -> Result<Option<i64>, sqlx::Error> {
        let sql = crate::store::payments::credit_sql::<DB>();
        let row = DB::credit_query(&sql, order_id, p, ctx, now)
            .fetch_optional(counted(&mut **sp))
            .await?;
        row.map(|r| r.try_get::<i64, _>(0)).transpose()
    }

    /// The plain UPDATE binds 1 order id, 2 state, 3 now, 4 rank; with an attach, its
    /// columns follow from 5 (tx hash, log index, amount, block number, block hash, chain).
    async fn advance_returning(
        sp: &mut Transaction<'_, DB>,
        t: &PlannedTransition,
        now: &str,
    ) -> Result<Option<EventOrder>, sqlx::Error> {
        let (p, rank, cols) = (DB::p, rank_sql("state"), DB::RETURNING);
        let set = format!("state = {}, state_changed_at = {}", p(2), DB::ts(3));
        let sql = match &t.attach {
            None => format!(
                "UPDATE orders AS o SET {set} WHERE id = {} AND {rank} < {} RETURNING {cols}",
                p(1),
                p(4)
            ),
            Some(_) => format!(
                "UPDATE orders AS o SET {set}, tx_hash = {tx}, log_index = {li}, amount_paid = {}, \
                 block_number = {}, block_hash = {} \
                 WHERE id = {id} AND {rank} < {} AND chain = {chain} \
                 AND (tx_hash IS NULL OR (tx_hash = {tx} AND log_index = {li})) \
                 AND NOT EXISTS (SELECT 1 FROM orders o2 WHERE o2.chain = {chain} \
                 AND o2.tx_hash = {tx} AND o2.log_index = {li} AND o2.id <> {id}) \
                 RETURNING {cols}",
                DB::amount(7),
                p(8),
                p(9),
                p(4),
                id = p(1),
                tx = p(5),
                li = p(6),
                chain = p(10),
            ),
        };
        let q = sqlx::query(&sql)
            .bind(t.order_id)
            .bind(t.to.as_str())
            .bind(now)
            .bind(t.to.rank());
        let q = match &t.attach {
            None => q,
            Some(a) => q
                .bind(a.key.tx_hash.as_str())
                .bind(a.key.log_index)
                .bind(a.amount.to_string())
                .bind(i64::try_from(a.block.number).unwrap_or(i64::MAX))
                .bind(&a.block.hash)
                .bind(&a.key.chain),
        };
        let row = q.fetch_optional(counted(&mut **sp)).await?;
        row.map(|r| EventOrder::from_row(&r)).transpose()
    }

    async fn record_transition_returning(
        sp: &mut Transaction<'_, DB>,
        t: &PlannedTransition,
        from: State,
        ctx: &ApplyContext,
        now: &str,
    ) -> Result<Option<i64>, sqlx::Error> {
        let p = DB::p;
        let sql = format!(
            "INSERT INTO payrecon_transitions \
             (order_id, from_state, to_state, source, provider, run_id, created_at) \
             VALUES ({}, {}, {}, {}, {}, {}, {}) \
             ON CONFLICT (order_id, to_state) DO NOTHING RETURNING id",
            p(1),
            p(2),
            p(3),
            p(4),
            p(5),
            p(6),
            DB::ts(7)
        );
        sqlx::query_scalar(&sql)
            .bind(t.order_id)
            .bind(from.as_str())
            .bind(t.to.as_str())
            .bind(ctx.source.as_str())
            .bind(&ctx.provider)
            .bind(ctx.run_id_or_null())
            .bind(now)
            .fetch_optional(counted(&mut **sp))
            .await
    }
}
