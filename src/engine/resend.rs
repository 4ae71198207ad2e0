//! Resends: asking a provider to deliver again what it failed to deliver, once per
//! notification within the cooldown across processes (`Store::claim_resend`), a few at a time.

use std::time::Duration;

use jiff::Timestamp;

use super::part::PartTally;
use super::{Engine, RunCtx};
use crate::domain::{Action, ResendRequest};
use crate::metrics::{ResendL, ResendOutcome};
use crate::providers::Provider;
use crate::store::StoreError;

/// Resend requests (claim, then POST) in flight at once within a batch.
const RESEND_CONCURRENCY: usize = 4;

/// Where a resend goes: the provider client, and how long the provider retries by itself.
pub(crate) struct Resender<'a> {
    pub provider: &'a Provider,
    pub retry_window: Duration,
}

/// What became of one resend request.
enum Resend {
    Requested,
    Skipped(String),
    Failed(String),
}

impl Engine {
    /// The batch's resends, up to `RESEND_CONCURRENCY` at a time; each is claimed in the
    /// database first (cooldown, atomic across processes), then requested. A crash between
    /// claim and request loses the requests in flight (at most `RESEND_CONCURRENCY`) until
    /// the cooldown ends, never duplicates one. One action per request, in order.
    pub(super) async fn resends(
        &self,
        ctx: &RunCtx,
        acc: &mut PartTally,
        resender: Option<&Resender<'_>>,
        requests: &[ResendRequest],
    ) -> Result<Vec<(Action, Option<String>)>, StoreError> {
        let (true, Some(r)) = (ctx.resend, resender) else {
            return Ok(vec![(Action::None, None); requests.len()]);
        };
        let provider = acc.report.provider.clone();
        let cooldown = self.settings.resend_cooldown;
        let mut results = Vec::with_capacity(requests.len());
        for chunk in requests.chunks(RESEND_CONCURRENCY) {
            let pending: Vec<_> = chunk
                .iter()
                .map(|q| self.claim_and_resend(r, &provider, q, cooldown))
                .collect();
            results.extend(futures::future::join_all(pending).await);
        }
        let mut actions = Vec::with_capacity(requests.len());
        for (q, result) in requests.iter().zip(results) {
            let id = &q.notification_id;
            let outcome = match result? {
                Resend::Skipped(why) => {
                    acc.report.resends.skipped += 1;
                    tracing::info!(provider = %provider, notification = %id, reason = %why, "Resend skipped.");
                    (ResendOutcome::skipped, (Action::ResendSkipped, Some(why)))
                }
                Resend::Requested => {
                    acc.report.resends.requested += 1;
                    tracing::info!(provider = %provider, notification = %id, "Resend requested.");
                    (ResendOutcome::requested, (Action::ResendRequested, None))
                }
                Resend::Failed(error) => {
                    acc.report.resends.failed += 1;
                    tracing::warn!(provider = %provider, notification = %id, error = %error, "Resend request failed.");
                    let note = format!("resend request failed: {error}");
                    (ResendOutcome::failed, (Action::None, Some(note)))
                }
            };
            self.metrics
                .resends
                .get_or_create(&ResendL {
                    provider: provider.clone(),
                    outcome: outcome.0,
                })
                .inc();
            actions.push(outcome.1);
        }
        Ok(actions)
    }

    /// Claims one resend; when claimed, requests it. Skipped while the provider still
    /// retries by itself (record younger than its retry window) and within the cooldown.
    async fn claim_and_resend(
        &self,
        r: &Resender<'_>,
        provider: &str,
        q: &ResendRequest,
        cooldown: Duration,
    ) -> Result<Resend, StoreError> {
        let now = Timestamp::now();
        if let Some(why) =
            super::retry_window::within_retry_window(q.record_time, now, r.retry_window)
        {
            return Ok(Resend::Skipped(why));
        }
        let claimed = self
            .store
            .claim_resend(provider, &q.notification_id, now, cooldown)
            .await?;
        if !claimed {
            return Ok(Resend::Skipped(format!(
                "a resend was requested within the cooldown ({})",
                crate::config::format_duration(cooldown)
            )));
        }
        Ok(
            match r.provider.resend(&q.chain, &q.notification_id).await {
                Ok(()) => Resend::Requested,
                Err(e) => Resend::Failed(self.redact(&e)),
            },
        )
    }
}
