//! Credited payments as the chain shows them later: the `final` ones the sweep need not read
//! again (`settled`), a held payment gone from the chain or back (`set_gone`), and payments
//! moved forward to the chain's states (`advance_states`).

use crate::domain::{ledger_tx_hash, parse_base_units, BlockRef, PaymentKey, State};
use crate::store::backend::dispatch;
use crate::store::rows::{counted, db_error, ms_time, LOOKUP_CHUNK};
use crate::store::StoreError;

from_row! {
    /// A payment the ledger holds as `final` since before `settled_before`, as its transfer:
    /// what the chain said when it became final (the caller reads no receipt for it).
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
}

/// The `final` payments of these transactions on `chain` whose state has not changed since
/// before `settled_before` (one query per 5,000 transactions; rows that cannot be read are
/// left out, so their records are read on chain).
pub(in crate::store) async fn settled(
    store: &crate::store::Store,
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
pub(in crate::store) async fn set_gone(
    store: &crate::store::Store,
    payment_id: i64,
    gone: bool,
) -> Result<bool, StoreError> {
    let doing = "flag a held payment gone from the chain";
    let now = crate::store::rows::sqlite_ts(jiff::Timestamp::now());
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
pub(in crate::store) async fn advance_states(
    store: &crate::store::Store,
    moves: &[(i64, State)],
) -> Result<u64, StoreError> {
    if moves.is_empty() {
        return Ok(0);
    }
    let now = crate::store::rows::sqlite_ts(jiff::Timestamp::now());
    let res = dispatch!(store, p => D::advance_payment_states(p, moves, &now).await);
    res.map_err(|e| db_error("move payments to the chain's state", e))
}
