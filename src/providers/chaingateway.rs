//! Chaingateway API v2: Laravel-paginated notification lists, resend, block number.

use std::collections::HashMap;
use std::time::Duration;

use futures::stream::BoxStream;

use super::{ListKind, Page, ProviderError, RequestObserver};
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
    /// Attempts per request on 5xx, timeouts, connection errors and 429.
    pub max_retries: u32,
    /// First backoff delay; doubles per attempt, with jitter.
    pub backoff: Duration,
    /// Configured chain names this provider covers (Chaingateway path names).
    pub chains: Vec<String>,
    /// Decimals per `"chain:asset"` (asset = lowercase contract or `native`), to read the
    /// provider's decimal `amount` as a hint. Native coins default to 18.
    pub decimals: HashMap<String, u8>,
}

pub struct ChaingatewayClient {
    settings: ChaingatewaySettings,
    observer: RequestObserver,
}

impl ChaingatewayClient {
    pub fn new(
        settings: ChaingatewaySettings,
        observer: RequestObserver,
    ) -> Result<Self, ProviderError> {
        Ok(ChaingatewayClient { settings, observer })
    }

    pub fn name(&self) -> &str {
        &self.settings.name
    }

    /// The pages of a list for one chain: page 1 first (it tells `last_page`), then the rest
    /// concurrently up to `max_concurrency`, yielded as they arrive. An error item means a
    /// page could not be read after retries; the caller fails this provider.
    pub fn pages(&self, chain: &str, list: ListKind) -> BoxStream<'_, Result<Page, ProviderError>> {
        let _ = (chain, list, &self.observer);
        Box::pin(futures::stream::once(
            async move { Err(self.unbuilt("pages")) },
        ))
    }

    /// `POST {base}/{chain}/webhooks/notifications/{id}/retry`.
    pub async fn retry(&self, chain: &str, id: &str) -> Result<(), ProviderError> {
        let _ = (chain, id);
        Err(self.unbuilt("retry"))
    }

    /// `GET {base}/{chain}/blocks/number` (integer or `{"blocknumber": N}`).
    pub async fn block_number(&self, chain: &str) -> Result<u64, ProviderError> {
        let _ = chain;
        Err(self.unbuilt("block_number"))
    }

    fn unbuilt(&self, what: &str) -> ProviderError {
        ProviderError::Request {
            provider: self.settings.name.clone(),
            what: what.into(),
            reason: "not built yet".into(),
        }
    }
}
