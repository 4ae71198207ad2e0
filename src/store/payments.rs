//! `payrecon_payments` (docs/reference.md §3): a payment credited to an order, written in the
//! transaction of the order's `amount_paid`; the ledger lookups that find an order by any of
//! its credited payments; and the credited payments of orders still short.

use std::collections::HashMap;

use serde_json::json;
use sqlx::{PgPool, Postgres, Sqlite, SqlitePool, Transaction};

use super::rows::{counted, db_error, rank_sql, valid_rows, LOOKUP_CHUNK};
use super::{ApplyContext, StoreError};
use crate::domain::{
    ledger_tx_hash, parse_base_units, BlockRef, CreditedPayment, LedgerRow, LedgerView, NewPayment,
    PaymentKey, State,
};

/// The columns of a credited payment, in `decode_credit` order (`{bt}`: the block time in
/// milliseconds, per backend).
const CREDIT_COLUMNS: &str = "p.order_id, p.chain, p.tx_hash, p.log_index, {amount}, p.state, \
     p.block_number, p.block_hash, {bt}, CASE WHEN p.reorged_at IS NULL THEN {zero} ELSE {one} END";

type CreditRow = (
    i64,
    String,
    String,
    i64,
    String,
    String,
    Option<i64>,
    Option<String>,
    Option<i64>,
    i64,
);

fn decode_credit(r: CreditRow) -> Option<(i64, CreditedPayment)> {
    let (order_id, chain, tx, log_index, amount, state, number, hash, bt, gone) = r;
    let parsed = (|| {
        Ok::<_, crate::domain::InputError>(CreditedPayment {
            key: PaymentKey {
                tx_hash: ledger_tx_hash(&tx)?,
                chain,
                log_index,
            },
            amount: parse_base_units(&amount)?,
            state: State::parse(&state)?,
            block: match (number, hash) {
                (Some(n), Some(hash)) => Some(BlockRef {
                    number: u64::try_from(n).unwrap_or(0),
                    hash,
                }),
                _ => None,
            },
            block_time: bt.and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok()),
            gone: gone != 0,
        })
    })();
    match parsed {
        Ok(p) => Some((order_id, p)),
        Err(e) => {
            tracing::warn!(order_id, tx_hash = %tx, reason = %e,
                "Skipped a payment row that cannot be read.");
            None
        }
    }
}

/// The credited payments of the orders in `rows` that have no key and hold part of their
/// amount (unpaid, or moved by a provider's status alone; one query per chunk, none when no
/// row is), set on each row.
pub(super) async fn load_credits(
    store: &super::Store,
    rows: &mut [&mut LedgerRow],
) -> Result<(), StoreError> {
    let ids: Vec<i64> = rows
        .iter()
        .filter(|r| r.key.is_none() && r.amount_paid.is_some())
        .map(|r| r.id)
        .collect();
    if ids.is_empty() {
        return Ok(());
    }
    let mut by_order: HashMap<i64, Vec<CreditedPayment>> = HashMap::new();
    for chunk in ids.chunks(LOOKUP_CHUNK) {
        let found = match store {
            super::Store::Sqlite(p) => sqlite_credits(p, chunk).await?,
            super::Store::Postgres(p) => pg_credits(p, chunk).await?,
        };
        for (id, c) in found.into_iter().filter_map(decode_credit) {
            by_order.entry(id).or_default().push(c);
        }
    }
    // An order can be in a view twice (by a key and by its deposit address).
    for r in rows.iter_mut() {
        if let Some(c) = by_order.get(&r.id) {
            r.credits = c.clone();
        }
    }
    Ok(())
}

async fn sqlite_credits(pool: &SqlitePool, ids: &[i64]) -> Result<Vec<CreditRow>, StoreError> {
    let cols = CREDIT_COLUMNS
        .replace("{amount}", "CAST(p.amount AS TEXT)")
        .replace("{bt}", &super::rows::sqlite_ms("p.block_time"))
        .replace("{zero}", "0")
        .replace("{one}", "1");
    let sql = format!(
        "SELECT {cols} FROM payrecon_payments p \
         WHERE p.order_id IN (SELECT value FROM json_each(?1)) \
         ORDER BY p.order_id, p.block_number, p.log_index"
    );
    sqlx::query_as(&sql)
        .bind(json!(ids).to_string())
        .fetch_all(counted(pool))
        .await
        .map_err(|e| db_error("read the payments of partly paid orders", e))
}

