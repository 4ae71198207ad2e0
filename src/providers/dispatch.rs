//! A provider, by kind: the one place a provider's kind is matched, for its settings
//! (`ProviderKind`: name, chains, secrets), building its client, reading its lists, a webhook
//! body, a resend. The engine sees `Provider` only; config and app see `ProviderKind`.

use jiff::Timestamp;

use futures::stream::{BoxStream, StreamExt};

use super::chaingateway::{ChaingatewayClient, ChaingatewaySettings};
use super::http::{HttpClient, HttpSettings};
use super::{ListKind, Page, ProviderError, ProviderRecord, Rejected, RequestObserver};
use super::{ListPlan, StatsCell};
use crate::secret::Secret;

/// A provider's settings, by kind (`[providers.<name>] kind = ...`).
#[derive(Clone)]
#[allow(clippy::large_enum_variant)] // a handful per process, never in a hot path
pub enum ProviderKind {
    Chaingateway(ChaingatewaySettings),
    Http(HttpSettings),
}

impl ProviderKind {
    pub fn name(&self) -> &str {
        match self {
            ProviderKind::Chaingateway(s) => &s.name,
            ProviderKind::Http(s) => &s.name,
        }
    }
    /// `chaingateway` | `http`, as configured.
    pub fn kind_name(&self) -> &'static str {
        match self {
            ProviderKind::Chaingateway(_) => "chaingateway",
            ProviderKind::Http(_) => "http",
        }
    }
    pub fn chains(&self) -> &[String] {
        match self {
            ProviderKind::Chaingateway(s) => &s.chains,
            ProviderKind::Http(s) => &s.chains,
        }
    }
    /// The JSON pointer to a record's event id (generic providers).
    pub fn event_id_pointer(&self) -> Option<&str> {
        match self {
            ProviderKind::Chaingateway(_) => None,
            ProviderKind::Http(s) => Some(&s.fields.event_id),
        }
    }
    /// The API keys the client sends (none for an unauthenticated generic provider).
    pub fn api_keys(&self) -> Vec<&Secret> {
        match self {
            ProviderKind::Chaingateway(s) => vec![&s.api_key],
            ProviderKind::Http(s) => s.api_key.iter().collect(),
        }
    }
}

/// A provider client, by kind.
#[allow(clippy::large_enum_variant)] // a handful per process, never in a hot path
pub enum Provider {
    Chaingateway(ChaingatewayClient),
    Http(HttpClient),
}

impl Provider {
    /// The client for these settings; `observer` sees every request it sends.
    pub fn new(kind: &ProviderKind, observer: RequestObserver) -> Result<Provider, ProviderError> {
        Ok(match kind {
            ProviderKind::Chaingateway(s) => {
                Provider::Chaingateway(ChaingatewayClient::new(s.clone(), observer)?)
            }
            ProviderKind::Http(s) => Provider::Http(HttpClient::new(s.clone(), observer)?),
        })
    }

    /// What `payrecon check` reports of this provider, a line a probe: the block number it
    /// serves per chain (Chaingateway), or one page of each configured list over the last
    /// hour (generic). `Err` holds what was probed and the error (redacted by the caller).
    pub async fn probe(&self, chains: &[String]) -> Vec<Result<String, (String, ProviderError)>> {
        let mut out = Vec::new();
        match self {
            Provider::Chaingateway(c) => {
                for chain in chains {
                    let what = format!("provider {} on {chain}", c.name());
                    out.push(match c.block_number(chain).await {
                        Ok(n) => Ok(format!("{what}: block {n}")),
                        Err(err) => Err((what, err)),
                    });
                }
            }
            Provider::Http(c) => {
                for (_, list) in self.lists(chains) {
                    let until = Timestamp::now();
                    let since = until - jiff::SignedDuration::from_hours(1);
                    let what = format!("provider {} ({list} list)", c.name());
                    out.push(match c.pages(list, since, until).next().await {
                        Some(Ok(page)) => Ok(format!(
                            "{what}: {} records on the first page",
                            page.records.len() + page.rejected.len()
                        )),
                        Some(Err(err)) => Err((what, err)),
                        None => Ok(format!("{what}: empty")),
                    });
                }
            }
        }
        out
    }

