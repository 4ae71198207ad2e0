//! The generic JSON-over-HTTP provider (`kind = "http"`; docs/configuration.md,
//! "The generic provider"): lists described by path templates, pagination style and JSON
//! pointers, a resend call, and presets (Qvard, Paymos) that fill all of that in.
//!
//! One `reqwest::Client` per provider; every request carries the auth header (when a key is
//! configured) and `Accept: application/json`. Reading is retried (5xx, 429 with
//! `Retry-After`, timeouts, connection errors, bodies that are not a page); a resend is
//! retried only when it certainly did not take effect (see [`HttpClient::resend`]).

mod paging;
pub mod presets;
mod record;
mod settings;
#[cfg(test)]
mod tests;

use futures::stream::{self, BoxStream, StreamExt};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, LINK};
use reqwest::{Method, Url};
use serde_json::Value;

pub use self::presets::preset_webhook_scheme;
pub use self::settings::{
    AmountUnit, FieldPointers, HttpSettings, ListSpec, Pagination, ResendSpec, StatusAction,
    TimeFormat,
};
use super::retry::{self, describe, send_unrepeated};
use super::{ListKind, Page, ProviderError, ProviderRecord, Rejected, RequestObserver};
use crate::providers::Reason;
use crate::secret::Secret;

pub struct HttpClient {
    settings: HttpSettings,
    observer: RequestObserver,
    http: reqwest::Client,
    /// The API key (empty when none is configured), for redaction.
    key: Secret,
}

