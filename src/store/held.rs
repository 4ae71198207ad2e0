//! The payments the sweep follows beside the keyed rows (`held_page`): those of orders still
//! short, and the earlier parts of paid orders while they can still change; and the guarded
//! move of one the chain re-included elsewhere (`rekey_held`).

use super::backend::dispatch;
use super::dialect::Dialect;
use super::rows::{counted, db_error, valid_rows};
use super::StoreError;
use crate::domain::{LedgerRow, State};

/// The columns of a held payment as a ledger row (`rows::RawRow`): the order's, with the
/// payment's key, amount and block (the key is a payment row's); then the payment's id, its
/// gone flag and its own state (`HeldExtras`).
const HELD_COLUMNS: &str = "o.id, {order_ref} AS order_ref, o.chain, o.pay_to, o.asset, \
     {due} AS amount_due_text, p.tx_hash, p.log_index, {amount} AS amount_paid_text, \
     p.block_number, p.block_hash, o.state, {expires} AS expires_at_ms, {one} AS key_credited, \
     p.id AS payment_id, CASE WHEN p.reorged_at IS NULL THEN {zero} ELSE {one} END AS gone, \
     p.state AS payment_state";

/// The payments the sweep follows beside the keyed rows, in keyset order (`{after1..3}`,
/// the same id in each branch, and `{limit}` the binds): those of orders still short (`unpaid`, no key, part of the amount
/// credited; `orders_unpaid_scan`), and the earlier parts of orders a later payment completed (the
/// key names that one) while they are not `final` or are flagged gone
/// (`payrecon_payments_open`), or became final since `{recent}` (`recheck_final`). Each branch
/// reads what its partial index holds, never the whole history.
const HELD_SQL: &str = "SELECT * FROM (\
     SELECT {cols} FROM orders o JOIN payrecon_payments p ON p.order_id = o.id \
     WHERE o.state = 'unpaid' AND o.tx_hash IS NULL AND o.amount_paid IS NOT NULL \
     AND p.id > {after1} \
     UNION ALL SELECT {cols} FROM payrecon_payments p JOIN orders o ON o.id = p.order_id \
     WHERE p.id > {after2} AND (p.state <> 'final' OR p.reorged_at IS NOT NULL) AND {part} \
     UNION ALL SELECT {cols} FROM payrecon_payments p JOIN orders o ON o.id = p.order_id \
     WHERE p.id > {after3} AND p.state = 'final' AND p.reorged_at IS NULL AND {recent} \
     AND {part}) h ORDER BY payment_id LIMIT {limit}";

/// An earlier part of a paid order: not the payment its key names.
const PART: &str = "o.tx_hash IS NOT NULL AND o.state <> 'unpaid' \
     AND NOT (p.tx_hash = o.tx_hash AND p.log_index = o.log_index)";

/// `HELD_SQL` in dialect `D`, with `recent_since` as the recent-final bound.
fn held_sql<D: Dialect>(recent_since: Option<jiff::Timestamp>) -> String {
    let recent = match recent_since {
        Some(t) => format!(
            "{} >= {}",
            D::cmp_time("p.state_changed_at"),
            D::cmp_time(&D::ts_literal(t))
        ),
        None => "1 = 0".into(),
    };
    let cols = HELD_COLUMNS
        .replace("{order_ref}", &D::exact_text("o.order_ref"))
        .replace("{due}", &D::amount_text("o.amount_due"))
        .replace("{amount}", &D::amount_text("p.amount"))
        .replace("{expires}", &D::ms("o.expires_at"))
        .replace("{one}", &D::int8("1"))
        .replace("{zero}", &D::int8("0"));
    HELD_SQL
        .replace("{cols}", &cols)
        .replace("{part}", PART)
        .replace("{recent}", &recent)
        .replace("{after1}", &D::p(1))
        .replace("{after2}", &D::p(2))
        .replace("{after3}", &D::p(3))
        .replace("{limit}", &D::p(4))
}

/// A keyset page (by payment id) of the payments the sweep follows beside the keyed rows
/// (`HELD_SQL`): the sweep places them on chain like keyed rows. Returns each with its row,
/// and the last id read.
pub(super) async fn held_page(
    store: &super::Store,
    after: i64,
    limit: i64,
    recent_since: Option<jiff::Timestamp>,
) -> Result<(Vec<HeldPayment>, Option<i64>), StoreError> {
    let (rows, ids) = dispatch!(store, pool => sqlx::query(&held_sql::<D>(recent_since))
        .bind(after)
        .bind(after)
        .bind(after)
        .bind(limit)
        .fetch_all(counted(pool))
        .await
        .map(held_rows))
    .map_err(|e| db_error("read a page of held payments", e))?;
    let last = ids.last().copied();
    Ok((rows, last))
}