async fn pg_credits(pool: &PgPool, ids: &[i64]) -> Result<Vec<CreditRow>, StoreError> {
    let cols = CREDIT_COLUMNS
        .replace("{amount}", "p.amount::text")
        .replace("{bt}", &super::rows::pg_ms("p.block_time"))
        .replace("{zero}", "0::bigint")
        .replace("{one}", "1::bigint");
    let sql = format!(
        "SELECT {cols} FROM payrecon_payments p WHERE p.order_id = ANY($1) \
         ORDER BY p.order_id, p.block_number, p.log_index"
    );
    sqlx::query_as(&sql)
        .bind(ids)
        .fetch_all(counted(pool))
        .await
        .map_err(|e| db_error("read the payments of partly paid orders", e))
}

/// Orders by payment key: the order whose key it is, or the order it was credited to (the
/// `WITH k(chain, tx_hash, log_index)` of the caller). Selects the row columns, then the
/// matched key's `tx_hash` and `log_index`.
pub(super) fn sqlite_by_key_sql(row_columns: &str) -> String {
    format!(
        "SELECT {row_columns}, k.tx_hash, k.log_index FROM k CROSS JOIN orders o \
         ON o.chain = k.chain AND o.tx_hash = k.tx_hash AND o.log_index = k.log_index \
         UNION SELECT {row_columns}, k.tx_hash, k.log_index FROM k CROSS JOIN payrecon_payments p \
         ON p.chain = k.chain AND p.tx_hash = k.tx_hash AND p.log_index = k.log_index \
         CROSS JOIN orders o ON o.id = p.order_id"
    )
}

/// The same for PostgreSQL, over `UNNEST($1, $2, $3) AS k`.
pub(super) fn pg_by_key_sql(row_columns: &str) -> String {
    let k = "UNNEST($1::text[], $2::text[], $3::bigint[]) AS k(chain, tx_hash, log_index)";
    format!(
        "SELECT {row_columns}, k.tx_hash, k.log_index FROM {k} JOIN orders o \
         ON o.chain = k.chain AND o.tx_hash = k.tx_hash AND o.log_index = k.log_index \
         UNION SELECT {row_columns}, k.tx_hash, k.log_index FROM {k} JOIN payrecon_payments p \
         ON p.chain = k.chain AND p.tx_hash = k.tx_hash AND p.log_index = k.log_index \
         JOIN orders o ON o.id = p.order_id"
    )
}

/// Decodes rows of `*_by_key_sql` into the view: by the order's own key, or by the key of a
/// payment credited to it.
macro_rules! insert_by_key {
    ($view:expr, $rows:expr) => {{
        use sqlx::Row as _;
        let mut matched = Vec::new();
        let raws = $rows.iter().map(|r| {
            let key: Result<(String, i64), sqlx::Error> = r
                .try_get($crate::store::rows::ROW_COLUMN_COUNT)
                .and_then(|t| Ok((t, r.try_get($crate::store::rows::ROW_COLUMN_COUNT + 1)?)));
            matched.push(key.ok());
            $crate::store::rows::decode_raw_row!(r)
        });
        let raws: Vec<_> = raws.collect();
        $crate::store::payments::insert_matched($view, raws, matched);
    }};
}
pub(super) use insert_by_key;

pub(super) fn insert_matched(
    view: &mut LedgerView,
    raws: Vec<Result<super::rows::RawRow, (String, String)>>,
    matched: Vec<Option<(String, i64)>>,
) {
    for (raw, key) in raws.into_iter().zip(matched) {
        let Some(row) = valid_rows([raw]).pop() else {
            continue;
        };
        let Some(key) = key.and_then(|(tx, li)| {
            Some(PaymentKey {
                chain: row.chain.clone(),
                tx_hash: ledger_tx_hash(&tx).ok()?,
                log_index: li,
            })
        }) else {
            continue;
        };
        if row.key.as_ref() == Some(&key) {
            view.by_key.insert(key, row);
        } else {
            view.insert_credited(key, row);
        }
    }
}

/// Binds a credit's values in the order both dialects number them (1 order id, 2 chain,
/// 3 tx hash, 4 log index, 5 amount, 6 block number, 7 block hash, 8 state, 9 source,
/// 10 provider, 11 run id, 12 now, 13 amount before, 14 block time as `$bt`).
macro_rules! bind_credit {
    ($q:expr, $order_id:expr, $p:expr, $ctx:expr, $now:expr, $bt:expr) => {
        $q.bind($order_id)
            .bind(&$p.key.chain)
            .bind($p.key.tx_hash.as_str())
            .bind($p.key.log_index)
            .bind($p.amount.to_string())
            .bind(i64::try_from($p.block.number).unwrap_or(i64::MAX))
            .bind(&$p.block.hash)
            .bind($p.state.as_str())
            .bind(payment_source($p, $ctx))
            .bind(&$ctx.provider)
            .bind($ctx.run_id_or_null())
            .bind($now)
            .bind($p.paid_before.map(|a| a.to_string()))
            .bind($bt)
    };
}

