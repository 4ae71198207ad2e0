//! What a generic JSON-over-HTTP provider is told by its configuration: where its lists are,
//! how they page, where each field sits in an item (RFC 6901 JSON pointers), and what its
//! statuses mean. Built by `config` (with a preset merged in) or by hand in tests.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use serde::Deserialize;

use crate::domain::State;
use crate::secret::Secret;

#[derive(Clone, Debug)]
pub struct HttpSettings {
    /// The provider's configured name (`qvard`).
    pub name: String,
    /// e.g. `https://api.qvard.example` (list and resend paths are appended to it).
    pub base_url: String,
    /// `None`: the API needs no key, and no auth header is sent.
    pub api_key: Option<Secret>,
    /// Header carrying the key (`Authorization`).
    pub auth_header: String,
    /// `Bearer`: the header value is `Bearer <key>`; empty: the raw key.
    pub auth_scheme: String,
    /// Configured chain names this provider covers; items naming another chain are rejected.
    pub chains: Vec<String>,
    /// Each chain's kind (absent: EVM): how an item's tx hash and asset are spelled.
    pub kinds: std::collections::HashMap<String, crate::domain::ChainKind>,
    pub timeout: Duration,
    /// Attempts per request (the first included; 0 counts as 1).
    pub max_retries: u32,
    /// First backoff delay; doubles per attempt, with jitter.
    pub backoff: Duration,
    /// Resends (or other calls) the engine may have in flight at once. Pages of one list are
    /// read one after the other whatever this says (see [`super::HttpClient::pages`]).
    pub max_concurrency: usize,
    /// Every payment (`ListKind::All`), when the provider has such a list.
    pub payments: Option<ListSpec>,
    /// Failed notifications (`ListKind::Failed`), when the provider has such a list.
    pub failed: Option<ListSpec>,
    pub fields: FieldPointers,
    pub amount_unit: AmountUnit,
    /// Provider status -> what it means; a status not listed is rejected (and counted).
    pub status_map: BTreeMap<String, StatusAction>,
    /// The call that asks the provider to deliver a notification again.
    pub resend: Option<ResendSpec>,
    /// How long the provider itself keeps retrying a failed delivery: a resend is not asked
    /// for before that (the engine's business).
    pub retry_window: Duration,
    /// The preset this configuration started from (`qvard`, `paymos`), if any.
    pub preset: Option<String>,
    /// Decimals per `"chain:asset"` (asset = lowercase contract or `native`), to read decimal
    /// amounts. Native coins default to 18.
    pub decimals: HashMap<String, u8>,
}

/// One list endpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListSpec {
    /// Path (and query) relative to `base_url`, with placeholders: `{since}`, `{until}`
    /// (per `time_format`), `{since_unix}`, `{until_unix}`, `{since_rfc3339}`,
    /// `{until_rfc3339}`, `{cursor}` (empty on the first request), `{page}`, `{offset}`,
    /// `{limit}`. Values are percent-encoded.
    pub path: String,
    pub time_format: TimeFormat,
    pub pagination: Pagination,
    /// JSON pointer to the array of items in a page body (`""`: the body is the array).
    pub items: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TimeFormat {
    /// `2026-11-01T00:00:00Z`
    Rfc3339,
    /// Seconds since 1970 (`1793491200`).
    Unix,
}

/// How a list pages. Every style is read sequentially: none tells the total up front.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pagination {
    /// `{page}` = first, first + 1, …; stops on an empty page, or when `has_more` (a pointer
    /// to a boolean in the body) says `false`.
    Page {
        first: u64,
        has_more: Option<String>,
    },
    /// `{cursor}` = the value at `next` in the previous body; null, `""` or missing: done.
    Cursor { next: String },
    /// `{offset}` = items read so far, `{limit}` = `limit`; a page shorter than `limit` is
    /// the last.
    Offset { limit: u64 },
    /// RFC 8288 `Link: <url>; rel="next"` (absolute or relative); none: done.
    Link,
}

/// RFC 6901 JSON pointers into one item (a list item or a webhook body).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldPointers {
    /// The provider's id for the item (used for resends).
    pub event_id: String,
    /// The merchant's order id.
    pub order_ref: Option<String>,
    /// May be absent when the provider has exactly one chain.
    pub chain: Option<String>,
    pub tx_hash: Option<String>,
    pub log_index: Option<String>,
    pub amount: Option<String>,
    pub asset: Option<String>,
    pub status: String,
    pub updated_at: String,
}

/// How `amount` is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AmountUnit {
    /// An integer in base units (`"25000000"` or `25000000`).
    Base,
    /// A decimal in whole units (`"25.00"`), converted with the asset's decimals.
    Decimal,
}

/// What a provider status means.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StatusAction {
    Pending,
    Confirmed,
    Final,
    /// Not a payment state (failed, expired): the item is dropped, not counted as rejected.
    Ignore,
}

impl StatusAction {
    /// The state this status stands for; `None` for `Ignore`.
    pub fn state(self) -> Option<State> {
        match self {
            StatusAction::Pending => Some(State::Pending),
            StatusAction::Confirmed => Some(State::Confirmed),
            StatusAction::Final => Some(State::Final),
            StatusAction::Ignore => None,
        }
    }
}

/// The resend call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResendSpec {
    /// HTTP method (`POST`).
    pub method: String,
    /// Path relative to `base_url`; `{id}` is replaced by the percent-encoded record id.
    pub path: String,
}
