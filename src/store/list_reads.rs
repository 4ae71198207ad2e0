//! `payrecon_list_reads`: per provider list, what the last run read of it (pages read of
//! pages total) and when it was last read whole, which `full_scan_every` counts from
//! (docs/configuration.md, "Long notification lists"). One statement per list a run reads;
//! `status` reads them all in one.

use jiff::Timestamp;

use super::backend::dispatch;
use super::rows::{counted, db_error};
use super::types::{ListRead, ListReadRow};
use super::{Store, StoreError};

/// What a list's row takes from a new read (`Dialect::upsert`).
const UPSERT_SET: &str = "pages_read = excluded.pages_read, pages_total = excluded.pages_total, \
     read_at = excluded.read_at, \
     last_full_at = COALESCE(excluded.last_full_at, payrecon_list_reads.last_full_at)";

impl Store {
    /// `(chain, list, last_full_at)` of every list of `provider` read whole before.
    pub async fn last_full_reads(
        &self,
        provider: &str,
    ) -> Result<Vec<(String, String, Timestamp)>, StoreError> {
        let rows: Vec<(String, String, String)> = dispatch!(self, p => {
            let sql = format!(
                "SELECT chain, list, {} FROM payrecon_list_reads \
                 WHERE provider = {} AND last_full_at IS NOT NULL",
                D::ts_text("last_full_at"),
                D::p(1)
            );
            sqlx::query_as(&sql).bind(provider).fetch_all(counted(p)).await
        })
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
        dispatch!(self, p => {
            let sql = format!(
                "INSERT INTO payrecon_list_reads (provider, chain, list, pages_read, \
                 pages_total, read_at, last_full_at) VALUES ({}, {}, {}, {}, {}, {}, {}) {}",
                D::p(1),
                D::p(2),
                D::p(3),
                D::p(4),
                D::p(5),
                D::ts(6),
                D::ts(7),
                D::upsert("(provider, chain, list)", UPSERT_SET)
            );
            sqlx::query(&sql)
                .bind(r.provider)
                .bind(r.chain)
                .bind(r.list)
                .bind(read)
                .bind(total)
                .bind(D::ts_bind(r.at))
                .bind(full.map(D::ts_bind))
                .execute(counted(p))
                .await
                .map(|_| ())
        })
        .map_err(|e| db_error("record a list read", e))?;
        Ok(())
    }

    /// Every list's row, by provider, chain and list.
    pub async fn list_reads(&self) -> Result<Vec<ListReadRow>, StoreError> {
        let order = "ORDER BY provider, chain, list";
        dispatch!(self, p => {
            let sql = format!(
                "SELECT provider, chain, list, pages_read, pages_total, {} AS read_at_text, \
                 {} AS last_full_at_text \
                 FROM payrecon_list_reads {order}",
                D::ts_text("read_at"),
                D::ts_text("last_full_at")
            );
            sqlx::query_as(&sql).fetch_all(counted(p)).await
        })
        .map_err(|e| db_error("read the list reads", e))
    }
}
