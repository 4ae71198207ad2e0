//! `payrecon status`: the operator's read-only view of the database: the last run per
//! provider (and the chain sweep), gaps found in the last 24 h, the `reorged` and
//! `amount_mismatch` findings of the last finished run, pending resends, the webhook inbox
//! and the lease holders. Never migrates, never writes (see `Store::connect_read_only`).
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
use crate::store::{RunStatusRow, StatusData, Store};

mod text;

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
    /// `sqlite` or `postgres` (never the URL).
    pub database: &'static str,
    pub providers: Vec<ProviderStatus>,
    pub gaps_24h: RecentGaps,
    pub open_findings: OpenFindings,
    pub resends: Resends,
    pub webhook_inbox: Inbox,
    /// Whether `payrecon_leases` exists; without it there is one instance and no lease.
    pub lease_table: bool,
    pub leases: Vec<Lease>,
    /// Events to the merchant's application (SPEC §10).
    pub events: EventsStatus,
    /// Per provider list: what the last run that read it read (SPEC §11).
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
pub struct OpenFindings {
    /// The last finished run, whose findings these are.
    pub run_id: Option<String>,
    pub reorged: FindingList,
    pub amount_mismatch: FindingList,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct FindingList {
    pub count: i64,
    /// The first `STATUS_LIST_LIMIT`.
    pub items: Vec<FindingItem>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FindingItem {
    pub provider: String,
    pub order_ref: Option<String>,
    pub chain: String,
    pub tx_hash: Option<String>,
    pub log_index: Option<i64>,
    pub detail: String,
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
    let scrub = |e: &dyn std::fmt::Display| {
        StatusError(crate::secret::redact(&e.to_string(), &config.secrets()))
    };
    let url = config.database.url.expose();
    let store = Store::connect_read_only(url, config.database.max_connections)
        .await
        .map_err(|e| scrub(&e))?;
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
        .collect();
    let provider_names: Vec<String> = names.iter().map(|(n, _)| n.clone()).collect();
    let since = now - GAP_WINDOW;
    let cooldown = config.reconcile.resend_cooldown;
    let data = store
        .status_data(&provider_names, since, now, cooldown)
        .await
        .map_err(|e| scrub(&e));
    let backend = store.backend_name();
    match store {
        Store::Sqlite(p) => p.close().await,
        Store::Postgres(p) => p.close().await,
    }
    let mut status = build(data?, &names, backend, now, since, cooldown);
    status.events.enabled = config.events.is_some();
    Ok(status)
}

/// Assembles the view from what was read (no IO).
pub fn build(
    d: StatusData,
    names: &[(String, String)],
    database: &'static str,
    now: Timestamp,
    since: Timestamp,
    cooldown: std::time::Duration,
) -> Status {
    let all: Vec<&str> = names.iter().map(|(n, _)| n.as_str()).collect();
    let providers = names
        .iter()
        .map(|(name, kind)| ProviderStatus {
            provider: name.clone(),
            kind: kind.clone(),
            last_run: d
                .last_runs
                .iter()
                .find(|(n, _)| n == name)
                .and_then(|(_, r)| r.as_ref())
                .map(|r| last_run(r, name, &all, now)),
            last_success_at: d
                .last_success
                .iter()
                .find(|(n, _)| n == name)
                .and_then(|(_, t)| t.clone()),
        })
        .collect();
    let mut by_provider: BTreeMap<String, Gaps> = all
        .iter()
        .map(|n| (n.to_string(), Gaps::default()))
        .collect();
    let mut total = Gaps::default();
    for (provider, kind, n) in &d.gaps {
        if let Some(k) = GapKind::ALL.into_iter().find(|k| k.as_str() == kind) {
            let n = u64::try_from(*n).unwrap_or(0);
            by_provider.entry(provider.clone()).or_default().add(k, n);
            total.add(k, n);
        }
    }
    let list = |kind: &str| FindingList {
        count: d
            .open_counts
            .iter()
            .find(|(k, _)| k == kind)
            .map_or(0, |(_, n)| *n),
        items: d
            .open_findings
            .iter()
            .filter(|f| f.kind == kind)
            .map(|f| FindingItem {
                provider: f.provider.clone(),
                order_ref: f.order_ref.clone(),
                chain: f.chain.clone(),
                tx_hash: f.tx_hash.clone(),
                log_index: f.log_index,
                detail: f.detail.clone(),
            })
            .collect(),
    };
    let oldest_age_seconds = d
        .inbox_oldest
        .as_deref()
        .and_then(|t| t.parse::<Timestamp>().ok())
        .map(|t| now.duration_since(t).as_secs().max(0));
    Status {
        generated_at: now.to_string(),
        database,
        providers,
        gaps_24h: RecentGaps {
            since: since.to_string(),
            providers: by_provider,
            total,
        },
        open_findings: OpenFindings {
            run_id: d.last_finished_run.as_ref().map(|r| r.id.clone()),
            reorged: list("reorged"),
            amount_mismatch: list("amount_mismatch"),
        },
        resends: Resends {
            cooldown_seconds: cooldown.as_secs(),
            pending: d.pending_resends,
            items: d
                .resends
                .into_iter()
                .map(|r| ResendItem {
                    provider: r.provider,
                    notification_id: r.notification_id,
                    requested_at: r.requested_at,
                })
                .collect(),
        },
        webhook_inbox: Inbox {
            unprocessed: d.inbox_unprocessed,
            oldest_received_at: d.inbox_oldest,
            oldest_age_seconds,
        },
        events: {
            let c = d.events.unwrap_or_default();
            EventsStatus {
                enabled: false,
                pending: c.pending,
                dead: c.dead,
                oldest_pending_age_seconds: c
                    .oldest_pending
                    .as_deref()
                    .and_then(|t| t.parse::<Timestamp>().ok())
                    .map(|t| now.duration_since(t).as_secs().max(0)),
                oldest_pending_at: c.oldest_pending,
            }
        },
        lists: d
            .list_reads
            .unwrap_or_default()
            .into_iter()
            .map(|l| ListStatus {
                provider: l.provider,
                chain: (!l.chain.is_empty()).then_some(l.chain),
                list: l.list,
                last_pages_read: l.pages_read,
                last_pages_total: l.pages_total,
                last_read_at: l.read_at,
                last_full_read_at: l.last_full_at,
            })
            .collect(),
        lease_table: d.leases.is_some(),
        leases: d
            .leases
            .unwrap_or_default()
            .into_iter()
            .map(|l| Lease {
                provider: l.provider,
                holder: l.holder,
                token: l.token,
                expires_at: l.expires_at,
            })
            .collect(),
    }
}

/// `run` as seen by provider `name` (`all`: every provider name, to tell where the
/// provider's part of the error ends).
fn last_run(run: &RunStatusRow, name: &str, all: &[&str], now: Timestamp) -> LastRun {
    let started = run.started_at.parse::<Timestamp>().ok();
    let finished = run
        .finished_at
        .as_deref()
        .and_then(|t| t.parse::<Timestamp>().ok());
    let (status, error) = match (&run.finished_at, run.status.as_str()) {
        (None, _) => {
            let stale = started.is_some_and(|s| now.duration_since(s) > KILLED_AFTER);
            (if stale { "killed" } else { "running" }, None)
        }
        (Some(_), "ok") => ("ok", None),
        (Some(_), _) => match provider_error(run.error.as_deref().unwrap_or(""), name, all) {
            Some(e) => ("failed", Some(e)),
            None => ("ok", None),
        },
    };
    LastRun {
        run_id: run.id.clone(),
        trigger: run.trigger.clone(),
        started_at: run.started_at.clone(),
        finished_at: run.finished_at.clone(),
        status: status.to_string(),
        duration_seconds: match (started, finished) {
            (Some(s), Some(f)) => Some(f.duration_since(s).as_millis() as f64 / 1000.0),
            _ => None,
        },
        error,
    }
}

/// `name`'s part of a run error `"a: x; b: y; z"`: from the part that starts with
/// `"<name>: "` up to the next part that starts with another provider's `"<other>: "`
/// (a provider's own error may hold `"; "`). None: the provider did not fail.
pub fn provider_error(error: &str, name: &str, all: &[&str]) -> Option<String> {
    let prefix = format!("{name}: ");
    let starts_other = |p: &str| {
        all.iter()
            .any(|o| *o != name && p.starts_with(&format!("{o}: ")))
    };
    let mut parts = error.split("; ").skip_while(|p| !p.starts_with(&prefix));
    let first = parts.next()?;
    let mut out = first[prefix.len()..].to_string();
    for p in parts.take_while(|p| !starts_other(p)) {
        out.push_str("; ");
        out.push_str(p);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::provider_error;

    #[test]
    fn a_providers_part_of_the_run_error() {
        let all = ["cg", "qvard", "chain", "cg2"];
        let check = |error: &str, name: &str, want: Option<&str>| {
            assert_eq!(
                provider_error(error, name, &all).as_deref(),
                want,
                "{error} / {name}"
            )
        };
        check("cg: down; qvard: 401", "cg", Some("down"));
        check("cg: down; qvard: 401", "qvard", Some("401"));
        check("cg: down; qvard: 401", "chain", None);
        check("cg: a; b; chain: c", "cg", Some("a; b"));
        check("cg2: x", "cg", None);
        check("qvard: chain ethereum: timeout", "chain", None);
        check(
            "qvard: chain ethereum: timeout",
            "qvard",
            Some("chain ethereum: timeout"),
        );
        check("", "cg", None);
    }
}
