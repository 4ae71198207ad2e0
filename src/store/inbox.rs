//! The webhook inbox (`payrecon_webhook_events`): each authentic delivery stored once per
//! `(provider, event_id)` before it is answered, then listed oldest first until it is marked
//! processed. Every backend, one statement per call (SQLite's insert adds two PRAGMAs around it,
//! see `Backend::insert_webhook_delivery`).

use jiff::Timestamp;

use super::backend::dispatch;
use super::rows::{counted, db_error};
use super::types::StoredDelivery;
use super::{Store, StoreError};

impl Store {
    /// Stores a delivery; None when `(provider, event_id)` is already stored (a duplicate).
    /// One `INSERT … ON CONFLICT DO NOTHING`: concurrent deliveries of one event store it
    /// once and exactly one of them gets `Some`. Committed (and, on SQLite, synced to disk)
    /// when it returns.
    pub async fn insert_webhook_delivery(
        &self,
        provider: &str,
        event_id: &str,
        body: &str,
        received_at: Timestamp,
    ) -> Result<Option<StoredDelivery>, StoreError> {
        let (id, received_at) = dispatch!(self, p => {
            let at = D::stored_time(received_at);
            (D::insert_webhook_delivery(p, provider, event_id, body, at).await?, at)
        });
        Ok(id.map(|id| StoredDelivery {
            id,
            provider: provider.to_string(),
            event_id: event_id.to_string(),
            body: body.to_string(),
            received_at,
        }))
    }

    /// Events not yet marked, of one provider or all, oldest first (`received_at`, then id).
    pub async fn unprocessed_webhook_deliveries(
        &self,
        provider: Option<&str>,
        limit: i64,
    ) -> Result<Vec<StoredDelivery>, StoreError> {
        const DOING: &str = "list unprocessed webhook events";
        let raws: Vec<RawDelivery> = dispatch!(self, p => {
            let sql = format!(
                "SELECT w.id, w.provider, {} AS event_id, w.body, {} AS received_at_text \
                 FROM payrecon_webhook_events w \
                 WHERE w.processed_at IS NULL AND ({} IS NULL OR w.provider = {}) \
                 ORDER BY w.received_at, w.id LIMIT {}",
                D::exact_text("w.event_id"),
                D::ts_text_exact("w.received_at"),
                D::text(1),
                D::p(2),
                D::p(3)
            );
            sqlx::query_as(&sql)
                .bind(provider)
                .bind(provider)
                .bind(limit.max(0))
                .fetch_all(counted(p))
                .await
        })
        .map_err(|e| db_error(DOING, e))?;
        let mut out = Vec::with_capacity(raws.len());
        for RawDelivery {
            id,
            provider,
            event_id,
            body,
            received_at_text: at,
        } in raws
        {
            match at.parse::<Timestamp>() {
                Ok(received_at) => out.push(StoredDelivery {
                    id,
                    provider,
                    event_id,
                    body,
                    received_at,
                }),
                Err(e) => tracing::warn!(id, provider = %provider, error = %e,
                    "Skipped a webhook event whose received_at cannot be read."),
            }
        }
        Ok(out)
    }

    /// Marks events processed with `outcome`, in one statement. An event already marked
    /// keeps its first outcome.
    pub async fn mark_webhook_deliveries(
        &self,
        ids: &[i64],
        outcome: &str,
        processed_at: Timestamp,
    ) -> Result<(), StoreError> {
        if ids.is_empty() {
            return Ok(());
        }
        let res = dispatch!(self, p => {
            let sql = format!(
                "UPDATE payrecon_webhook_events SET processed_at = {}, outcome = {} \
                 WHERE processed_at IS NULL AND {}",
                D::ts(1),
                D::p(2),
                D::any("id", 3)
            );
            sqlx::query(&sql)
                .bind(D::ts_bind(processed_at))
                .bind(outcome)
                .bind(D::ints(ids))
                .execute(counted(p))
                .await
                .map(|_| ())
        });
        res.map_err(|e| db_error("mark webhook events processed", e))
    }
}

from_row! {
    /// An inbox row as the database returned it, before its time is read.
    struct RawDelivery {
        id: i64,
        provider: String,
        event_id: String,
        body: String,
        received_at_text: String,
    }
}
