//! `payrecon status`: the operator's read-only view of the database: the last run per
//! provider (and the chain sweep), gaps found in the last 24 h, the open exceptions (how
//! many of each kind, the oldest, the newest few), pending resends, the webhook inbox and
//! the lease holders. Never migrates, never writes (`app::db`, `Access::Read`).
//!
//! `payrecon_runs` has one row per run; a provider's outcome in a run is derived from the
//! run's `error` (`"cg: reason; qvard: reason"`): the provider failed when one of the
//! `"; "`-separated parts starts with `"<name>: "`, else it was ok. A run without
//! `finished_at` is `running`, or `killed` once it started more than `KILLED_AFTER` ago.

use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};
use serde::Serialize;

use crate::config::Config;
use crate::domain::GapKind;
use crate::engine::Part;
use crate::report::Gaps;

mod build;
mod text;

pub use build::{build, provider_error};

/// A run still without `finished_at` this long after it started is shown as `killed`:
/// payrecon records the end of every run that returns, so such a run was stopped (SIGKILL,
/// OOM, power loss) or hangs.
pub const KILLED_AFTER: SignedDuration = SignedDuration::from_hours(1);
/// Findings created within this window count as recent gaps.
pub const GAP_WINDOW: SignedDuration = SignedDuration::from_hours(24);

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct StatusError(pub String);

#[derive(Debug, Clone, Serialize)]
pub struct Status {
    pub generated_at: String,
    /// When `serve` next runs by `schedule.cron` (RFC 3339; `null` when the expression has
    /// no next time): what a `serve` on this configuration is waiting for.
    pub next_scheduled_run: Option<String>,
    /// `sqlite` or `postgres` (never the URL).
    pub database: &'static str,
    pub providers: Vec<ProviderStatus>,
    pub gaps_24h: RecentGaps,
    /// Exceptions waiting for a person (README.md, "Exceptions").
    pub exceptions: ExceptionsStatus,
    pub resends: Resends,
    pub webhook_inbox: Inbox,
    /// Whether `payrecon_leases` exists; without it there is one instance and no lease.
    pub lease_table: bool,
    pub leases: Vec<Lease>,
    /// Events to the merchant's application (docs/reference.md §6).
    pub events: EventsStatus,
    /// Per provider list: what the last run that read it read (docs/configuration.md,
    /// "Long notification lists").
    pub lists: Vec<ListStatus>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ListStatus {
    pub provider: String,
    /// `null` for a list of every chain.
    pub chain: Option<String>,
    /// `all` (every notification) or `failed`.
    pub list: String,
    pub last_pages_read: i64,
    pub last_pages_total: i64,
    pub last_read_at: String,
    /// When a run last read the list whole (`null`: never).
    pub last_full_read_at: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct EventsStatus {
    /// `[events] url` is set in this configuration.
    pub enabled: bool,
    /// Neither delivered nor dead.
    pub pending: i64,
    /// Every retry failed: kept until `payrecon events replay`.
    pub dead: i64,
    pub oldest_pending_at: Option<String>,
    pub oldest_pending_age_seconds: Option<i64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ProviderStatus {
    pub provider: String,
    /// `chaingateway`, `http`, or `chain` for the sweep.
    pub kind: String,
    pub last_run: Option<LastRun>,
    pub last_success_at: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct LastRun {
    pub run_id: String,
    pub trigger: String,
    pub started_at: String,
    pub finished_at: Option<String>,
    /// This provider's outcome: `ok`, `failed`, `running` or `killed`.
    pub status: String,
    pub duration_seconds: Option<f64>,
    /// This provider's part of the run's error.
    pub error: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RecentGaps {
    pub since: String,
    /// Every configured provider and `chain` (zeros included), and any other provider name
    /// found in the window.
    pub providers: BTreeMap<String, Gaps>,
    pub total: Gaps,
}

#[derive(Debug, Clone, Serialize)]
pub struct ExceptionsStatus {
    /// Whether `payrecon_exceptions` exists (an older schema: `payrecon migrate`).
    pub table: bool,
    pub open_total: i64,
    /// Every kind (zeros included): how many are open, and the oldest.
    pub open: BTreeMap<String, OpenKind>,
    /// The newest open exceptions, up to `STATUS_LIST_LIMIT`.
    pub items: Vec<crate::store::ExceptionRow>,
}

#[derive(Debug, Clone, Serialize)]
pub struct OpenKind {
    pub open: i64,
    /// When the oldest open exception of the kind was first seen.
    pub oldest_first_seen_at: Option<String>,
    pub oldest_age_seconds: Option<i64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Resends {
    pub cooldown_seconds: u64,
    /// Resend requests made within the cooldown (no new request for them until it ends).
    pub pending: i64,
    pub items: Vec<ResendItem>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ResendItem {
    pub provider: String,
    pub notification_id: String,
    pub requested_at: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Inbox {
    pub unprocessed: i64,
    pub oldest_received_at: Option<String>,
    pub oldest_age_seconds: Option<i64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Lease {
    pub provider: String,
    pub holder: Option<String>,
    pub token: Option<i64>,
    pub expires_at: Option<String>,
}

/// Connects read-only to the configured database and reads the status. Errors carry no
/// secret (the URL is redacted, configured secrets are scrubbed).
pub async fn collect(config: &Config) -> Result<Status, StatusError> {
    let store = crate::app::db::open(config, crate::app::Access::Read)
        .await
        .map_err(|e| StatusError(e.0))?;
    let status = read(&store, config).await;
    store.close().await;
    status
}

/// The status read from `store` (the console's overview reads it from serve's pool).
pub async fn read(store: &crate::store::Store, config: &Config) -> Result<Status, StatusError> {
    let scrub = |e: &dyn std::fmt::Display| {
        StatusError(crate::secret::redact(&e.to_string(), &config.secrets()))
    };
    // Milliseconds, as the stored timestamps.
    let now = Timestamp::now();
    let now = Timestamp::from_millisecond(now.as_millisecond()).unwrap_or(now);
    let names: Vec<(String, String)> = config
        .providers
        .iter()
        .map(|p| (p.name().to_string(), p.kind().to_string()))
        .chain([(
            Part::Sweep.name().to_string(),
            Part::Sweep.name().to_string(),
        )])
        .chain([(Part::Run.name().to_string(), Part::Run.name().to_string())])
        .collect();
    let provider_names: Vec<String> = names.iter().map(|(n, _)| n.clone()).collect();
    let since = now - GAP_WINDOW;
    let cooldown = config.reconcile.resend_cooldown;
    let data = store
        .status_data(&provider_names, since, now, cooldown)
        .await
        .map_err(|e| scrub(&e));
    let backend = store.backend_name();
    let mut status = build(data?, &names, backend, now, since, cooldown);
    status.events.enabled = config.events.is_some();
    status.next_scheduled_run = crate::config::parse_cron(&config.schedule.cron)
        .ok()
        .and_then(|c| c.find_next_occurrence(&chrono::Utc::now(), false).ok())
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
    Ok(status)
}

#[cfg(test)]
mod tests;