    /// The lists a run reads, failed notifications first: per chain for Chaingateway.
    pub fn lists(&self, chains: &[String]) -> Vec<(Option<String>, ListKind)> {
        match self {
            Provider::Chaingateway(_) => [ListKind::Failed, ListKind::All]
                .into_iter()
                .flat_map(|l| chains.iter().map(move |c| (Some(c.clone()), l)))
                .collect(),
            // One list for every chain: the records carry their chain.
            Provider::Http(c) => [ListKind::Failed, ListKind::All]
                .into_iter()
                .filter(|l| c.has_list(*l))
                .map(|l| (None, l))
                .collect(),
        }
    }

    /// The pages of one list (`chain` for per-chain APIs), in the run's window, read as
    /// `plan` says where the provider's list has no window filter of its own; what the read
    /// did is in `stats` once the stream has ended.
    pub fn pages(
        &self,
        chain: Option<&str>,
        list: ListKind,
        window: (Timestamp, Timestamp),
        plan: ListPlan,
        stats: StatsCell,
    ) -> BoxStream<'_, Result<Page, ProviderError>> {
        match self {
            Provider::Chaingateway(c) => c.pages(chain.unwrap_or_default(), list, plan, stats),
            // Filtered by the window server-side: every page read is a page of the window.
            Provider::Http(c) => c
                .pages(list, window.0, window.1)
                .inspect(move |p| {
                    if p.is_ok() {
                        let mut s = stats.lock().unwrap_or_else(|p| p.into_inner());
                        s.pages_read += 1;
                        s.pages_total += 1;
                    }
                })
                .boxed(),
        }
    }

    /// How a run reads `list`: the notifications list of a provider without a window filter
    /// by the boundary search from `since - list_margin`, unless the last whole read is
    /// `full_scan_every` old or more (or there was none); everything else whole.
    pub fn list_plan(
        &self,
        list: ListKind,
        since: Timestamp,
        now: Timestamp,
        last_full: Option<Timestamp>,
    ) -> ListPlan {
        let Provider::Chaingateway(c) = self else {
            return ListPlan::default();
        };
        let s = c.settings();
        let every = s.full_scan_every;
        let due = !every.is_zero()
            && last_full.is_none_or(|t| {
                jiff::SignedDuration::try_from(every)
                    .ok()
                    .and_then(|d| t.checked_add(d).ok())
                    .is_none_or(|next| next <= now)
            });
        if list != ListKind::All || due {
            return ListPlan::default();
        }
        let cutoff = jiff::SignedDuration::try_from(s.list_margin)
            .ok()
            .and_then(|m| since.checked_sub(m).ok())
            .unwrap_or(Timestamp::MIN);
        ListPlan {
            cutoff: Some(cutoff),
        }
    }

    /// No failed-notifications list: a record that moves the ledger is taken as a
    /// notification that did not arrive (and is resent once the retry window has passed).
    pub fn infers_failed(&self) -> bool {
        match self {
            Provider::Chaingateway(_) => false,
            Provider::Http(c) => !c.has_list(ListKind::Failed),
        }
    }

    /// A webhook delivery's body as a record: `Ok(None)` when its status is one to ignore.
    /// `received_at` stands in for a time the body does not carry.
    pub fn webhook_record(
        &self,
        body: &serde_json::Value,
        received_at: Timestamp,
    ) -> Result<Option<ProviderRecord>, Rejected> {
        match self {
            Provider::Chaingateway(c) => c.webhook_record(body).map(Some),
            Provider::Http(c) => c.record_from_webhook(body, received_at),
        }
    }

    /// Asks the provider to deliver a notification again.
    pub async fn resend(&self, chain: &str, id: &str) -> Result<(), ProviderError> {
        match self {
            Provider::Chaingateway(c) => c.retry(chain, id).await,
            Provider::Http(c) => c.resend(id).await,
        }
    }

    pub fn name(&self) -> &str {
        match self {
            Provider::Chaingateway(c) => c.name(),
            Provider::Http(c) => c.name(),
        }
    }
    pub fn kind(&self) -> &'static str {
        match self {
            Provider::Chaingateway(_) => "chaingateway",
            Provider::Http(_) => "http",
        }
    }
}
