//! Provider APIs turned into `ProviderRecord`s (malformed records rejected with a reason).
//! One file per upstream; knows nothing of SQL or the chain.

pub mod chaingateway;
mod dispatch;
pub mod http;
pub(crate) mod retry;

pub use dispatch::{Provider, ProviderKind};

use std::sync::Arc;

use std::sync::Mutex;

use jiff::Timestamp;

use crate::domain::page_search::Contradiction;
use crate::domain::{Address, Asset, State, TxHash, U256};

/// One notification, payment or event as a provider lists it (or a webhook delivers it),
/// validated. A record that names a transaction is decided by the chain; one that names none
/// is matched by `order_ref` and carries the provider's own `status` (docs/configuration.md,
/// "The generic provider").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderRecord {
    /// Provider's notification or event id (used for resends).
    pub id: String,
    /// Configured chain name.
    pub chain: String,
    /// The transaction, when the record names one.
    pub tx_hash: Option<TxHash>,
    /// The transfer's log index in its block (-1 native), when the provider gives it.
    pub log_index: Option<i64>,
    /// The asset, when the provider names it (else any Transfer at `log_index`).
    pub asset: Option<Asset>,
    /// The deposit address paid, when the provider names it.
    pub to: Option<Address>,
    /// The merchant's order id, when the provider echoes it.
    pub order_ref: Option<String>,
    /// The provider's amount in base units, when it gave one that could be read (a hint only).
    pub amount_hint: Option<U256>,
    /// The provider's own state for the payment (after its status map), when it gives one.
    pub status: Option<State>,
    pub created_at: jiff::Timestamp,
    /// Listed among the failed notifications.
    pub failed: bool,
}

/// A record that could not be read: counted as `rejected`, logged with its id and reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    pub id: Option<String>,
    pub reason: String,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Page {
    pub records: Vec<ProviderRecord>,
    pub rejected: Vec<Rejected>,
}

/// Which list to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListKind {
    /// Every notification (filtered by the run's window by the caller).
    All,
    /// Notifications whose delivery failed (all of them).
    Failed,
}

impl std::fmt::Display for ListKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ListKind::All => "all",
            ListKind::Failed => "failed",
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("provider {provider}: {what}: {reason}")]
    Request {
        provider: String,
        what: String,
        reason: String,
    },
}

/// Why a provider's answer, a page or one of its records cannot be used, or an exchange
/// failed after its retries: a reason for a person (a rejection in the report, a part's
/// error), which never carries the API key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Reason(pub String);

impl From<String> for Reason {
    fn from(s: String) -> Reason {
        Reason(s)
    }
}

impl From<Reason> for String {
    fn from(r: Reason) -> String {
        r.0
    }
}

impl From<&str> for Reason {
    fn from(s: &str) -> Reason {
        Reason(s.to_string())
    }
}

/// HTTP status class of a provider response, for `payrecon_provider_requests_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StatusClass {
    Ok2xx,
    Client4xx,
    Server5xx,
    Error,
}

/// Called once per HTTP attempt with its status class (wired to metrics by the engine).
pub type RequestObserver = Arc<dyn Fn(StatusClass) + Send + Sync>;

/// How a list is to be read.
#[derive(Debug, Clone, Copy, Default)]
pub struct ListPlan {
    /// Read only the pages that can hold a record created at or after this time
    /// (`since − list_margin`); `None`: read the list whole.
    pub cutoff: Option<Timestamp>,
}

/// What one list read did: the report's `pages_read` / `pages_total`, `payrecon status`,
/// `payrecon_list_full_scans_total`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListStats {
    /// Pages fetched (probes, the window's pages, pages re-read because records moved).
    pub pages_read: u64,
    /// `last_page` as the list last reported it.
    pub pages_total: u64,
    /// Every record of the list was read: asked for, a fallback, or a window that held it all.
    pub whole: bool,
    /// Why the search gave up and the list was read whole.
    pub fallback: Option<Contradiction>,
    /// Records still moved after the re-read rounds (left for the next run).
    pub unsettled: bool,
}

/// Where a list read leaves its `ListStats` (published when the read ends, however it ends).
pub type StatsCell = Arc<Mutex<ListStats>>;