/// The `source` of a payment row: `merchant` for a key the merchant's own code wrote into
/// its order, else the step's (`reconcile`, `webhook`).
pub(super) fn payment_source<'a>(p: &NewPayment, ctx: &'a ApplyContext) -> &'a str {
    if p.merchant {
        "merchant"
    } else {
        ctx.source.as_str()
    }
}

/// Credits `p` to order `order_id` when the order has no payment key and its `amount_paid`
/// is still `p.paid_before`, or when the order's own key is `p`'s (written by the merchant's
/// code): one INSERT guarded by that (a payment credits one order, ever).
/// The payment's id; `None` when nothing was written (the key is credited already, or the
/// order moved).
pub(super) async fn sqlite_credit(
    sp: &mut Transaction<'_, Sqlite>,
    order_id: i64,
    p: &NewPayment,
    ctx: &ApplyContext,
    now: &str,
) -> Result<Option<i64>, sqlx::Error> {
    let q = sqlx::query_scalar(
        "INSERT INTO payrecon_payments (order_id, chain, tx_hash, log_index, amount, \
         block_number, block_hash, state, source, provider, run_id, created_at, state_changed_at, \
         block_time) \
         SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?12, ?14 \
         WHERE EXISTS (SELECT 1 FROM orders WHERE id = ?1 AND ((tx_hash IS NULL \
         AND amount_paid IS ?13) OR (chain = ?2 AND tx_hash = ?3 AND log_index = ?4))) \
         AND NOT EXISTS (SELECT 1 FROM orders o2 WHERE o2.chain = ?2 AND o2.tx_hash = ?3 \
         AND o2.log_index = ?4 AND o2.id <> ?1) \
         ON CONFLICT (chain, tx_hash, log_index) DO NOTHING RETURNING id",
    );
    bind_credit!(
        q,
        order_id,
        p,
        ctx,
        now,
        p.block_time.map(super::rows::sqlite_ts)
    )
    .fetch_optional(counted(&mut **sp))
    .await
}

pub(super) async fn pg_credit(
    sp: &mut Transaction<'_, Postgres>,
    order_id: i64,
    p: &NewPayment,
    ctx: &ApplyContext,
    now: &str,
) -> Result<Option<i64>, sqlx::Error> {
    let q = sqlx::query_scalar(
        "INSERT INTO payrecon_payments (order_id, chain, tx_hash, log_index, amount, \
         block_number, block_hash, state, source, provider, run_id, created_at, state_changed_at, \
         block_time) \
         SELECT $1, $2, $3, $4, $5::numeric, $6, $7, $8, $9, $10, $11, $12::timestamptz, \
         $12::timestamptz, $14::timestamptz \
         WHERE EXISTS (SELECT 1 FROM orders WHERE id = $1 AND ((tx_hash IS NULL \
         AND amount_paid IS NOT DISTINCT FROM $13::numeric) OR (chain = $2 AND tx_hash = $3 \
         AND log_index = $4))) AND NOT EXISTS (SELECT 1 FROM orders o2 WHERE o2.chain = $2 \
         AND o2.tx_hash = $3 AND o2.log_index = $4 AND o2.id <> $1) \
         ON CONFLICT (chain, tx_hash, log_index) DO NOTHING RETURNING id",
    );
    bind_credit!(
        q,
        order_id,
        p,
        ctx,
        now,
        p.block_time.map(|t| t.to_string())
    )
    .fetch_optional(counted(&mut **sp))
    .await
}

/// The held case: the order's `amount_paid` after a credit that leaves it short.
pub(super) async fn sqlite_set_paid(
    sp: &mut Transaction<'_, Sqlite>,
    order_id: i64,
    p: &NewPayment,
) -> Result<bool, sqlx::Error> {
    let res = sqlx::query(
        "UPDATE orders SET amount_paid = ?2 WHERE id = ?1 AND (tx_hash IS NULL OR tx_hash = ?3)",
    )
    .bind(order_id)
    .bind(p.paid_after.to_string())
    .bind(p.key.tx_hash.as_str())
    .execute(counted(&mut **sp))
    .await?;
    Ok(res.rows_affected() == 1)
}

pub(super) async fn pg_set_paid(
    sp: &mut Transaction<'_, Postgres>,
    order_id: i64,
    p: &NewPayment,
) -> Result<bool, sqlx::Error> {
    let res = sqlx::query(
        "UPDATE orders SET amount_paid = $2::numeric WHERE id = $1 \
         AND (tx_hash IS NULL OR tx_hash = $3)",
    )
    .bind(order_id)
    .bind(p.paid_after.to_string())
    .bind(p.key.tx_hash.as_str())
    .execute(counted(&mut **sp))
    .await?;
    Ok(res.rows_affected() == 1)
}