/// A payment the sweep follows beside the keyed rows (`held_page`).
#[derive(Debug, Clone)]
pub struct HeldPayment {
    pub id: i64,
    /// Its order, as a row keyed by this payment (its key, amount and block).
    pub row: LedgerRow,
    /// Flagged gone from the chain (`reorged_at`).
    pub gone: bool,
    /// The payment's own state.
    pub state: State,
}

from_row! {
    /// What `HELD_COLUMNS` select beside the ledger row.
    struct HeldExtras {
        payment_id: i64,
        gone: i64,
        payment_state: String,
    }
}

/// Decodes `HELD_COLUMNS` rows: the valid ones, and every id read (a row that cannot be
/// read still moves the keyset on).
fn held_rows<R: sqlx::Row>(rows: Vec<R>) -> (Vec<HeldPayment>, Vec<i64>)
where
    for<'a> HeldExtras: sqlx::FromRow<'a, R>,
    for<'a> super::rows::RawRow: sqlx::FromRow<'a, R>,
    for<'a> &'a str: sqlx::ColumnIndex<R>,
    for<'a> String: sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    for<'a> i64: sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
{
    let mut out = Vec::new();
    let mut ids = Vec::new();
    for r in &rows {
        let Ok(id) = r.try_get::<i64, _>("payment_id") else {
            continue;
        };
        ids.push(id);
        let Ok(extras) = <HeldExtras as sqlx::FromRow<R>>::from_row(r) else {
            continue;
        };
        let Ok(state) = State::parse(&extras.payment_state) else {
            continue;
        };
        let raw = super::rows::decode_row::<super::rows::RawRow, _>(r);
        if let Some(row) = valid_rows([raw]).pop() {
            out.push(HeldPayment {
                id: extras.payment_id,
                row,
                gone: extras.gone != 0,
                state,
            });
        }
    }
    (out, ids)
}

/// Moves a held payment the chain re-included elsewhere (guarded by its old position, and by
/// no order holding the new key); the order is not touched.
pub(super) async fn rekey_held(
    store: &super::Store,
    payment_id: i64,
    r: &super::Rekey,
) -> Result<super::RekeyOutcome, StoreError> {
    let block = i64::try_from(r.new_block.number).unwrap_or(i64::MAX);
    let res = dispatch!(store, pool => {
        // Each placeholder once, in the order of the text (MariaDB/MySQL's `?` are
        // positional): 1 new log index, 2 block, 3 hash, 4 id, 5 chain, 6 tx, 7 old log index,
        // [8 old hash], then chain, tx and the new log index again.
        let p = D::p;
        let (guard, k) = match r.old_block_hash {
            Some(_) => (format!("block_hash = {}", p(8)), 9),
            None => ("(block_hash IS NULL OR block_hash = '')".to_string(), 8),
        };
        let sql = format!(
            "UPDATE payrecon_payments SET log_index = {}, block_number = {}, \
             block_hash = {} WHERE id = {} AND chain = {} AND tx_hash = {} \
             AND log_index = {} AND {guard} AND NOT EXISTS (SELECT 1 FROM orders o \
             WHERE o.chain = {} AND o.tx_hash = {} AND o.log_index = {})",
            p(1),
            p(2),
            p(3),
            p(4),
            p(5),
            p(6),
            p(7),
            p(k),
            p(k + 1),
            p(k + 2),
        );
        let mut q = sqlx::query(&sql)
            .bind(r.new_log_index)
            .bind(block)
            .bind(&r.new_block.hash)
            .bind(payment_id)
            .bind(&r.chain)
            .bind(r.tx_hash.as_str())
            .bind(r.old_log_index);
        if let Some(h) = &r.old_block_hash {
            q = q.bind(h);
        }
        let q = q
            .bind(&r.chain)
            .bind(r.tx_hash.as_str())
            .bind(r.new_log_index);
        q.execute(counted(pool)).await.map(|d| d.rows_affected())
    });
    match res {
        Ok(1) => Ok(super::RekeyOutcome::Rekeyed),
        Ok(_) => Ok(super::RekeyOutcome::Changed),
        Err(e) if super::is_unique_violation(&e) => Ok(super::RekeyOutcome::Collision),
        Err(e) => Err(db_error("re-key a held payment", e)),
    }
}
