//! Backend-neutral helpers: reading ledger rows strictly (a bad row is skipped with a
//! warning, never a panic), timestamp spelling, chunking, and error text without secrets.

use jiff::Timestamp;

use crate::domain::{
    ledger_address, ledger_asset, ledger_tx_hash, parse_base_units, BlockRef, InputError,
    LedgerRow, PaymentKey, State,
};
use crate::secret::{redact, redact_url, Secret};

use super::StoreError;

/// Marks one statement about to be sent through `x` (an executor, transaction or pool at the
/// call site): counted with feature `stats` (`crate::stats`), nothing otherwise.
#[inline(always)]
pub(crate) fn counted<T>(x: T) -> T {
    #[cfg(feature = "stats")]
    crate::stats::count_statement();
    x
}

/// A list bound as one JSON array (SQLite's `json_each`, MariaDB/MySQL's `JSON_TABLE`).
pub(crate) fn json_list<T: serde::Serialize>(values: &[T]) -> String {
    serde_json::to_string(values).unwrap_or_else(|_| "[]".into())
}

/// Keys (and slots) per lookup query: far below every bind or array limit.
pub(crate) const LOOKUP_CHUNK: usize = 5_000;

from_row! {
    /// A ledger row as the database returned it, before validation: the columns of
    /// `Dialect::ROW_COLUMNS`, read by name. The computed columns carry aliases no stored column
    /// has (`amount_due_text`, …), so that an `ORDER BY` of the stored column still sorts by it.
    pub(crate) struct RawRow {
        pub id: i64,
        pub order_ref: String,
        pub chain: String,
        pub pay_to: String,
        pub asset: String,
        pub amount_due: String => "amount_due_text",
        pub tx_hash: Option<String>,
        pub log_index: Option<i64>,
        pub amount_paid: Option<String> => "amount_paid_text",
        pub block_number: Option<i64>,
        pub block_hash: Option<String>,
        pub state: String,
        /// `orders.expires_at` in milliseconds since the epoch.
        pub expires_at_ms: Option<i64>,
        /// 1: no key, or a payment row holds it; 0: the merchant's own code wrote the key.
        pub key_credited: i64,
    }
}

/// Reads a `RawRow` (and, through `T`, whatever a query selects beside it) from one row:
/// `Err` carries the row's `order_ref` (or `?`) and the reason, for `valid_rows` to log.
pub(crate) fn decode_row<'r, T, R>(r: &'r R) -> Result<T, (String, String)>
where
    R: sqlx::Row,
    T: sqlx::FromRow<'r, R>,
    &'r str: sqlx::ColumnIndex<R>,
    String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    T::from_row(r).map_err(|e| {
        let order_ref: Option<String> = r.try_get("order_ref").ok();
        (order_ref.unwrap_or_else(|| "?".into()), e.to_string())
    })
}

impl RawRow {
    /// Validates every value: state, amounts, hash, block number.
    pub fn parse(self) -> Result<LedgerRow, InputError> {
        let state = State::parse(&self.state)?;
        let amount_due = parse_base_units(&self.amount_due)?;
        let amount_paid = self
            .amount_paid
            .as_deref()
            .map(parse_base_units)
            .transpose()?;
        let key = match (self.tx_hash.as_deref(), self.log_index) {
            (Some(tx), Some(log_index)) => Some(PaymentKey {
                chain: self.chain.clone(),
                tx_hash: ledger_tx_hash(tx)?,
                log_index,
            }),
            (None, None) => None,
            _ => {
                return Err(InputError::new(
                    "tx_hash",
                    "tx_hash and log_index must be both set or both null",
                ))
            }
        };
        let block = match (self.block_number, self.block_hash) {
            (Some(n), Some(hash)) => Some(BlockRef {
                number: u64::try_from(n)
                    .map_err(|_| InputError::new("block_number", format!("negative: {n}")))?,
                hash,
            }),
            _ => None,
        };
        Ok(LedgerRow {
            id: self.id,
            order_ref: self.order_ref,
            pay_to: ledger_address(&self.pay_to)?,
            asset: ledger_asset(&self.asset)?,
            chain: self.chain,
            amount_due,
            key,
            amount_paid,
            block,
            state,
            credits: Vec::new(),
            expires_at: self
                .expires_at_ms
                .map(|ms| {
                    jiff::Timestamp::from_millisecond(ms).map_err(|_| {
                        InputError::new("expires_at", format!("out of range: {ms} ms"))
                    })
                })
                .transpose()?,
            merchant_key: self.key_credited == 0,
        })
    }
}