/// An order moved to `to`: its payments in blocks up to the one its key names (as deep or
/// deeper) are at least `to` too. Never moves a payment back.
pub(super) async fn sqlite_follow(
    sp: &mut Transaction<'_, Sqlite>,
    order_id: i64,
    to: State,
    now: &str,
) -> Result<(), sqlx::Error> {
    let rank = rank_sql("state");
    sqlx::query(&format!(
        "UPDATE payrecon_payments SET state = ?2, state_changed_at = ?3 \
         WHERE order_id = ?1 AND {rank} < ?4 AND (block_number IS NULL OR block_number <= \
         COALESCE((SELECT o.block_number FROM orders o WHERE o.id = ?1), block_number))"
    ))
    .bind(order_id)
    .bind(to.as_str())
    .bind(now)
    .bind(to.rank())
    .execute(counted(&mut **sp))
    .await?;
    Ok(())
}

pub(super) async fn pg_follow(
    sp: &mut Transaction<'_, Postgres>,
    order_ids: &[i64],
    to: &[&str],
    now: &str,
) -> Result<(), sqlx::Error> {
    let rank = rank_sql("p.state");
    let to_rank = rank_sql("t.to_state");
    sqlx::query(&format!(
        "UPDATE payrecon_payments p SET state = t.to_state, state_changed_at = $3::timestamptz \
         FROM UNNEST($1::bigint[], $2::text[]) AS t(id, to_state) JOIN orders o ON o.id = t.id \
         WHERE p.order_id = t.id AND {rank} < {to_rank} \
         AND (p.block_number IS NULL OR p.block_number <= COALESCE(o.block_number, p.block_number))"
    ))
    .bind(order_ids)
    .bind(to)
    .bind(now)
    .execute(counted(&mut **sp))
    .await?;
    Ok(())
}

/// The payment row of an order the sweep re-keyed moves with it (same transaction).
pub(super) async fn sqlite_follow_rekey(
    tx: &mut Transaction<'_, Sqlite>,
    r: &super::Rekey,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE payrecon_payments SET log_index = ?5, block_number = ?6, block_hash = ?7 \
         WHERE order_id = ?1 AND chain = ?2 AND tx_hash = ?3 AND log_index = ?4",
    )
    .bind(r.order_id)
    .bind(&r.chain)
    .bind(r.tx_hash.as_str())
    .bind(r.old_log_index)
    .bind(r.new_log_index)
    .bind(i64::try_from(r.new_block.number).unwrap_or(i64::MAX))
    .bind(&r.new_block.hash)
    .execute(counted(&mut **tx))
    .await?;
    Ok(())
}

pub(super) async fn pg_follow_rekey(
    tx: &mut Transaction<'_, Postgres>,
    r: &super::Rekey,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE payrecon_payments SET log_index = $5, block_number = $6, block_hash = $7 \
         WHERE order_id = $1 AND chain = $2 AND tx_hash = $3 AND log_index = $4",
    )
    .bind(r.order_id)
    .bind(&r.chain)
    .bind(r.tx_hash.as_str())
    .bind(r.old_log_index)
    .bind(r.new_log_index)
    .bind(i64::try_from(r.new_block.number).unwrap_or(i64::MAX))
    .bind(&r.new_block.hash)
    .execute(counted(&mut **tx))
    .await?;
    Ok(())
}

/// The columns of a held payment as a ledger row: the order's, with the payment's key,
/// amount and block (`LedgerRow` read by `decode_raw_row`; the key is a payment row's), then
/// the payment's id.
const HELD_COLUMNS: &str = "o.id, o.order_ref, o.chain, o.pay_to, o.asset, {due}, p.tx_hash, \
     p.log_index, {amount}, p.block_number, p.block_hash, o.state, {expires}, {one}, p.id AS payment_id, \
     CASE WHEN p.reorged_at IS NULL THEN {zero} ELSE {one} END, p.state";

/// The payments the sweep follows beside the keyed rows, in keyset order (`{after}`,
/// `{limit}` the binds): those of orders still short (`unpaid`, no key, part of the amount
/// credited; `orders_unpaid_scan`), and the earlier parts of orders a later payment completed (the
/// key names that one) while they are not `final` or are flagged gone
/// (`payrecon_payments_open`), or became final since `{recent}` (`recheck_final`). Each branch
/// reads what its partial index holds, never the whole history.
const HELD_SQL: &str = "SELECT * FROM (\
     SELECT {cols} FROM orders o JOIN payrecon_payments p ON p.order_id = o.id \
     WHERE o.state = 'unpaid' AND o.tx_hash IS NULL AND o.amount_paid IS NOT NULL \
     AND p.id > {after} \
     UNION ALL SELECT {cols} FROM payrecon_payments p JOIN orders o ON o.id = p.order_id \
     WHERE p.id > {after} AND (p.state <> 'final' OR p.reorged_at IS NOT NULL) AND {part} \
     UNION ALL SELECT {cols} FROM payrecon_payments p JOIN orders o ON o.id = p.order_id \
     WHERE p.id > {after} AND p.state = 'final' AND p.reorged_at IS NULL AND {recent} \
     AND {part}) h ORDER BY payment_id LIMIT {limit}";

