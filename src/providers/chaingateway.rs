//! Chaingateway API v2: Laravel-paginated notification lists, resend, block number.
//!
//! One `reqwest::Client` (connection pool) per provider; every request carries
//! `Authorization: Bearer`, `X-Network` and `Accept: application/json`. Reading is retried
//! (5xx, 429 with `Retry-After`, timeouts, connection errors, unreadable bodies); a resend is
//! retried only when it certainly did not take effect (see [`ChaingatewayClient::retry`]).

mod list;
mod record;

/// The page readers, for the fuzz targets in `fuzz/` only (not an API: no stability promise).
#[doc(hidden)]
pub mod fuzz_api {
    use std::collections::HashMap;

    use serde_json::Value;

    use super::record;
    use crate::providers::{Page, Reason};

    /// The `data` array of a page body.
    pub fn page_data(body: &Value) -> Result<&Vec<Value>, Reason> {
        record::page_data(body)
    }

    /// `last_page` of a page body.
    pub fn last_page(body: &Value) -> Result<u64, Reason> {
        record::last_page(body)
    }

    /// Every record of `data`, each a record or a rejection.
    pub fn read_page(
        data: &[Value],
        chain: &str,
        failed: bool,
        decimals: &HashMap<String, u8>,
    ) -> Page {
        record::read_page(data, chain, crate::domain::ChainKind::Evm, failed, decimals)
    }
}

use std::collections::HashMap;
use std::time::Duration;

use futures::stream::{self, BoxStream, StreamExt};
use reqwest::header::{HeaderMap, HeaderValue, ACCEPT, AUTHORIZATION};
use serde_json::Value;

use super::retry::{self, describe, send_unrepeated};
use super::{
    ListKind, ListPlan, Page, ProviderError, ProviderRecord, Rejected, RequestObserver, StatsCell,
};
use crate::domain::ChainKind;
use crate::providers::Reason;
use crate::secret::Secret;

#[derive(Clone)]
pub struct ChaingatewaySettings {
    /// The provider's configured name (`cg`).
    pub name: String,
    /// e.g. `https://api.chaingateway.io/api/v2` (no trailing slash needed).
    pub base_url: String,
    pub api_key: Secret,
    /// Sent as `X-Network`.
    pub network: String,
    pub timeout: Duration,
    /// Pages in flight after page 1.
    pub max_concurrency: usize,
    /// Attempts per request on 5xx, timeouts, connection errors and 429 (total attempts,
    /// the first included; 0 counts as 1).
    pub max_retries: u32,
    /// First backoff delay; doubles per attempt, with jitter.
    pub backoff: Duration,
    /// Configured chain names this provider covers (Chaingateway path names).
    pub chains: Vec<String>,
    /// Decimals per `"chain:asset"` (asset = lowercase contract or `native`), to read the
    /// provider's decimal `amount` as a hint. Native coins default to 18.
    pub decimals: HashMap<String, u8>,
    /// Each covered chain's kind (absent: EVM): how its records spell addresses and ids.
    pub kinds: HashMap<String, ChainKind>,
    /// The notifications list is read from `since - list_margin` (docs/configuration.md,
    /// "Long notification lists").
    pub list_margin: Duration,
    /// One run per period reads every list whole; zero: never.
    pub full_scan_every: Duration,
}

pub struct ChaingatewayClient {
    settings: ChaingatewaySettings,
    observer: RequestObserver,
    http: reqwest::Client,
    /// `base_url`, parsed; paths are appended segment by segment (ids are percent-encoded).
    base: reqwest::Url,
}

