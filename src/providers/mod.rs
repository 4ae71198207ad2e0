//! Provider APIs turned into `ProviderRecord`s (malformed records rejected with a reason).
//! One file per upstream; knows nothing of SQL or the chain.

pub mod chaingateway;

use std::sync::Arc;

use crate::domain::{Address, Asset, TxHash, U256};

/// One notification as a provider lists it, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderRecord {
    /// Provider's notification id (used for resends).
    pub id: String,
    /// Configured chain name.
    pub chain: String,
    pub tx_hash: TxHash,
    pub asset: Asset,
    pub to: Address,
    /// The provider's amount in base units, when it gave one that could be read (a hint only).
    pub amount_hint: Option<U256>,
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

#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("provider {provider}: {what}: {reason}")]
    Request {
        provider: String,
        what: String,
        reason: String,
    },
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
