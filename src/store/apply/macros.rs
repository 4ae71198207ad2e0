//! The one helper of the write batch that stays a macro: `in_savepoint!` returns from its
//! caller on an error other than a unique key's, around a write that borrows the savepoint;
//! its two callers (PostgreSQL's and MariaDB/MySQL's set-wise batches) have concrete types
//! (docs/design/backends.md, "What the backends share, written once").

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

pub(crate) use in_savepoint;
