//! Webhook deliveries stored by `POST /webhooks/{provider}` are applied here: read with the
//! provider's own record mapping, resolved on chain when they name a transaction, planned and
//! applied by the same code as a run (`settle`), with `source = 'webhook'` in the audit rows.
//! A delivery whose chain cannot be read now stays unprocessed; the next run applies it first.

use std::collections::BTreeMap;

use jiff::Timestamp;

use super::part::PartTally;
use super::{Engine, ProviderEntry, RunCtx};
use crate::providers::ProviderRecord;
use crate::store::{Source, StoreError, StoredDelivery};

/// Deliveries read from the inbox per query when a run drains it.
const INBOX_PAGE: i64 = 500;

/// What processing a set of deliveries did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct InboxTally {
    /// Marked processed (applied, nothing to do, or ignored by the status map).
    pub processed: usize,
    /// Marked processed as unreadable (a malformed field, an unknown provider).
    pub rejected: usize,
    /// Left for later: the chain or the database could not be read.
    pub deferred: usize,
    /// Transitions applied.
    pub applied: u64,
}

impl InboxTally {
    fn add(&mut self, o: InboxTally) {
        self.processed += o.processed;
        self.rejected += o.rejected;
        self.deferred += o.deferred;
        self.applied += o.applied;
    }
}

impl Engine {
    /// Applies stored deliveries (any providers), batched per provider.
    pub async fn process_webhook_deliveries(&self, events: Vec<StoredDelivery>) -> InboxTally {
        let mut by_provider: BTreeMap<String, Vec<StoredDelivery>> = BTreeMap::new();
        for e in events {
            by_provider.entry(e.provider.clone()).or_default().push(e);
        }
        let mut tally = InboxTally::default();
        for (name, events) in by_provider {
            let t = match self.providers.iter().find(|e| e.provider.name() == name) {
                Some(entry) => self.process_provider_deliveries(entry, events).await,
                None => {
                    let ids: Vec<i64> = events.iter().map(|e| e.id).collect();
                    let outcome = "rejected: the provider is no longer configured";
                    match self.mark(&ids, outcome).await {
                        Ok(()) => InboxTally {
                            rejected: ids.len(),
                            ..InboxTally::default()
                        },
                        Err(_) => InboxTally {
                            deferred: ids.len(),
                            ..InboxTally::default()
                        },
                    }
                }
            };
            tally.add(t);
        }
        tally
    }

    /// Applies every stored delivery not yet processed, oldest first (a run does this first:
    /// deliveries stored by a process that stopped before applying them).
    pub async fn drain_webhook_inbox(&self) -> Result<InboxTally, StoreError> {
        let mut tally = InboxTally::default();
        loop {
            let events = self
                .store
                .unprocessed_webhook_deliveries(None, INBOX_PAGE)
                .await?;
            let n = events.len();
            if n == 0 {
                break;
            }
            let t = self.process_webhook_deliveries(events).await;
            tally.add(t);
            // Deferred deliveries come back first on the next query: stop when a page made
            // no progress, or was the last one.
            if t.deferred == n || n < INBOX_PAGE as usize {
                break;
            }
        }
        if tally != InboxTally::default() {
            tracing::info!(
                processed = tally.processed,
                rejected = tally.rejected,
                deferred = tally.deferred,
                applied = tally.applied,
                "Stored webhook deliveries processed."
            );
        }
        Ok(tally)
    }

    async fn process_provider_deliveries(
        &self,
        entry: &ProviderEntry,
        events: Vec<StoredDelivery>,
    ) -> InboxTally {
        let name = entry.provider.name().to_string();
        let mut tally = InboxTally::default();
        let mut records: Vec<ProviderRecord> = Vec::new();
        let mut readable: Vec<i64> = Vec::new();
        let mut ignored: Vec<i64> = Vec::new();
        for ev in &events {
            let parsed = serde_json::from_str::<serde_json::Value>(&ev.body)
                .map_err(|e| format!("the stored body is not JSON: {e}"))
                .and_then(|v| {
                    entry
                        .provider
                        .webhook_record(&v, ev.received_at)
                        .map_err(|r| r.reason)
                });
            match parsed {
                Ok(Some(r)) => {
                    records.push(r);
                    readable.push(ev.id);
                }
                Ok(None) => ignored.push(ev.id),
                Err(reason) => {
                    tracing::warn!(provider = %name, event_id = %ev.event_id, reason = %reason, "A webhook delivery could not be read.");
                    match self.mark(&[ev.id], &format!("rejected: {reason}")).await {
                        Ok(()) => tally.rejected += 1,
                        Err(_) => tally.deferred += 1,
                    }
                }
            }
        }
        if !ignored.is_empty() {
            match self
                .mark(&ignored, "ignored: the status map ignores it")
                .await
            {
                Ok(()) => tally.processed += ignored.len(),
                Err(_) => tally.deferred += ignored.len(),
            }
        }
        if records.is_empty() {
            return tally;
        }
        let ctx = self.webhook_ctx().await;
        let mut acc = PartTally::new(&name, entry.provider.kind());
        let result = self.settle_records(&ctx, &mut acc, entry, records).await;
        let failed = match result {
            Err(e) => Some(self.redact(&e)),
            Ok(()) => acc.report.error.clone(),
        };
        if let Some(error) = failed {
            tracing::error!(provider = %name, error = %error, n = readable.len(), "Webhook deliveries not applied yet; the next run retries them.");
            tally.deferred += readable.len();
            return tally;
        }
        tally.applied += acc.report.applied;
        match self.mark(&readable, "processed").await {
            Ok(()) => tally.processed += readable.len(),
            Err(_) => tally.deferred += readable.len(),
        }
        tally
    }

    async fn mark(&self, ids: &[i64], outcome: &str) -> Result<(), StoreError> {
        let r = self
            .store
            .mark_webhook_deliveries(ids, outcome, Timestamp::now())
            .await;
        if let Err(e) = &r {
            tracing::error!(error = %self.redact(e), "Marking webhook deliveries processed failed; they will be processed again (idempotent).");
        }
        r
    }

    /// A context for deliveries: no run row (audit rows carry no run id), apply as
    /// configured, never a resend, no findings.
    async fn webhook_ctx(&self) -> RunCtx {
        let now = Timestamp::now();
        RunCtx {
            run_id: String::new(),
            started: now,
            since: now,
            until: now,
            dry_run: false,
            apply: self.settings.apply,
            resend: false,
            cursors: false,
            heads: self.read_heads().await,
            progress: None,
            source: Source::Webhook,
            placed: Default::default(),
            exceptions: Default::default(),
        }
    }
}