/// Keeps the rows that decode and validate; logs each skipped one with its order_ref.
pub(crate) fn valid_rows(
    raws: impl IntoIterator<Item = Result<RawRow, (String, String)>>,
) -> Vec<LedgerRow> {
    let mut out = Vec::new();
    for raw in raws {
        let parsed = raw.and_then(|r| {
            let order_ref = r.order_ref.clone();
            r.parse().map_err(|e| (order_ref, e.to_string()))
        });
        match parsed {
            Ok(row) => out.push(row),
            Err((order_ref, reason)) => {
                tracing::warn!(order_ref = %order_ref, reason = %reason,
                    "Skipped a ledger row that cannot be read.");
            }
        }
    }
    out
}

/// A time read back as milliseconds since the epoch (`Dialect::ms`); None for NULL or a value
/// out of range.
pub(crate) fn ms_time(ms: Option<i64>) -> Option<Timestamp> {
    ms.and_then(|m| Timestamp::from_millisecond(m).ok())
}

/// The same, spelled as `sqlite_ts` spells every time payrecon shows.
pub(crate) fn ms_text(ms: Option<i64>) -> Option<String> {
    ms_time(ms).map(sqlite_ts)
}

/// RFC 3339 UTC with exactly three fractional digits: the spelling of SQLite's
/// `strftime('%Y-%m-%dT%H:%M:%fZ')`, so stored timestamps compare correctly as text.
pub(crate) fn sqlite_ts(t: Timestamp) -> String {
    let ms = t.as_millisecond();
    let whole = Timestamp::from_second(ms.div_euclid(1000)).unwrap_or(t);
    format!(
        "{}.{:03}Z",
        whole.strftime("%Y-%m-%dT%H:%M:%S"),
        ms.rem_euclid(1000)
    )
}

/// `now - cooldown`, saturating at the earliest representable time.
pub(crate) fn cutoff(now: Timestamp, cooldown: std::time::Duration) -> Timestamp {
    jiff::SignedDuration::try_from(cooldown)
        .ok()
        .and_then(|d| now.checked_sub(d).ok())
        .unwrap_or(Timestamp::MIN)
}

pub(crate) fn rank_sql(column: &str) -> String {
    format!(
        "(CASE {column} WHEN 'unpaid' THEN 0 WHEN 'pending' THEN 1 \
         WHEN 'confirmed' THEN 2 WHEN 'final' THEN 3 ELSE 99 END)"
    )
}

/// `doing` failed. (Query errors carry no URL; connection errors go through `connect_error`.)
/// A payrecon table missing is `NoSchema`.
pub(crate) fn db_error(doing: &str, e: sqlx::Error) -> StoreError {
    let what = doing.to_string();
    if super::error::missing_table(&e) {
        StoreError::NoSchema { what, source: e }
    } else {
        StoreError::Query { what, source: e }
    }
}

/// Connecting failed: names the redacted URL and scrubs the password from the driver's text.
pub(crate) fn connect_error(url: &str, e: impl std::fmt::Display) -> StoreError {
    let mut secrets = Vec::new();
    if let Some(pw) = url_password(url) {
        secrets.push(Secret::new(percent_decode(&pw)));
        secrets.push(Secret::new(pw));
    }
    let refs: Vec<&Secret> = secrets.iter().collect();
    let text = redact(&e.to_string(), &refs);
    StoreError::Connect {
        url: redact_url(url),
        reason: text,
    }
}

fn url_password(url: &str) -> Option<String> {
    let (_, rest) = url.split_once("://")?;
    let (userinfo, _) = rest.rsplit_once('@')?;
    let (_, pw) = userinfo.split_once(':')?;
    Some(pw.to_string())
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
            if let Ok(b) = u8::from_str_radix(hex, 16) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The rows a claim returns: `id, order_id, body, attempts`.
pub(crate) type ClaimedRow = (String, i64, String, i64);

from_row! {
    /// An order's row as the registry reads it back (`registry::read_views`).
    pub(crate) struct ViewRow {
        pub(crate) id: i64,
        pub(crate) order_ref: String,
        pub(crate) chain: String,
        pub(crate) pay_to: String,
        pub(crate) asset: String,
        pub(crate) amount_due: String,
        pub(crate) amount_paid: Option<String>,
        pub(crate) state: String,
        pub(crate) tx_hash: Option<String>,
        pub(crate) log_index: Option<i64>,
        pub(crate) block_number: Option<i64>,
        pub(crate) block_hash: Option<String>,
        pub(crate) expires_ms: Option<i64>,
        pub(crate) created_ms: Option<i64>,
        pub(crate) changed_ms: Option<i64>,
        pub(crate) updated_ms: Option<i64>,
        pub(crate) reference: Option<String>,
    }
}

#[cfg(test)]
mod tests;
