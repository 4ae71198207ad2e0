//! An operator's decision in the apply path: the claim of its exception (open → resolved)
//! in the same transaction as its steps, and the check that the order is still as decided.

use crate::store::dialect::Dialect;

/// The claim: 1 resolution, 2 by, 3 note, 4 now, 5 id (each placeholder once, in order:
/// MariaDB/MySQL's `?` are positional); changes one row only while it is open.
pub(crate) fn claim_sql<D: Dialect>() -> String {
    format!(
        "UPDATE payrecon_exceptions SET status = 'resolved', resolution = {res}, \
         resolved_by = {by}, note = {note}, resolved_at = {now} \
         WHERE id = {id} AND status = 'open'",
        res = D::p(1),
        by = D::p(2),
        note = D::p(3),
        now = D::ts(4),
        id = D::p(5),
    )
}

/// Fails the decision's transaction with `WriteError::Unchanged` when the order's `amount_paid` is no
/// longer what the decision read (a payment was credited meanwhile). Run after the order's
/// row is locked (PostgreSQL `FOR UPDATE`; SQLite's write lock is taken at `BEGIN`).
macro_rules! check_paid {
    ($db:ty, $tx:expr, $r:expr) => {{
        use $crate::store::dialect::Dialect as _;
        match &$r.order_paid {
            None => Ok(()),
            Some((id, want)) => {
                let sql = format!(
                    "SELECT {} FROM orders WHERE id = {}",
                    <$db>::amount_text("amount_paid"),
                    <$db>::p(1)
                );
                let got: Option<Option<String>> = sqlx::query_scalar(&sql)
                    .bind(*id)
                    .fetch_optional($crate::store::rows::counted(&mut *$tx))
                    .await?;
                let norm =
                    |v: Option<&str>| v.and_then(|v| $crate::domain::parse_base_units(v).ok());
                if norm(got.flatten().as_deref()) == norm(want.as_deref()) {
                    Ok(())
                } else {
                    Err($crate::store::WriteError::Unchanged)
                }
            }
        }
    }};
}
pub(crate) use check_paid;

/// Claims `r` as the last statement of a transaction of the apply path, after its decision
/// was applied: fails the transaction with `WriteError::Unchanged` when the decision changed nothing (the
/// order moved, or the payment was credited, meanwhile) and with `WriteError::Taken` when the exception is
/// no longer open, so that a decision is written whole with its claim or not at all.
macro_rules! claim {
    ($db:ty, $tx:expr, $r:expr, $out:expr) => {{
        use $crate::store::ApplyOutcome as O;
        let changed = $out
            .iter()
            .all(|o| matches!(o, O::Applied { .. } | O::Credited | O::Attached));
        let sql = $crate::store::exceptions::claim_sql::<$db>();
        let now = $crate::store::rows::sqlite_ts(jiff::Timestamp::now());
        if !changed {
            Err($crate::store::WriteError::Unchanged)
        } else {
            match sqlx::query(&sql)
                .bind($r.resolution)
                .bind(&$r.by)
                .bind(&$r.note)
                .bind(&now)
                .bind($r.id)
                .execute($crate::store::rows::counted(&mut *$tx))
                .await
            {
                Ok(done) if done.rows_affected() == 1 => Ok(()),
                Ok(_) => Err($crate::store::WriteError::Taken),
                Err(e) => Err($crate::store::WriteError::Db(e)),
            }
        }
    }};
}
pub(crate) use claim;
