//! `payrecon_balances` (docs/reference.md §3): where each deposit address's last balance check
//! ended, per asset, and the scope of a check (the deposit addresses of recent orders). One
//! statement per read and per chunk of rows written.

use jiff::Timestamp;

use super::backend::dispatch;
use super::dialect::Dialect;
use super::rows::{counted, db_error};
use super::{Store, StoreError};
use crate::domain::{parse_base_units, Delta, U256};

/// One address's last check (amounts in base units).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BalanceRow {
    pub chain: String,
    pub address: String,
    /// `native`, or the token's address.
    pub asset: String,
    /// The block of the first check, and what the address held there (not an exception).
    pub opening_block: u64,
    pub opening_balance: U256,
    /// The final block the last check read to, and the balance there.
    pub checked_block: u64,
    pub balance: U256,
    /// The opening, plus the inflows, minus the outflows read since.
    pub expected: Delta,
    /// `balance − expected`: what nothing has explained.
    pub difference: Delta,
    pub checked_at: Timestamp,
}

/// A deposit address to check: a `(chain, pay_to, asset)` of recent orders, with the oldest
/// order's creation (where its first check starts).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BalanceScope {
    pub chain: String,
    pub address: String,
    pub asset: String,
    pub oldest_order: Timestamp,
}

/// One chain's balance gauges (`payrecon_balance_mismatched_addresses`,
/// `payrecon_last_balance_check_timestamp_seconds`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BalanceGauge {
    pub chain: String,
    pub mismatched: i64,
    pub last_check: Timestamp,
}

from_row! {
    /// A row as stored: amounts as text, times in milliseconds.
    struct RawBalance {
        chain: String,
        address: String,
        asset: String,
        opening_block: i64,
        opening_balance: String,
        checked_block: i64,
        balance: String,
        expected: String,
        difference: String,
        checked_ms: i64,
    }
}

impl RawBalance {
    fn decode(self) -> Result<BalanceRow, StoreError> {
        let bad = |what: &str| {
            StoreError::Invalid(format!(
                "payrecon_balances ({}, {}, {}): {what} is not readable",
                self.chain, self.address, self.asset
            ))
        };
        let amount = |v: &str, what| parse_base_units(v).map_err(|_| bad(what));
        let delta = |v: &str, what| Delta::parse(v).ok_or_else(|| bad(what));
        Ok(BalanceRow {
            opening_block: u64::try_from(self.opening_block).map_err(|_| bad("opening_block"))?,
            opening_balance: amount(&self.opening_balance, "opening_balance")?,
            checked_block: u64::try_from(self.checked_block).map_err(|_| bad("checked_block"))?,
            balance: amount(&self.balance, "balance")?,
            expected: delta(&self.expected, "expected")?,
            difference: delta(&self.difference, "difference")?,
            checked_at: Timestamp::from_millisecond(self.checked_ms)
                .map_err(|_| bad("checked_at"))?,
            chain: self.chain.clone(),
            address: self.address.clone(),
            asset: self.asset.clone(),
        })
    }
}

/// The columns of `RawBalance`, in a dialect's spellings.
/// A difference other than zero, as `payrecon_balances_mismatched`'s predicate says it.
fn nonzero<D: Dialect>() -> String {
    format!("difference <> '0'{}", D::AMOUNT_CAST)
}

fn columns<D: Dialect>() -> String {
    format!(
        "chain, address, asset, opening_block, {} AS opening_balance, checked_block, \
         {} AS balance, {} AS expected, {} AS difference, {} AS checked_ms",
        D::amount_text("opening_balance"),
        D::amount_text("balance"),
        D::amount_text("expected"),
        D::amount_text("difference"),
        D::ms("checked_at"),
    )
}

impl Store {
    /// The last check of every address (of `chain`, when given; only those with a difference
    /// when `mismatched`), by chain, address and asset.
    pub async fn balances(
        &self,
        chain: Option<&str>,
        mismatched: bool,
    ) -> Result<Vec<BalanceRow>, StoreError> {
        let raws: Vec<RawBalance> = dispatch!(self, p => {
            let mut sql = format!(
                "SELECT {} FROM payrecon_balances WHERE ({} IS NULL OR chain = {})",
                columns::<D>(),
                D::text(1),
                D::p(2)
            );
            if mismatched {
                sql.push_str(&format!(" AND {}", nonzero::<D>()));
            }
            sql.push_str(" ORDER BY chain, address, asset");
            sqlx::query_as(&sql)
                .bind(chain)
                .bind(chain)
                .fetch_all(counted(p))
                .await
        })
        .map_err(|e| db_error("read the balances", e))?;
        raws.into_iter().map(RawBalance::decode).collect()
    }