impl HttpClient {
    pub fn new(settings: HttpSettings, observer: RequestObserver) -> Result<Self, ProviderError> {
        let fail = |reason: String| ProviderError::Request {
            provider: settings.name.clone(),
            what: "build the HTTP client".into(),
            reason,
        };
        let mut headers = HeaderMap::new();
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        if let Some(key) = &settings.api_key {
            let name = HeaderName::from_bytes(settings.auth_header.as_bytes()).map_err(|_| {
                fail(format!(
                    "auth_header {:?} is not a valid header name",
                    settings.auth_header
                ))
            })?;
            let value = match settings.auth_scheme.trim() {
                "" => key.expose().to_string(),
                scheme => format!("{scheme} {}", key.expose()),
            };
            let mut value = HeaderValue::from_str(&value)
                .map_err(|_| fail("the API key is not a valid HTTP header value".into()))?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        let key = settings.api_key.clone().unwrap_or_default();
        let http = reqwest::Client::builder()
            .default_headers(headers)
            .timeout(settings.timeout)
            .connect_timeout(settings.timeout)
            .user_agent(concat!("payrecon/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| fail(describe(&e, &key)))?;
        paging::join(&settings.base_url, "")
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https"))
            .ok_or_else(|| {
                fail(format!(
                    "base_url {:?} is not an http(s) URL",
                    settings.base_url
                ))
            })?;
        Ok(HttpClient {
            settings,
            observer,
            http,
            key,
        })
    }

    pub fn name(&self) -> &str {
        &self.settings.name
    }

    pub fn settings(&self) -> &HttpSettings {
        &self.settings
    }

    /// Does this provider have this list configured (`payments` = `All`, `failed` = `Failed`)?
    pub fn has_list(&self, list: ListKind) -> bool {
        self.spec(list).is_some()
    }

    fn spec(&self, list: ListKind) -> Option<&ListSpec> {
        match list {
            ListKind::All => self.settings.payments.as_ref(),
            ListKind::Failed => self.settings.failed.as_ref(),
        }
    }

    /// All pages of a list for the window `[since, until]`, every chain at once (records
    /// carry their chain). An error item means a page could not be read after retries (or the
    /// provider pages in a circle); the caller fails this provider, and the stream ends after
    /// it. Items outside the window are not filtered here (the caller does, as for
    /// Chaingateway).
    ///
    /// Pages are read one after the other: page numbers, cursors, offsets and `Link` headers
    /// do not tell the total up front, and a cursor or link is only known from the page
    /// before. A list that repeats a cursor or next link, or runs past 100,000 pages, fails.
    pub fn pages(
        &self,
        list: ListKind,
        since: jiff::Timestamp,
        until: jiff::Timestamp,
    ) -> BoxStream<'_, Result<Page, ProviderError>> {
        let what = match list {
            ListKind::All => "payments",
            ListKind::Failed => "failed",
        };
        let Some(spec) = self.spec(list) else {
            let e = self.error(format!("list {what}"), "the list is not configured".into());
            return stream::iter([Err(e)]).boxed();
        };
        let walker = paging::Walker::new(spec, &self.settings.base_url, since, until);
        let failed = list == ListKind::Failed;
        stream::unfold(Some(walker), move |walker| async move {
            let mut walker = walker?;
            let (n, url) = match walker.url() {
                Ok(Some(url)) => (walker_page(&walker), url),
                Ok(None) => return None,
                Err(reason) => return Some((Err(self.error(format!("GET {what}"), reason)), None)),
            };
            let what = format!("GET {what} page {n}");
            let read = self.fetch_page(&what, &url, spec, failed).await;
            match read {
                Ok((page, items, hint)) => match walker.advance(&url, items, hint) {
                    Ok(()) => Some((Ok(page), Some(walker))),
                    Err(reason) => Some((Err(self.error(what, reason)), None)),
                },
                Err(e) => Some((Err(e), None)),
            }
        })
        .boxed()
    }

    /// One page: its records and rejections, its item count, and its hint at the next page.
    #[tracing::instrument(skip_all, fields(provider = %self.settings.name, url = %url.path()))]
    async fn fetch_page(
        &self,
        what: &str,
        url: &Url,
        spec: &ListSpec,
        failed: bool,
    ) -> Result<(Page, usize, paging::Hint), ProviderError> {
        let (items, hint) = self
            .get_json(what, url, |body, headers| {
                let items = body
                    .pointer(&spec.items)
                    .and_then(Value::as_array)
                    .ok_or_else(|| {
                        Reason(format!("the body has no array at `items` ({})", spec.items))
                    })?;
                let link =
                    paging::link_next(headers.get_all(LINK).iter().filter_map(|v| v.to_str().ok()));
                let hint = paging::read_hint(&spec.pagination, body, link)?;
                Ok((items.clone(), hint))
            })
            .await?;
        let mut page = Page::default();
        for item in &items {
            match record::read_item(&self.settings, item, failed, None) {
                Ok(Some(r)) => page.records.push(r),
                Ok(None) => {}
                Err(r) => {
                    tracing::warn!(provider = %self.settings.name, id = %r.id.as_deref().unwrap_or("?"),
                        reason = %r.reason, "Rejected a provider record that could not be read.");
                    page.rejected.push(r);
                }
            }
        }
        Ok((page, items.len(), hint))
    }

    /// Maps one JSON item (a list item or a webhook body) with the field pointers:
    /// `Ok(Some(record))`; `Ok(None)` when its status maps to `ignore`; `Err` for a missing or
    /// malformed field or a status not in `status_map`. Does not log: [`HttpClient::pages`]
    /// logs its own rejections, other callers theirs.
    pub fn record_from_value(
        &self,
        item: &Value,
        failed: bool,
    ) -> Result<Option<ProviderRecord>, Rejected> {
        record::read_item(&self.settings, item, failed, None)
    }

    /// As [`HttpClient::record_from_value`], for a webhook body that may carry no time (a
    /// Qvard webhook is just `{"id", "status"}`): a missing `updated_at` is `received_at`.
    pub fn record_from_webhook(
        &self,
        body: &Value,
        received_at: jiff::Timestamp,
    ) -> Result<Option<ProviderRecord>, Rejected> {
        record::read_item(&self.settings, body, false, Some(received_at))
    }

    /// The resend call for a record id (`resend.path` with `{id}` percent-encoded); any 2xx
    /// is success.
    ///
    /// A resend is not idempotent, so it is repeated only when it certainly did not take
    /// effect: the connection could not be opened, 429 (`Retry-After` honoured) or 503. A
    /// timeout, a connection lost after sending, or another 5xx is an error, not repeated
    /// here; a later run decides again.
    #[tracing::instrument(skip_all, fields(provider = %self.settings.name, id = %id))]
    pub async fn resend(&self, id: &str) -> Result<(), ProviderError> {
        let what = format!("resend {id}");
        let Some(spec) = &self.settings.resend else {
            return Err(self.error(what, "no resend call is configured".into()));
        };
        let method = Method::from_bytes(spec.method.trim().to_ascii_uppercase().as_bytes())
            .map_err(|_| {
                self.error(
                    what.clone(),
                    Reason(format!("bad method {:?}", spec.method)),
                )
            })?;
        let path = paging::fill(&spec.path, &[("id", id.to_string())]);
        let url = paging::join(&self.settings.base_url, &path)
            .map_err(|reason| self.error(what.clone(), reason))?;
        let result = send_unrepeated(
            self.settings.max_retries,
            self.settings.backoff,
            &self.key,
            &*self.observer,
            || self.http.request(method.clone(), url.clone()),
        )
        .await;
        result.map_err(|reason| self.error(format!("{method} {}", url.path()), reason))
    }

    /// An idempotent GET with the read retry policy (`retry::get_json`); `extract` reads the
    /// JSON body and the headers, and an `Err` from it (a body not of the expected shape) is
    /// retried.
    async fn get_json<T>(
        &self,
        what: &str,
        url: &Url,
        extract: impl Fn(&Value, &HeaderMap) -> Result<T, Reason>,
    ) -> Result<T, ProviderError> {
        let result = retry::get_json(
            self.settings.max_retries,
            self.settings.backoff,
            &self.key,
            &*self.observer,
            || self.http.get(url.clone()),
            extract,
        )
        .await;
        result.map_err(|reason| self.error(what.to_string(), reason))
    }

    fn error(&self, what: String, reason: Reason) -> ProviderError {
        ProviderError::Request {
            provider: self.settings.name.clone(),
            what,
            reason: crate::secret::redact(&reason.0, &[&self.key]),
        }
    }
}

/// The 1-based number of the page about to be read (for messages).
fn walker_page(walker: &paging::Walker<'_>) -> u64 {
    walker.pages_read() + 1
}
