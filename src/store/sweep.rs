//! The chain sweep's statements, every backend: keyset pages of rows to check on chain, and
//! the guarded re-key of a payment that a reorg moved to another block.

use super::backend::dispatch;
use super::rows::{counted, db_error};
use super::types::{Rekey, RekeyOutcome};
use super::{is_unique_violation, Store, StoreError};
use crate::domain::BlockRef;

/// Rows with a payment key to check on chain, `id > after`, by id: `pending`/`confirmed`,
/// and `final` rows on a chain of `recent_final` that became final at or after its timestamp.
/// Returns the valid rows, the last id read and how many rows were read.
/// The row columns with `amount_paid` read as the amount of the payment the key names (for
/// an order paid in parts it is their sum), so that the sweep places that payment; the
/// order's own `amount_paid` for a key without a payment row.
pub(super) fn key_amount(columns: &str, amount_paid: &str, text: &str) -> String {
    columns.replace(
        amount_paid,
        &format!(
            "COALESCE((SELECT CAST(kp.amount AS {text}) FROM payrecon_payments kp \
             WHERE kp.chain = o.chain AND kp.tx_hash = o.tx_hash AND kp.log_index = o.log_index), \
             {amount_paid})"
        ),
    )
}

/// Binds a re-key's new position (new log index, block number, block hash), then its old
/// one (order id, chain, tx hash, old log index): the order of `rekey`'s texts.
macro_rules! bind_rekey {
    ($q:expr, $r:expr) => {
        $q.bind($r.new_log_index)
            .bind(block_number(&$r.new_block))
            .bind(&$r.new_block.hash)
            .bind($r.order_id)
            .bind(&$r.chain)
            .bind($r.tx_hash.as_str())
            .bind($r.old_log_index)
    };
}

/// One UPDATE guarded by the old key and block hash, and by no other row holding the new
/// key, and the order's payment rows moved with it, in one transaction; when it changes
/// nothing, one SELECT tells a collision from a row changed under us.
pub(super) async fn rekey(store: &Store, r: &Rekey) -> Result<RekeyOutcome, StoreError> {
    let doing = "re-key a reorganised payment";
    let changed = dispatch!(store, pool => {
        // Each placeholder once, in the order of the text (MariaDB/MySQL's `?` are
        // positional): `bind_rekey!`'s 1–7, [8 the old hash], then the new key and the id.
        let p = D::p;
        let (guard, k) = match r.old_block_hash {
            Some(_) => (format!("block_hash = {}", p(8)), 9),
            None => ("(block_hash IS NULL OR block_hash = '')".to_string(), 8),
        };
        let sql = format!(
            "UPDATE orders SET log_index = {}, block_number = {}, block_hash = {} \
             WHERE id = {} AND chain = {} AND tx_hash = {} AND log_index = {} \
             AND {guard} AND {}",
            p(1), p(2), p(3), p(4), p(5), p(6), p(7), D::key_free(k),
        );
        // The order's payment rows at the old position follow it.
        let follow = format!(
            "UPDATE payrecon_payments SET log_index = {}, block_number = {}, block_hash = {} \
             WHERE order_id = {} AND chain = {} AND tx_hash = {} AND log_index = {}",
            p(1), p(2), p(3), p(4), p(5), p(6), p(7)
        );
        let mut q = bind_rekey!(sqlx::query(&sql), r);
        if let Some(h) = &r.old_block_hash {
            q = q.bind(h);
        }
        let q = q
            .bind(&r.chain)
            .bind(r.tx_hash.as_str())
            .bind(r.new_log_index)
            .bind(r.order_id);
        let mut tx = counted(pool)
            .begin_with(D::BEGIN_WRITE)
            .await
            .map_err(|e| db_error(doing, e))?;
        let res = match q.execute(counted(&mut *tx)).await {
            Ok(done) if done.rows_affected() == 1 => bind_rekey!(sqlx::query(&follow), r)
                .execute(counted(&mut *tx))
                .await
                .map(|_| 1),
            other => other.map(|d| d.rows_affected()),
        };
        let changed = match res {
            Ok(n) => n,
            // Two writers took the same new key at once: the unique index decides.
            Err(e) if is_unique_violation(&e) => return Ok(RekeyOutcome::Collision),
            Err(e) => return Err(db_error(doing, e)),
        };
        counted(tx).commit().await.map_err(|e| db_error(doing, e))?;
        changed
    });
    if changed == 1 {
        return Ok(RekeyOutcome::Rekeyed);
    }
    let taken: Option<i64> = dispatch!(store, pool => {
        let sql = format!(
            "SELECT id FROM orders WHERE chain = {} AND tx_hash = {} AND log_index = {} \
             AND id <> {}",
            D::p(1), D::p(2), D::p(3), D::p(4)
        );
        sqlx::query_scalar(&sql)
            .bind(&r.chain)
            .bind(r.tx_hash.as_str())
            .bind(r.new_log_index)
            .bind(r.order_id)
            .fetch_optional(counted(pool))
            .await
    })
    .map_err(|e| db_error(doing, e))?;
    Ok(miss(taken))
}

pub(super) fn block_number(b: &BlockRef) -> i64 {
    i64::try_from(b.number).unwrap_or(i64::MAX)
}

fn miss(taken: Option<i64>) -> RekeyOutcome {
    match taken {
        Some(_) => RekeyOutcome::Collision,
        None => RekeyOutcome::Changed,
    }
}

/// A sweep page as `Backend::sweep_page` returns it: the rows that read well (a bad one is
/// logged and skipped), the last id read, and how many rows came (bad ones included).
pub(super) fn sweep_rows<R>(rows: &[R]) -> (Vec<crate::domain::LedgerRow>, Option<i64>, usize)
where
    R: sqlx::Row,
    for<'r> super::rows::RawRow: sqlx::FromRow<'r, R>,
    for<'r> &'r str: sqlx::ColumnIndex<R>,
    for<'r> String: sqlx::Decode<'r, R::Database>,
    String: sqlx::Type<R::Database>,
    for<'r> i64: sqlx::Decode<'r, R::Database>,
    i64: sqlx::Type<R::Database>,
{
    let last = rows.last().and_then(|r| r.try_get("id").ok());
    let valid = super::rows::valid_rows(rows.iter().map(super::rows::decode_row));
    (valid, last, rows.len())
}

/// Rekeyed rows as one JSON array of `[order id, tx hash, log index, block number, block
/// hash]`, for the backends that read a list as JSON (SQLite's `json_each`, MariaDB/MySQL's
/// `JSON_TABLE`).
pub(super) fn rekey_json(rows: &[Rekey]) -> String {
    let values: Vec<serde_json::Value> = rows
        .iter()
        .map(|r| {
            serde_json::json!([
                r.order_id,
                r.tx_hash.as_str(),
                r.new_log_index,
                block_number(&r.new_block),
                r.new_block.hash
            ])
        })
        .collect();
    serde_json::Value::Array(values).to_string()
}