    /// A keyset page of the addresses whose last check left a difference: the first `limit`
    /// after `after` (chain, address, asset), in that order (`payrecon_balances_mismatched`).
    pub async fn mismatched_balances(
        &self,
        after: Option<(&str, &str, &str)>,
        limit: i64,
    ) -> Result<Vec<BalanceRow>, StoreError> {
        let (c, a, t) = after.unwrap_or(("", "", ""));
        let raws: Vec<RawBalance> = dispatch!(self, p => {
            let sql = format!(
                "SELECT {} FROM payrecon_balances WHERE {} AND (chain > {} OR (chain = {} \
                 AND (address > {} OR (address = {} AND asset > {})))) \
                 ORDER BY chain, address, asset LIMIT {}",
                columns::<D>(),
                nonzero::<D>(),
                D::p(1),
                D::p(2),
                D::p(3),
                D::p(4),
                D::p(5),
                D::p(6)
            );
            sqlx::query_as(&sql)
                .bind(c)
                .bind(c)
                .bind(a)
                .bind(a)
                .bind(t)
                .bind(limit)
                .fetch_all(counted(p))
                .await
        })
        .map_err(|e| db_error("read the balances", e))?;
        raws.into_iter().map(RawBalance::decode).collect()
    }

    /// Writes the rows of a check (one upsert per `Dialect::INSERT_ROWS` rows).
    pub async fn save_balances(&self, rows: &[BalanceRow]) -> Result<(), StoreError> {
        dispatch!(self, p => {
            for chunk in rows.chunks(D::INSERT_ROWS) {
                let mut qb = sqlx::QueryBuilder::<D>::new(
                    "INSERT INTO payrecon_balances (chain, address, asset, opening_block, \
                     opening_balance, checked_block, balance, expected, difference, checked_at) ",
                );
                qb.push_values(chunk, |mut b, r| {
                    b.push_bind(r.chain.as_str())
                        .push_bind(r.address.as_str())
                        .push_bind(r.asset.as_str())
                        .push_bind(i64::try_from(r.opening_block).unwrap_or(i64::MAX))
                        .push_bind(r.opening_balance.to_string())
                        .push_unseparated(D::AMOUNT_CAST)
                        .push_bind(i64::try_from(r.checked_block).unwrap_or(i64::MAX))
                        .push_bind(r.balance.to_string())
                        .push_unseparated(D::AMOUNT_CAST)
                        .push_bind(r.expected.to_string())
                        .push_unseparated(D::AMOUNT_CAST)
                        .push_bind(r.difference.to_string())
                        .push_unseparated(D::AMOUNT_CAST)
                        .push_bind(D::ts_bind(r.checked_at))
                        .push_unseparated(D::TS_CAST);
                });
                qb.push(" ").push(D::upsert(
                    "(chain, address, asset)",
                    "checked_block = excluded.checked_block, balance = excluded.balance, \
                     expected = excluded.expected, difference = excluded.difference, \
                     checked_at = excluded.checked_at",
                ));
                qb.build()
                    .execute(counted(p))
                    .await
                    .map_err(|e| db_error("record balances", e))?;
            }
            Ok::<(), StoreError>(())
        })
    }

    /// Per chain checked: the addresses and assets whose last check left a difference, and
    /// the time of the last check (the balance gauges, read back when serve starts).
    pub async fn balance_gauges(&self) -> Result<Vec<BalanceGauge>, StoreError> {
        let rows: Vec<(String, i64, i64)> = dispatch!(self, p => {
            let sql = format!(
                "SELECT chain, COUNT(CASE WHEN {} <> '0' THEN 1 END), MAX({}) \
                 FROM payrecon_balances GROUP BY chain ORDER BY chain",
                D::amount_text("difference"),
                D::ms("checked_at")
            );
            sqlx::query_as(&sql).fetch_all(counted(p)).await
        })
        .map_err(|e| db_error("count the mismatched balances", e))?;
        Ok(rows
            .into_iter()
            .filter_map(|(chain, mismatched, ms)| {
                Some(BalanceGauge {
                    chain,
                    mismatched,
                    last_check: Timestamp::from_millisecond(ms).ok()?,
                })
            })
            .collect())
    }

    /// Every `(chain, pay_to, asset)` of the orders created at or after `since`, with the
    /// oldest such order's creation, by chain, address and asset.
    pub async fn balance_scope(&self, since: Timestamp) -> Result<Vec<BalanceScope>, StoreError> {
        let rows: Vec<(String, String, String, i64)> = dispatch!(self, p => {
            let sql = format!(
                "SELECT chain, pay_to, asset, MIN({}) FROM orders WHERE {} >= {} \
                 GROUP BY chain, pay_to, asset ORDER BY chain, pay_to, asset",
                D::ms("created_at"),
                D::cmp_time("created_at"),
                D::cmp_ts(1)
            );
            sqlx::query_as(&sql)
                .bind(D::ts_bind(since))
                .fetch_all(counted(p))
                .await
        })
        .map_err(|e| db_error("read the deposit addresses to check", e))?;
        Ok(rows
            .into_iter()
            .filter_map(|(chain, address, asset, ms)| {
                Some(BalanceScope {
                    chain,
                    address,
                    asset,
                    oldest_order: Timestamp::from_millisecond(ms).ok()?,
                })
            })
            .collect())
    }
}
