//! `payrecon_payments` (docs/reference.md §3): a payment credited to an order, written in the
//! transaction of the order's `amount_paid`; the ledger lookups that find an order by any of
//! its credited payments; and the credited payments of orders still short.

use std::collections::HashMap;

use super::backend::dispatch;
use super::dialect::Dialect;
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

from_row! {
    /// A credited payment as the database returned it (`CREDIT_COLUMNS`).
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

/// The `source` of a payment row: `merchant` for a key the merchant's own code wrote into
/// its order, else the step's (`reconcile`, `webhook`).
pub(super) fn payment_source<'a>(p: &NewPayment, ctx: &'a ApplyContext) -> &'a str {
    if p.merchant {
        "merchant"
    } else {
        ctx.source.as_str()
    }
}

/// A credit of `p` to its order when the order has no payment key and its `amount_paid` is
/// still `p.paid_before`, or when the order's own key is `p`'s (written by the merchant's
/// code): one INSERT guarded by that (a payment credits one order, ever), `RETURNING id`.
/// Binds as `SharedSql::credit_query` numbers them.
pub(super) fn credit_sql<D: Dialect>() -> String {
    format!(
        "{} ON CONFLICT (chain, tx_hash, log_index) DO NOTHING RETURNING id",
        credit_insert_sql::<D>("")
    )
}

/// The guarded `INSERT … SELECT` of a credit, binds as `SharedSql::credit_query` numbers them; `from`
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

mod chain_states;
pub(super) use chain_states::{advance_states, set_gone, settled};