impl ChaingatewayClient {
    pub fn new(
        settings: ChaingatewaySettings,
        observer: RequestObserver,
    ) -> Result<Self, ProviderError> {
        let fail = |reason: String| ProviderError::Request {
            provider: settings.name.clone(),
            what: "build the HTTP client".into(),
            reason,
        };
        let mut auth = HeaderValue::from_str(&format!("Bearer {}", settings.api_key.expose()))
            .map_err(|_| fail("the API key is not a valid HTTP header value".into()))?;
        auth.set_sensitive(true);
        let network = HeaderValue::from_str(&settings.network).map_err(|_| {
            fail(format!(
                "network {:?} is not a valid header value",
                settings.network
            ))
        })?;
        let mut headers = HeaderMap::new();
        headers.insert(AUTHORIZATION, auth);
        headers.insert("X-Network", network);
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        let http = reqwest::Client::builder()
            .default_headers(headers)
            .timeout(settings.timeout)
            .connect_timeout(settings.timeout)
            .user_agent(concat!("payrecon/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| fail(describe(&e, &settings.api_key)))?;
        let base = reqwest::Url::parse(settings.base_url.trim_end_matches('/'))
            .ok()
            .filter(|u| !u.cannot_be_a_base() && matches!(u.scheme(), "http" | "https"))
            .ok_or_else(|| {
                fail(format!(
                    "base_url {:?} is not an http(s) URL",
                    settings.base_url
                ))
            })?;
        Ok(ChaingatewayClient {
            settings,
            observer,
            http,
            base,
        })
    }

    /// How `chain`'s records spell addresses and ids.
    fn kind(&self, chain: &str) -> ChainKind {
        self.settings.kinds.get(chain).copied().unwrap_or_default()
    }

    pub fn name(&self) -> &str {
        &self.settings.name
    }

    pub fn settings(&self) -> &ChaingatewaySettings {
        &self.settings
    }

    /// A webhook delivery's body (one notification) as a record. Its chain is the body's
    /// `blockchain` when that is one of this provider's chains, else the only chain.
    pub fn webhook_record(&self, body: &serde_json::Value) -> Result<ProviderRecord, Rejected> {
        let chains = &self.settings.chains;
        let named = body
            .get("blockchain")
            .and_then(serde_json::Value::as_str)
            .map(|b| b.trim().to_ascii_lowercase());
        let chain = match named {
            Some(b) if chains.contains(&b) => b,
            _ if chains.len() == 1 => chains[0].clone(),
            other => {
                return Err(Rejected {
                    id: None,
                    reason: format!(
                        "blockchain: {:?} is not one of this provider's chains",
                        other.unwrap_or_default()
                    ),
                })
            }
        };
        record::read_record(
            body,
            &chain,
            self.kind(&chain),
            false,
            &self.settings.decimals,
        )
    }

    /// The pages of a list for one chain, as `plan` says (docs/configuration.md,
    /// "Long notification lists"; see `list.rs`), yielded as they arrive; `stats` holds what
    /// the read did once the stream has ended. An error item means a page could not be read
    /// after retries; the caller fails this provider, and the stream ends after it.
    ///
    /// The list is not a snapshot (records arrive while it is read, and Laravel pages by
    /// offset): a record may appear on two pages. Callers deduplicate by key.
    pub fn pages(
        &self,
        chain: &str,
        list: ListKind,
        plan: ListPlan,
        stats: StatsCell,
    ) -> BoxStream<'_, Result<Page, ProviderError>> {
        let (tx, rx) = tokio::sync::mpsc::channel(1);
        let chain = chain.to_string();
        let reader = stream::once(async move {
            list::read(self, &chain, list, plan, tx, stats).await;
        })
        .filter_map(|()| futures::future::ready(None::<Result<Page, ProviderError>>));
        let pages = stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|p| (p, rx)) });
        stream::select(reader, pages).boxed()
    }

    /// One page, its records' times and where it sits in the list (`last_page` is required
    /// on page 1 only).
    #[tracing::instrument(skip_all, fields(provider = %self.settings.name, chain = %chain, page = n))]
    async fn fetch_page(
        &self,
        chain: &str,
        list: ListKind,
        n: u64,
    ) -> Result<list::Served, ProviderError> {
        let suffix = match list {
            ListKind::All => "",
            ListKind::Failed => "/failed",
        };
        let failed = list == ListKind::Failed;
        let mut url = self.url(&[chain, "webhooks", "notifications"]);
        if failed {
            url.path_segments_mut().expect("base URL").push("failed");
        }
        url.query_pairs_mut().append_pair("page", &n.to_string());
        let what = format!("GET {chain} notifications{suffix} page {n}");
        let served = self
            .get_json(&what, &url, |body| {
                let last_page = match n {
                    1 => Some(record::last_page(body)?),
                    _ => record::last_page(body).ok(),
                };
                let data = record::page_data(body)?;
                let kind = self.kind(chain);
                let page = record::read_page(data, chain, kind, failed, &self.settings.decimals);
                Ok(list::Served {
                    n,
                    times: page
                        .records
                        .iter()
                        .map(|r| r.created_at.as_millisecond())
                        .collect(),
                    len: data.len() as u64,
                    page,
                    last_page,
                    total: record::count(body, "total"),
                    per_page: record::count(body, "per_page"),
                })
            })
            .await?;
        for r in &served.page.rejected {
            tracing::warn!(id = %r.id.as_deref().unwrap_or("?"), reason = %r.reason,
                "Rejected a provider record that could not be read.");
        }
        Ok(served)
    }

    /// `POST {base}/{chain}/webhooks/notifications/{id}/retry`; any 2xx is success (the API
    /// documents no body, none is read).
    ///
    /// A resend is not idempotent: each POST that reaches Chaingateway redelivers the webhook.
    /// So it is repeated only when it certainly did not take effect: the connection could not
    /// be opened (nothing was sent), 429 (throttled before processing; `Retry-After` is
    /// honoured) or 503 (maintenance mode / overloaded: not processed). A timeout, a connection
    /// lost after sending, or another 5xx may have reached Chaingateway: it is an error and is
    /// not repeated here; a later run decides again after `resend_cooldown`.
    #[tracing::instrument(skip_all, fields(provider = %self.settings.name, chain = %chain, id = %id))]
    pub async fn retry(&self, chain: &str, id: &str) -> Result<(), ProviderError> {
        let url = self.url(&[chain, "webhooks", "notifications", id, "retry"]);
        let result = send_unrepeated(
            self.settings.max_retries,
            self.settings.backoff,
            &self.settings.api_key,
            &*self.observer,
            || self.http.post(url.clone()),
        )
        .await;
        result.map_err(|reason| self.error(format!("POST {chain} notification {id} retry"), reason))
    }

    /// `GET {base}/{chain}/blocks/number`: `data` is an integer on some chains and
    /// `{"blocknumber": N}` (N a number or a numeric string) on others.
    #[tracing::instrument(skip_all, fields(provider = %self.settings.name, chain = %chain))]
    pub async fn block_number(&self, chain: &str) -> Result<u64, ProviderError> {
        let url = self.url(&[chain, "blocks", "number"]);
        let what = format!("GET {chain} blocks/number");
        self.get_json(&what, &url, |body| {
            let data = body.get("data").ok_or("the body has no `data`")?;
            let n = match data {
                Value::Object(o) => o.get("blocknumber").unwrap_or(&Value::Null),
                other => other,
            };
            match n {
                Value::Number(n) => n.as_u64(),
                Value::String(s) => s.trim().parse().ok(),
                _ => None,
            }
            .ok_or_else(|| Reason(format!("`data` is not a block number: {data}")))
        })
        .await
    }

    /// An idempotent GET with the read retry policy (`retry::get_json`); `extract` reads the
    /// JSON body, and an `Err` from it (a body not of the expected shape) is retried like a 5xx.
    async fn get_json<T>(
        &self,
        what: &str,
        url: &reqwest::Url,
        extract: impl Fn(&Value) -> Result<T, Reason>,
    ) -> Result<T, ProviderError> {
        let result = retry::get_json(
            self.settings.max_retries,
            self.settings.backoff,
            &self.settings.api_key,
            &*self.observer,
            || self.http.get(url.clone()),
            |json, _| extract(json),
        )
        .await;
        result.map_err(|reason| self.error(what.to_string(), reason))
    }

    /// `base_url` + path segments, each percent-encoded.
    fn url(&self, segments: &[&str]) -> reqwest::Url {
        let mut url = self.base.clone();
        url.path_segments_mut()
            .expect("checked in new: base_url can be a base")
            .extend(segments);
        url
    }

    fn error(&self, what: String, reason: Reason) -> ProviderError {
        ProviderError::Request {
            provider: self.settings.name.clone(),
            what,
            reason: crate::secret::redact(&reason.0, &[&self.settings.api_key]),
        }
    }
}
