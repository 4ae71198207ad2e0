//! `payrecon_payments` (docs/reference.md §3): a payment credited to an order, written in the
//! transaction of the order's `amount_paid`; the ledger lookups that find an order by any of
//! its credited payments; and the credited payments of orders still short.

use std::collections::HashMap;

use super::dialect::{dispatch, Dialect};
use super::rows::{counted, db_error, ms_time, valid_rows, LOOKUP_CHUNK};
use super::{ApplyContext, StoreError};
use crate::domain::{
    ledger_tx_hash, parse_base_units, BlockRef, CreditedPayment, LedgerRow, LedgerView, NewPayment,
    PaymentKey, State,
};

/// The columns of a credited payment (`CreditRow`; `{bt}`: the block time in milliseconds,
/// per backend).
const CREDIT_COLUMNS: &str =
    "p.order_id, p.chain, p.tx_hash, p.log_index, {amount} AS amount_text, \
     p.state, p.block_number, p.block_hash, {bt} AS block_ms, \
     CASE WHEN p.reorged_at IS NULL THEN {zero} ELSE {one} END AS gone";

/// A credited payment as the database returned it (`CREDIT_COLUMNS`).
#[derive(sqlx::FromRow)]
struct CreditRow {
    order_id: i64,
    chain: String,
    tx_hash: String,
    log_index: i64,
    amount_text: String,
    state: String,
    block_number: Option<i64>,
    block_hash: Option<String>,
    block_ms: Option<i64>,
    gone: i64,
}

