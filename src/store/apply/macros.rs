//! The statements the backends' `ApplySql` share that are still macros over the backend's type
//! (`apply/shared.rs` holds those that are generic functions: docs/design/backends.md, "What
//! the backends share, written once").

/// Binds an attach's columns after whatever the statement bound before: tx hash, log index,
/// amount paid, block number, block hash, chain (both dialects number them in this order).
macro_rules! bind_attach {
    ($q:expr, $a:expr) => {
        $q.bind($a.key.tx_hash.as_str())
            .bind($a.key.log_index)
            .bind($a.amount.to_string())
            .bind(i64::try_from($a.block.number).unwrap_or(i64::MAX))
            .bind(&$a.block.hash)
            .bind(&$a.key.chain)
    };
}

/// `ApplySql::advance` given a dialect's two UPDATEs: `$plain` (1 order id, 2 state, 3 now,
/// 4 rank) and `$attach` (the same, then the attach's columns from 5, `bind_attach`).
macro_rules! advance {
    ($sp:expr, $t:expr, $now:expr, $plain:expr, $attach:expr) => {{
        let sql: String = if $t.attach.is_some() { $attach } else { $plain };
        let q = sqlx::query_as::<_, $crate::store::outbox::EventOrder>(&sql)
            .bind($t.order_id)
            .bind($t.to.as_str())
            .bind($now)
            .bind($t.to.rank());
        let q = match &$t.attach {
            None => q,
            Some(a) => $crate::store::apply::bind_attach!(q, a),
        };
        q.fetch_optional($crate::store::rows::counted(&mut **$sp))
            .await
    }};
}

/// `ApplySql::record_transition` given a dialect's INSERT (1 order id, 2 from, 3 to,
/// 4 source, 5 provider, 6 run id, 7 now; `RETURNING id`, nothing on conflict).
macro_rules! record_transition {
    ($sp:expr, $t:expr, $from:expr, $ctx:expr, $now:expr, $sql:expr) => {
        sqlx::query_scalar($sql)
            .bind($t.order_id)
            .bind($from.as_str())
            .bind($t.to.as_str())
            .bind($ctx.source.as_str())
            .bind(&$ctx.provider)
            .bind($ctx.run_id_or_null())
            .bind($now)
            .fetch_optional($crate::store::rows::counted(&mut **$sp))
            .await
    };
}

/// Runs a set-wise attempt in a savepoint of `$tx`: `$write` (with the savepoint as `$sp`)
/// answers whether every step went through. Kept when it did; rolled back when it did not,
/// or when a unique key refused a row (two steps attaching one key, a key another row holds,
/// an audited step again), and the caller goes row by row. True when kept.
macro_rules! in_savepoint {
    ($tx:expr, |$sp:ident| $write:expr) => {{
        let mut $sp = sqlx::Acquire::begin($crate::store::rows::counted(&mut *$tx)).await?;
        let kept = match $write.await {
            Ok(all) => all,
            Err(e) if $crate::store::is_unique_violation(&e) => false,
            Err(e) => return Err(e),
        };
        if kept {
            $crate::store::rows::counted($sp).commit().await?;
        } else {
            $crate::store::rows::counted($sp).rollback().await?;
        }
        kept
    }};
}

/// The `ApplySql` methods every backend spells alike (their statements differ only in the
/// `Dialect`'s spellings: the operator's checks and claim, attaching a key, an amount held),
/// written once and expanded inside each backend's `impl ApplySql` as
/// `shared_apply_sql!(Backend);`. They build on statement macros of their own topics; the
/// statements that have moved to generic functions are in `apply/shared.rs`
/// (docs/design/backends.md, "What the backends share, written once").
macro_rules! shared_apply_sql {
    ($db:ty) => {
        async fn check_paid(
            tx: &mut sqlx::Transaction<'static, $db>,
            r: &$crate::store::Resolve,
        ) -> Result<(), $crate::store::WriteError> {
            $crate::store::exceptions::check_paid!($db, *tx, r)
        }

        async fn claim(
            tx: &mut sqlx::Transaction<'static, $db>,
            r: &$crate::store::Resolve,
            out: &[$crate::store::ApplyOutcome],
        ) -> Result<(), $crate::store::WriteError> {
            $crate::store::exceptions::claim!($db, *tx, r, out)
        }

        async fn attach_only(
            sp: &mut sqlx::Transaction<'_, $db>,
            order_id: i64,
            a: &$crate::domain::Attach,
        ) -> Result<$crate::store::ApplyOutcome, sqlx::Error> {
            $crate::store::attach::attach_only!($db, sp, order_id, a)
        }

        async fn set_paid(
            sp: &mut sqlx::Transaction<'_, $db>,
            order_id: i64,
            p: &$crate::domain::NewPayment,
        ) -> Result<bool, sqlx::Error> {
            $crate::store::payments::set_paid!($db, sp, order_id, p)
        }
    };
}

pub(crate) use {advance, bind_attach, in_savepoint, record_transition, shared_apply_sql};