/// An earlier part of a paid order: not the payment its key names.
const PART: &str = "o.tx_hash IS NOT NULL AND o.state <> 'unpaid' \
     AND NOT (p.tx_hash = o.tx_hash AND p.log_index = o.log_index)";

/// `HELD_SQL` in a dialect (`pg`), with `recent_since` as the recent-final bound.
fn held_sql(pg: bool, recent_since: Option<jiff::Timestamp>) -> String {
    let (due, amount, expires, one, zero, after, limit) = if pg {
        let e = super::rows::pg_ms("o.expires_at");
        (
            "o.amount_due::text",
            "p.amount::text",
            e,
            "1::bigint",
            "0::bigint",
            "$1",
            "$2",
        )
    } else {
        let e = super::rows::sqlite_ms("o.expires_at");
        (
            "CAST(o.amount_due AS TEXT)",
            "CAST(p.amount AS TEXT)",
            e,
            "1",
            "0",
            "?1",
            "?2",
        )
    };
    let recent = match (recent_since, pg) {
        (Some(t), true) => format!("p.state_changed_at >= '{t}'::timestamptz"),
        (Some(t), false) => format!(
            "julianday(p.state_changed_at) >= julianday('{}')",
            super::rows::sqlite_ts(t)
        ),
        (None, true) => "false".into(),
        (None, false) => "0".into(),
    };
    let cols = HELD_COLUMNS
        .replace("{due}", due)
        .replace("{amount}", amount)
        .replace("{expires}", &expires)
        .replace("{one}", one)
        .replace("{zero}", zero);
    HELD_SQL
        .replace("{cols}", &cols)
        .replace("{part}", PART)
        .replace("{recent}", &recent)
        .replace("{after}", after)
        .replace("{limit}", limit)
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
    let pg = matches!(store, super::Store::Postgres(_));
    let sql = held_sql(pg, recent_since);
    let (rows, ids) = super::rows::on_pool!(store, pool => sqlx::query(&sql)
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

/// Decodes `HELD_COLUMNS` rows: the valid ones, and every id read.
#[allow(unused_imports)] // `decode_raw_row!` imports `sqlx::Row`, which `R`'s bound brings
fn held_rows<R: sqlx::Row>(rows: Vec<R>) -> (Vec<HeldPayment>, Vec<i64>)
where
    for<'a> i64: sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    for<'a> String: sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    for<'a> Option<String>: sqlx::Decode<'a, R::Database>,
    for<'a> Option<i64>: sqlx::Decode<'a, R::Database>,
    usize: sqlx::ColumnIndex<R>,
{
    let mut out = Vec::new();
    let mut ids = Vec::new();
    for r in &rows {
        let Ok(id) = r.try_get::<i64, _>(super::rows::ROW_COLUMN_COUNT) else {
            continue;
        };
        ids.push(id);
        let gone = r
            .try_get::<i64, _>(super::rows::ROW_COLUMN_COUNT + 1)
            .is_ok_and(|g| g != 0);
        let state = r
            .try_get::<String, _>(super::rows::ROW_COLUMN_COUNT + 2)
            .ok()
            .and_then(|s| State::parse(&s).ok());
        let Some(state) = state else {
            continue;
        };
        if let Some(row) = valid_rows([super::rows::decode_raw_row!(r)]).pop() {
            out.push(HeldPayment {
                id,
                row,
                gone,
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
    let guard_sqlite = match r.old_block_hash {
        Some(_) => "block_hash = ?8",
        None => "(block_hash IS NULL OR block_hash = '')",
    };
    let guard_pg = guard_sqlite.replace("?8", "$8");
    let block = i64::try_from(r.new_block.number).unwrap_or(i64::MAX);
    let res = match store {
        super::Store::Sqlite(pool) => {
            let sql = format!(
                "UPDATE payrecon_payments SET log_index = ?5, block_number = ?6, \
                 block_hash = ?7 WHERE id = ?1 AND chain = ?2 AND tx_hash = ?3 \
                 AND log_index = ?4 AND {guard_sqlite} AND NOT EXISTS (SELECT 1 FROM orders o \
                 WHERE o.chain = ?2 AND o.tx_hash = ?3 AND o.log_index = ?5)"
            );
            let mut q = sqlx::query(&sql)
                .bind(payment_id)
                .bind(&r.chain)
                .bind(r.tx_hash.as_str())
                .bind(r.old_log_index)
                .bind(r.new_log_index)
                .bind(block)
                .bind(&r.new_block.hash);
            if let Some(h) = &r.old_block_hash {
                q = q.bind(h);
            }
            q.execute(counted(pool)).await.map(|d| d.rows_affected())
        }
        super::Store::Postgres(pool) => {
            let sql = format!(
                "UPDATE payrecon_payments SET log_index = $5, block_number = $6, \
                 block_hash = $7 WHERE id = $1 AND chain = $2 AND tx_hash = $3 \
                 AND log_index = $4 AND {guard_pg} AND NOT EXISTS (SELECT 1 FROM orders o \
                 WHERE o.chain = $2 AND o.tx_hash = $3 AND o.log_index = $5)"
            );
            let mut q = sqlx::query(&sql)
                .bind(payment_id)
                .bind(&r.chain)
                .bind(r.tx_hash.as_str())
                .bind(r.old_log_index)
                .bind(r.new_log_index)
                .bind(block)
                .bind(&r.new_block.hash);
            if let Some(h) = &r.old_block_hash {
                q = q.bind(h);
            }
            q.execute(counted(pool)).await.map(|d| d.rows_affected())
        }
    };
    match res {
        Ok(1) => Ok(super::RekeyOutcome::Rekeyed),
        Ok(_) => Ok(super::RekeyOutcome::Changed),
        Err(e) if super::is_unique_violation(&e) => Ok(super::RekeyOutcome::Collision),
        Err(e) => Err(db_error("re-key a held payment", e)),
    }
}

/// A payment the ledger holds as `final` since before `settled_before`, as its transfer:
/// what the chain said when it became final (the caller reads no receipt for it).
type SettledRow = (
    String,
    i64,
    String,
    i64,
    String,
    String,
    String,
    Option<i64>,
);

/// The `final` payments of these transactions on `chain` whose state has not changed since
/// before `settled_before` (one query per 5,000 transactions; rows that cannot be read are
/// left out, so their records are read on chain).
pub(super) async fn settled(
    store: &super::Store,
    chain: &str,
    txs: &[&str],
    settled_before: jiff::Timestamp,
) -> Result<Vec<crate::domain::ChainTransfer>, StoreError> {
    let mut out = Vec::new();
    for chunk in txs.chunks(LOOKUP_CHUNK) {
        let rows: Vec<SettledRow> = match store {
            super::Store::Sqlite(p) => {
                let sql = format!(
                    "SELECT p.tx_hash, p.log_index, CAST(p.amount AS TEXT), p.block_number, \
                     p.block_hash, o.pay_to, o.asset, {bt} FROM payrecon_payments p \
                     JOIN orders o ON o.id = p.order_id WHERE p.chain = ?1 \
                     AND p.tx_hash IN (SELECT value FROM json_each(?2)) AND p.state = 'final' \
                     AND julianday(p.state_changed_at) < julianday(?3) \
                     AND p.block_number IS NOT NULL AND p.block_hash <> ''",
                    bt = super::rows::sqlite_ms("p.block_time")
                );
                sqlx::query_as(&sql)
                    .bind(chain)
                    .bind(json!(chunk).to_string())
                    .bind(super::rows::sqlite_ts(settled_before))
                    .fetch_all(counted(p))
                    .await
            }
            super::Store::Postgres(p) => {
                let sql = format!(
                    "SELECT p.tx_hash, p.log_index, p.amount::text, p.block_number, \
                     p.block_hash, o.pay_to, o.asset, {bt} FROM payrecon_payments p \
                     JOIN orders o ON o.id = p.order_id WHERE p.chain = $1 \
                     AND p.tx_hash = ANY($2) AND p.state = 'final' \
                     AND p.state_changed_at < $3::timestamptz \
                     AND p.block_number IS NOT NULL AND p.block_hash <> ''",
                    bt = super::rows::pg_ms("p.block_time")
                );
                sqlx::query_as(&sql)
                    .bind(chain)
                    .bind(chunk)
                    .bind(settled_before.to_string())
                    .fetch_all(counted(p))
                    .await
            }
        }
        .map_err(|e| db_error("read the settled payments of a batch", e))?;
        out.extend(rows.into_iter().filter_map(|r| settled_transfer(chain, r)));
    }
    Ok(out)
}

fn settled_transfer(chain: &str, r: SettledRow) -> Option<crate::domain::ChainTransfer> {
    let (tx, log_index, amount, number, hash, pay_to, asset, bt) = r;
    Some(crate::domain::ChainTransfer {
        key: PaymentKey {
            chain: chain.to_string(),
            tx_hash: ledger_tx_hash(&tx).ok()?,
            log_index,
        },
        to: crate::domain::ledger_address(&pay_to).ok()?,
        asset: crate::domain::ledger_asset(&asset).ok()?,
        amount: parse_base_units(&amount).ok()?,
        block: BlockRef {
            number: u64::try_from(number).ok()?,
            hash,
        },
        state: State::Final,
        block_time: bt.and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok()),
    })
}

/// Flags a held payment gone from the chain (`gone`), or on it again, and writes its order's
/// `amount_paid` as the sum of its payments on chain, in one transaction (a reorg is rare:
/// a few statements each). Only an order still short is written: a covered order keeps what
/// it has. False when the flag was already so.
pub(super) async fn set_gone(
    store: &super::Store,
    payment_id: i64,
    gone: bool,
) -> Result<bool, StoreError> {
    let doing = "flag a held payment gone from the chain";
    let now = super::rows::sqlite_ts(jiff::Timestamp::now());
    macro_rules! set_gone_in {
        ($pool:expr, $flag:expr, $read:expr, $write:expr) => {{
            let mut tx = counted($pool)
                .begin()
                .await
                .map_err(|e| db_error(doing, e))?;
            let order: Option<i64> = sqlx::query_scalar($flag)
                .bind(payment_id)
                .bind(gone.then_some(now.as_str()))
                .fetch_optional(counted(&mut *tx))
                .await
                .map_err(|e| db_error(doing, e))?;
            let Some(order_id) = order else {
                return Ok(false);
            };
            let parts: Vec<(String, i64)> = sqlx::query_as($read)
                .bind(order_id)
                .fetch_all(counted(&mut *tx))
                .await
                .map_err(|e| db_error(doing, e))?;
            let paid = parts
                .iter()
                .filter(|(_, g)| *g == 0)
                .filter_map(|(a, _)| parse_base_units(a).ok())
                .try_fold(crate::domain::U256::ZERO, |acc, a| acc.checked_add(a));
            if let Some(paid) = paid {
                sqlx::query($write)
                    .bind(order_id)
                    .bind(paid.to_string())
                    .execute(counted(&mut *tx))
                    .await
                    .map_err(|e| db_error(doing, e))?;
            }
            counted(tx).commit().await.map_err(|e| db_error(doing, e))?;
            Ok(true)
        }};
    }
    match store {
        super::Store::Sqlite(p) => set_gone_in!(
            p,
            "UPDATE payrecon_payments SET reorged_at = ?2 WHERE id = ?1 \
             AND (reorged_at IS NULL) = (?2 IS NOT NULL) RETURNING order_id",
            "SELECT CAST(amount AS TEXT), CASE WHEN reorged_at IS NULL THEN 0 ELSE 1 END \
             FROM payrecon_payments WHERE order_id = ?1",
            "UPDATE orders SET amount_paid = ?2 WHERE id = ?1 AND state = 'unpaid' \
             AND tx_hash IS NULL"
        ),
        super::Store::Postgres(p) => set_gone_in!(
            p,
            "UPDATE payrecon_payments SET reorged_at = $2::timestamptz WHERE id = $1 \
             AND (reorged_at IS NULL) = ($2::timestamptz IS NOT NULL) RETURNING order_id",
            "SELECT amount::text, CASE WHEN reorged_at IS NULL THEN 0::bigint ELSE 1::bigint \
             END FROM payrecon_payments WHERE order_id = $1",
            "UPDATE orders SET amount_paid = $2::numeric WHERE id = $1 AND state = 'unpaid' \
             AND tx_hash IS NULL"
        ),
    }
}

/// Moves payments forward to the states the chain shows (`(payment id, state)`; never back):
/// one statement for all.
pub(super) async fn advance_states(
    store: &super::Store,
    moves: &[(i64, State)],
) -> Result<u64, StoreError> {
    if moves.is_empty() {
        return Ok(0);
    }
    let now = super::rows::sqlite_ts(jiff::Timestamp::now());
    let rank = |c: &str| super::rows::rank_sql(c);
    let res = match store {
        super::Store::Sqlite(p) => {
            let v: Vec<serde_json::Value> = moves
                .iter()
                .map(|(id, s)| json!([id, s.as_str(), s.rank()]))
                .collect();
            let sql = format!(
                "UPDATE payrecon_payments SET state = json_extract(v.value, '$[1]'), \
                 state_changed_at = ?2 FROM json_each(?1) v \
                 WHERE payrecon_payments.id = json_extract(v.value, '$[0]') \
                 AND {} < json_extract(v.value, '$[2]')",
                rank("payrecon_payments.state")
            );
            sqlx::query(&sql)
                .bind(serde_json::Value::Array(v).to_string())
                .bind(&now)
                .execute(counted(p))
                .await
                .map(|r| r.rows_affected())
        }
        super::Store::Postgres(p) => {
            let ids: Vec<i64> = moves.iter().map(|(id, _)| *id).collect();
            let states: Vec<&str> = moves.iter().map(|(_, s)| s.as_str()).collect();
            let ranks: Vec<i64> = moves.iter().map(|(_, s)| s.rank()).collect();
            let sql = format!(
                "UPDATE payrecon_payments p SET state = v.state, \
                 state_changed_at = $4::timestamptz \
                 FROM UNNEST($1::bigint[], $2::text[], $3::bigint[]) AS v(id, state, rank) \
                 WHERE p.id = v.id AND {} < v.rank",
                rank("p.state")
            );
            sqlx::query(&sql)
                .bind(ids)
                .bind(states)
                .bind(ranks)
                .bind(&now)
                .execute(counted(p))
                .await
                .map(|r| r.rows_affected())
        }
    };
    res.map_err(|e| db_error("move payments to the chain's state", e))
}

/// SQLite: records every key of `batch` the merchant's code wrote into an order that stays
/// where it is (`apply::is_adoption`; orders named once in the batch), in two statements: the
/// payment rows (guarded like `sqlite_credit`), then the chain's amount and block on the
/// orders whose row was written. The ids of those orders; the others go row by row.
pub(super) async fn sqlite_adopt_all(
    tx: &mut Transaction<'_, Sqlite>,
    batch: &[crate::domain::PlannedTransition],
    ctx: &ApplyContext,
    now: &str,
    current: &HashMap<i64, String>,
) -> Result<std::collections::HashSet<i64>, sqlx::Error> {
    let mut seen: HashMap<i64, usize> = HashMap::new();
    for t in batch {
        *seen.entry(t.order_id).or_default() += 1;
    }
    let rows: Vec<serde_json::Value> = batch
        .iter()
        .filter(|t| seen.get(&t.order_id) == Some(&1))
        .filter(|t| {
            current
                .get(&t.order_id)
                .is_some_and(|s| super::apply::is_adoption(t, s))
        })
        .filter_map(|t| {
            let p = t.credit.as_ref()?;
            Some(json!([
                t.order_id,
                p.key.chain,
                p.key.tx_hash.as_str(),
                p.key.log_index,
                p.amount.to_string(),
                i64::try_from(p.block.number).unwrap_or(i64::MAX),
                p.block.hash,
                p.state.as_str(),
                p.block_time.map(super::rows::sqlite_ts),
            ]))
        })
        .collect();
    if rows.len() < 2 {
        return Ok(Default::default());
    }
    let rows = serde_json::Value::Array(rows).to_string();
    let v = |i: usize| format!("json_extract(v.value, '$[{i}]')");
    let written: Vec<i64> = sqlx::query_scalar(&format!(
        "INSERT INTO payrecon_payments (order_id, chain, tx_hash, log_index, amount, \
         block_number, block_hash, state, source, provider, run_id, created_at, \
         state_changed_at, block_time) \
         SELECT {id}, {chain}, {tx}, {li}, {amount}, {bn}, {bh}, {state}, 'merchant', ?2, ?3, \
         ?4, ?4, {bt} FROM json_each(?1) v \
         WHERE EXISTS (SELECT 1 FROM orders o WHERE o.id = {id} AND o.chain = {chain} \
         AND o.tx_hash = {tx} AND o.log_index = {li}) \
         ON CONFLICT (chain, tx_hash, log_index) DO NOTHING RETURNING order_id",
        id = v(0),
        chain = v(1),
        tx = v(2),
        li = v(3),
        amount = v(4),
        bn = v(5),
        bh = v(6),
        state = v(7),
        bt = v(8),
    ))
    .bind(&rows)
    .bind(&ctx.provider)
    .bind(ctx.run_id_or_null())
    .bind(now)
    .fetch_all(counted(&mut **tx))
    .await?;
    if written.is_empty() {
        return Ok(Default::default());
    }
    // Driven by the rows (each finds its order by id), not by the orders.
    let e = |i: usize| format!("json_extract(value, '$[{i}]')");
    sqlx::query(&format!(
        "UPDATE orders SET amount_paid = v.amount, block_number = v.bn, block_hash = v.bh \
         FROM (SELECT {id} AS id, {tx} AS tx, {li} AS li, {amount} AS amount, {bn} AS bn, \
         {bh} AS bh FROM json_each(?1) WHERE {id} IN (SELECT value FROM json_each(?2))) v \
         WHERE orders.id = v.id AND orders.tx_hash = v.tx AND orders.log_index = v.li",
        id = e(0),
        tx = e(2),
        li = e(3),
        amount = e(4),
        bn = e(5),
        bh = e(6),
    ))
    .bind(&rows)
    .bind(json!(written).to_string())
    .execute(counted(&mut **tx))
    .await?;
    Ok(written.into_iter().collect())
}
