//! Leases for scheduled runs: on a database shared by several `serve` instances, a provider
//! (and the `chain` sweep) is reconciled by the one instance that holds its lease. The lease
//! is renewed while the part runs (every third of its TTL) and released after; every write
//! batch presents it as a fencing token (`Store::apply_fenced`), so an instance that stalled
//! past its lease writes nothing once another took over. Manual `run`s take no lease
//! (docs/reference.md §1, `run`: a backfill beside `serve` is allowed; the conditional apply
//! and the resend claim keep it from doing anything twice).

use std::future::Future;
use std::time::Duration;

use jiff::Timestamp;

use super::part::PartTally;
use super::Engine;
use crate::store::Fence;

impl Engine {
    /// Runs `part` under the lease of `name` when `leased`; `None` when another instance
    /// holds it (this instance skips that part this time).
    pub(crate) async fn under_lease<F, Fut>(
        &self,
        leased: bool,
        name: &str,
        part: F,
    ) -> Option<PartTally>
    where
        F: FnOnce(Option<Fence>) -> Fut,
        Fut: Future<Output = PartTally>,
    {
        if !leased {
            return Some(part(None).await);
        }
        let ttl = self.settings.lease_ttl;
        let fence = match self
            .store
            .acquire_lease(name, &self.instance, Timestamp::now(), ttl)
            .await
        {
            Ok(Some(f)) => f,
            Ok(None) => {
                tracing::info!(
                    provider = %name,
                    "Another instance holds this provider's lease; skipped this time."
                );
                return None;
            }
            Err(e) => {
                let mut acc = PartTally::new(name, "");
                self.fail(&mut acc, format!("taking the lease: {e}"));
                return Some(acc);
            }
        };
        let renew = {
            let store = self.store.clone();
            let fence = fence.clone();
            tokio::spawn(async move {
                let every = (ttl / 3).max(Duration::from_millis(100));
                loop {
                    tokio::time::sleep(every).await;
                    match store.renew_lease(&fence, Timestamp::now(), ttl).await {
                        Ok(true) => {}
                        Ok(false) => {
                            tracing::warn!(provider = %fence.provider, "The lease was lost; this instance's writes for it are refused from now on.");
                            return;
                        }
                        Err(e) => {
                            tracing::warn!(provider = %fence.provider, error = %e, "Renewing the lease failed; retrying.")
                        }
                    }
                }
            })
        };
        let acc = part(Some(fence.clone())).await;
        renew.abort();
        if let Err(e) = self.store.release_lease(&fence).await {
            tracing::warn!(provider = name, error = %self.redact(&e), "Releasing the lease failed; it expires by itself.");
        }
        Some(acc)
    }
}