fn decode_credit(r: CreditRow) -> Option<(i64, CreditedPayment)> {
    let CreditRow {
        order_id,
        chain,
        tx_hash: tx,
        log_index,
        amount_text: amount,
        state,
        block_number: number,
        block_hash: hash,
        block_ms: bt,
        gone,
    } = r;
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
            block_time: ms_time(bt),
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
        let found: Vec<CreditRow> = dispatch!(store, p => {
            let cols = CREDIT_COLUMNS
                .replace("{amount}", &D::amount_text("p.amount"))
                .replace("{bt}", &D::ms("p.block_time"))
                .replace("{zero}", &D::int8("0"))
                .replace("{one}", &D::int8("1"));
            let sql = format!(
                "SELECT {cols} FROM payrecon_payments p WHERE {} \
                 ORDER BY p.order_id, p.block_number, p.log_index",
                D::any("p.order_id", 1)
            );
            sqlx::query_as(&sql)
                .bind(D::ints(chunk))
                .fetch_all(counted(p))
                .await
                .map_err(|e| db_error("read the payments of partly paid orders", e))?
        });
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

/// Decodes rows of `by_key_sql` into the view: by the order's own key, or by the key of a
/// payment credited to it (`matched_tx_hash`, `matched_log_index`).
macro_rules! insert_by_key {
    ($view:expr, $rows:expr) => {{
        use sqlx::Row as _;
        let mut matched = Vec::new();
        let raws = $rows.iter().map(|r| {
            let key: Result<(String, i64), sqlx::Error> = r
                .try_get("matched_tx_hash")
                .and_then(|t| Ok((t, r.try_get("matched_log_index")?)));
            matched.push(key.ok());
            $crate::store::rows::decode_row::<$crate::store::rows::RawRow, _>(r)
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

/// Binds a credit's values in the order `credit_sql` numbers them, each placeholder once in
/// the order of the text (MariaDB/MySQL's `?` are positional): the row (1 order id, 2 chain,
/// 3 tx hash, 4 log index, 5 amount, 6 block number, 7 block hash, 8 state, 9 source,
/// 10 provider, 11 run id, 12 and 13 now, 14 block time as `$bt`), then the guards (15 order
/// id, 16 amount before, 17–19 the key, 20–22 the key, 23 order id).
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
            .bind($crate::store::payments::payment_source($p, $ctx))
            .bind(&$ctx.provider)
            .bind($ctx.run_id_or_null())
            .bind($now)
            .bind($now)
            .bind($bt)
            .bind($order_id)
            .bind($p.paid_before.map(|a| a.to_string()))
            .bind(&$p.key.chain)
            .bind($p.key.tx_hash.as_str())
            .bind($p.key.log_index)
            .bind(&$p.key.chain)
            .bind($p.key.tx_hash.as_str())
            .bind($p.key.log_index)
            .bind($order_id)
    };
}

pub(crate) use bind_credit;

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
/// code): one INSERT guarded by that (a payment credits one order, ever). The payment's id;
/// `None` when nothing was written (the key is credited already, or the order moved).
/// `ApplySql::credit` for a backend `$db`.
macro_rules! credit {
    ($db:ty, $sp:expr, $order_id:expr, $p:expr, $ctx:expr, $now:expr) => {{
        use $crate::store::dialect::Dialect as _;
        let sql = $crate::store::payments::credit_sql::<$db>();
        $crate::store::payments::bind_credit!(
            sqlx::query_scalar(&sql),
            $order_id,
            $p,
            $ctx,
            $now,
            $p.block_time.map(<$db>::ts_bind)
        )
        .fetch_optional($crate::store::rows::counted(&mut **$sp))
        .await
    }};
}
pub(super) use credit;

/// `credit!`'s INSERT, binds as `bind_credit!` numbers them.
pub(super) fn credit_sql<D: Dialect>() -> String {
    format!(
        "{} ON CONFLICT (chain, tx_hash, log_index) DO NOTHING RETURNING id",
        credit_insert_sql::<D>("")
    )
}

/// The guarded `INSERT … SELECT` of a credit, binds as `bind_credit!` numbers them; `from`
/// is what the SELECT of constants needs before its WHERE (MySQL: ` FROM DUAL`).
pub(crate) fn credit_insert_sql<D: Dialect>(from: &str) -> String {
    let p = D::p;
    format!(
        "INSERT INTO payrecon_payments (order_id, chain, tx_hash, log_index, amount, \
         block_number, block_hash, state, source, provider, run_id, created_at, state_changed_at, \
         block_time) \
         SELECT {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}{from} \
         WHERE EXISTS (SELECT 1 FROM orders WHERE id = {} AND ((tx_hash IS NULL \
         AND {}) OR (chain = {} AND tx_hash = {} AND log_index = {}))) \
         AND NOT EXISTS (SELECT 1 FROM orders o2 WHERE o2.chain = {} AND o2.tx_hash = {} \
         AND o2.log_index = {} AND o2.id <> {})",
        p(1),
        p(2),
        p(3),
        p(4),
        D::amount(5),
        p(6),
        p(7),
        p(8),
        p(9),
        p(10),
        p(11),
        D::ts(12),
        D::ts(13),
        D::ts(14),
        p(15),
        D::same("amount_paid", &D::amount(16)),
        p(17),
        p(18),
        p(19),
        p(20),
        p(21),
        p(22),
        p(23),
    )
}

/// The held case: the order's `amount_paid` after a credit that leaves it short
/// (`ApplySql::set_paid` for a backend `$db`); true when written.
macro_rules! set_paid {
    ($db:ty, $sp:expr, $order_id:expr, $p:expr) => {{
        use $crate::store::dialect::Dialect as _;
        let sql = format!(
            "UPDATE orders SET amount_paid = {} WHERE id = {} AND (tx_hash IS NULL OR tx_hash = {})",
            <$db>::amount(1),
            <$db>::p(2),
            <$db>::p(3)
        );
        sqlx::query(&sql)
            .bind($p.paid_after.to_string())
            .bind($order_id)
            .bind($p.key.tx_hash.as_str())
            .execute($crate::store::rows::counted(&mut **$sp))
            .await
            .map(|r| r.rows_affected() == 1)
    }};
}
pub(super) use set_paid;

/// A payment the ledger holds as `final` since before `settled_before`, as its transfer:
/// what the chain said when it became final (the caller reads no receipt for it).
#[derive(sqlx::FromRow)]
struct SettledRow {
    tx_hash: String,
    log_index: i64,
    amount_text: String,
    block_number: i64,
    block_hash: String,
    pay_to: String,
    asset: String,
    block_ms: Option<i64>,
}

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
        let rows: Vec<SettledRow> = dispatch!(store, p => {
            let sql = format!(
                "SELECT p.tx_hash, p.log_index, {} AS amount_text, p.block_number, \
                 p.block_hash, o.pay_to, o.asset, {} AS block_ms FROM payrecon_payments p \
                 JOIN orders o ON o.id = p.order_id WHERE p.chain = {} \
                 AND {} AND p.state = 'final' \
                 AND {} < {} \
                 AND p.block_number IS NOT NULL AND p.block_hash <> ''",
                D::amount_text("p.amount"),
                D::ms("p.block_time"),
                D::p(1),
                D::any("p.tx_hash", 2),
                D::cmp_time("p.state_changed_at"),
                D::cmp_ts(3)
            );
            sqlx::query_as(&sql)
                .bind(chain)
                .bind(D::texts(chunk))
                .bind(D::ts_bind(settled_before))
                .fetch_all(counted(p))
                .await
        })
        .map_err(|e| db_error("read the settled payments of a batch", e))?;
        out.extend(rows.into_iter().filter_map(|r| settled_transfer(chain, r)));
    }
    Ok(out)
}

fn settled_transfer(chain: &str, r: SettledRow) -> Option<crate::domain::ChainTransfer> {
    Some(crate::domain::ChainTransfer {
        key: PaymentKey {
            chain: chain.to_string(),
            tx_hash: ledger_tx_hash(&r.tx_hash).ok()?,
            log_index: r.log_index,
        },
        to: crate::domain::ledger_address(&r.pay_to).ok()?,
        asset: crate::domain::ledger_asset(&r.asset).ok()?,
        amount: parse_base_units(&r.amount_text).ok()?,
        block: BlockRef {
            number: u64::try_from(r.block_number).ok()?,
            hash: r.block_hash,
        },
        state: State::Final,
        block_time: ms_time(r.block_ms),
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
        ($pool:expr, $flag:expr, $order:expr, $read:expr, $write:expr) => {{
            let mut tx = counted($pool)
                .begin()
                .await
                .map_err(|e| db_error(doing, e))?;
            let flagged = sqlx::query($flag)
                .bind(gone.then_some(now.as_str()))
                .bind(payment_id)
                .bind(gone.then_some(now.as_str()))
                .execute(counted(&mut *tx))
                .await
                .map_err(|e| db_error(doing, e))?;
            if flagged.rows_affected() != 1 {
                return Ok(false);
            }
            // Read after the UPDATE (MariaDB/MySQL have no `UPDATE … RETURNING`).
            let order_id: i64 = sqlx::query_scalar($order)
                .bind(payment_id)
                .fetch_one(counted(&mut *tx))
                .await
                .map_err(|e| db_error(doing, e))?;
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
                    .bind(paid.to_string())
                    .bind(order_id)
                    .execute(counted(&mut *tx))
                    .await
                    .map_err(|e| db_error(doing, e))?;
            }
            counted(tx).commit().await.map_err(|e| db_error(doing, e))?;
            Ok(true)
        }};
    }
    dispatch!(store, p => set_gone_in!(
        p,
        &format!(
            "UPDATE payrecon_payments SET reorged_at = {} WHERE id = {} \
             AND (reorged_at IS NULL) = ({} IS NOT NULL)",
            D::ts(1),
            D::p(2),
            D::ts(3)
        ),
        &format!("SELECT order_id FROM payrecon_payments WHERE id = {}", D::p(1)),
        &format!(
            "SELECT {}, CASE WHEN reorged_at IS NULL THEN {} ELSE {} END \
             FROM payrecon_payments WHERE order_id = {}",
            D::amount_text("amount"),
            D::int8("0"),
            D::int8("1"),
            D::p(1)
        ),
        &format!(
            "UPDATE orders SET amount_paid = {} WHERE id = {} AND state = 'unpaid' \
             AND tx_hash IS NULL",
            D::amount(1),
            D::p(2)
        )
    ))
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
    let res = dispatch!(store, p => D::advance_payment_states(p, moves, &now).await);
    res.map_err(|e| db_error("move payments to the chain's state", e))
}
