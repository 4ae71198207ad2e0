//! `payrecon_list_reads`: per provider list, what the last run read of it (pages read of
//! pages total) and when it was last read whole, which `full_scan_every` counts from
//! (docs/configuration.md, "Long notification lists"). One statement per list a run reads;
//! `status` reads them all in one.

use jiff::Timestamp;

use super::rows::{counted, db_error, on_pool, sqlite_ts};
use super::status::pg_ts;
use super::{Store, StoreError};

/// One list's row, as `status` shows it (timestamps RFC 3339 UTC with milliseconds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListReadRow {
    pub provider: String,
    /// '' for a list of every chain.
    pub chain: String,
    /// `all` | `failed`.
    pub list: String,
    pub pages_read: i64,
    pub pages_total: i64,
    pub read_at: String,
    pub last_full_at: Option<String>,
}

/// What a run read of one list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListRead<'a> {
    pub provider: &'a str,
    pub chain: &'a str,
    pub list: &'a str,
    pub pages_read: u64,
    pub pages_total: u64,
    pub at: Timestamp,
    /// Every record was read.
    pub whole: bool,
}

const UPSERT_TAIL: &str = "ON CONFLICT (provider, chain, list) DO UPDATE SET \
     pages_read = excluded.pages_read, pages_total = excluded.pages_total, \
     read_at = excluded.read_at, \
     last_full_at = COALESCE(excluded.last_full_at, payrecon_list_reads.last_full_at)";

impl Store {
    /// `(chain, list, last_full_at)` of every list of `provider` read whole before.
    pub async fn last_full_reads(
        &self,
        provider: &str,
    ) -> Result<Vec<(String, String, Timestamp)>, StoreError> {
        let rows: Vec<(String, String, String)> = match self {
            Store::Sqlite(p) => {
                sqlx::query_as(
                    "SELECT chain, list, last_full_at FROM payrecon_list_reads \
                     WHERE provider = ?1 AND last_full_at IS NOT NULL",
                )
                .bind(provider)
                .fetch_all(counted(p))
                .await
            }
            Store::Postgres(p) => {
                sqlx::query_as(&format!(
                    "SELECT chain, list, {} FROM payrecon_list_reads \
                     WHERE provider = $1 AND last_full_at IS NOT NULL",
                    pg_ts("last_full_at")
                ))
                .bind(provider)
                .fetch_all(counted(p))
                .await
            }
        }
        .map_err(|e| db_error("read the lists' last full reads", e))?;
        Ok(rows
            .into_iter()
            .filter_map(|(c, l, t)| Some((c, l, t.parse().ok()?)))
            .collect())
    }

    /// Records what a run read of one list.
    pub async fn record_list_read(&self, r: &ListRead<'_>) -> Result<(), StoreError> {
        let full = r.whole.then_some(r.at);
        let (read, total) = (r.pages_read as i64, r.pages_total as i64);
        match self {
            Store::Sqlite(p) => sqlx::query(&format!(
                "INSERT INTO payrecon_list_reads (provider, chain, list, pages_read, \
                     pages_total, read_at, last_full_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) \
                     {UPSERT_TAIL}"
            ))
            .bind(r.provider)
            .bind(r.chain)
            .bind(r.list)
            .bind(read)
            .bind(total)
            .bind(sqlite_ts(r.at))
            .bind(full.map(sqlite_ts))
            .execute(counted(p))
            .await
            .map(|_| ()),
            Store::Postgres(p) => sqlx::query(&format!(
                "INSERT INTO payrecon_list_reads (provider, chain, list, pages_read, \
                     pages_total, read_at, last_full_at) \
                     VALUES ($1, $2, $3, $4, $5, $6::timestamptz, $7::timestamptz) {UPSERT_TAIL}"
            ))
            .bind(r.provider)
            .bind(r.chain)
            .bind(r.list)
            .bind(read)
            .bind(total)
            .bind(r.at.to_string())
            .bind(full.map(|t| t.to_string()))
            .execute(counted(p))
            .await
            .map(|_| ()),
        }
        .map_err(|e| db_error("record a list read", e))?;
        Ok(())
    }

    /// Every list's row, by provider, chain and list.
    pub async fn list_reads(&self) -> Result<Vec<ListReadRow>, StoreError> {
        type T = (String, String, String, i64, i64, String, Option<String>);
        let order = "ORDER BY provider, chain, list";
        let rows: Vec<T> = on_pool!(self, p => {
            let sql = match self {
                Store::Sqlite(_) => format!(
                    "SELECT provider, chain, list, pages_read, pages_total, read_at, \
                     last_full_at FROM payrecon_list_reads {order}"
                ),
                Store::Postgres(_) => format!(
                    "SELECT provider, chain, list, pages_read, pages_total, {}, {} \
                     FROM payrecon_list_reads {order}",
                    pg_ts("read_at"),
                    pg_ts("last_full_at")
                ),
            };
            sqlx::query_as(&sql).fetch_all(counted(p)).await
        })
        .map_err(|e| db_error("read the list reads", e))?;
        Ok(rows
            .into_iter()
            .map(|t| ListReadRow {
                provider: t.0,
                chain: t.1,
                list: t.2,
                pages_read: t.3,
                pages_total: t.4,
                read_at: t.5,
                last_full_at: t.6,
            })
            .collect())
    }
}
