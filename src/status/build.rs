//! The status view assembled from what the store read (pure: no IO), a section each.

use std::collections::BTreeMap;

use jiff::Timestamp;

use super::{
    EventsStatus, ExceptionsStatus, Inbox, LastRun, Lease, ListStatus, OpenKind, ProviderStatus,
    RecentGaps, ResendItem, Resends, Status, KILLED_AFTER,
};
use crate::domain::GapKind;
use crate::report::Gaps;
use crate::store::{RunStatusRow, StatusData};

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
    let age = |t: Option<&str>| {
        t.and_then(|t| t.parse::<Timestamp>().ok())
            .map(|t| now.duration_since(t).as_secs().max(0))
    };
    Status {
        generated_at: now.to_string(),
        next_scheduled_run: None,
        database,
        providers: providers(&d, names, &all, now),
        gaps_24h: recent_gaps(&d, &all, since),
        exceptions: exceptions(&d, now),
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
            oldest_age_seconds: age(d.inbox_oldest.as_deref()),
            oldest_received_at: d.inbox_oldest,
        },
        events: {
            let c = d.events.unwrap_or_default();
            EventsStatus {
                enabled: false,
                pending: c.pending,
                dead: c.dead,
                oldest_pending_age_seconds: age(c.oldest_pending.as_deref()),
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

/// Each configured provider's last run and last success.
fn providers(
    d: &StatusData,
    names: &[(String, String)],
    all: &[&str],
    now: Timestamp,
) -> Vec<ProviderStatus> {
    names
        .iter()
        .map(|(name, kind)| ProviderStatus {
            provider: name.clone(),
            kind: kind.clone(),
            last_run: d
                .last_runs
                .iter()
                .find(|(n, _)| n == name)
                .and_then(|(_, r)| r.as_ref())
                .map(|r| last_run(r, name, all, now)),
            last_success_at: d
                .last_success
                .iter()
                .find(|(n, _)| n == name)
                .and_then(|(_, t)| t.clone()),
        })
        .collect()
}

/// Gaps since `since`, per provider (every configured one, at 0 when none) and in total.
fn recent_gaps(d: &StatusData, all: &[&str], since: Timestamp) -> RecentGaps {
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
    RecentGaps {
        since: since.to_string(),
        providers: by_provider,
        total,
    }
}

/// Open exceptions: counts and the oldest per kind, the newest few.
fn exceptions(d: &StatusData, now: Timestamp) -> ExceptionsStatus {
    let Some((open, items)) = &d.exceptions else {
        return ExceptionsStatus {
            table: false,
            open_total: 0,
            open: BTreeMap::new(),
            items: Vec::new(),
        };
    };
    ExceptionsStatus {
        table: true,
        open_total: open.iter().map(|o| o.open).sum(),
        open: open
            .iter()
            .map(|o| {
                let kind = OpenKind {
                    open: o.open,
                    oldest_first_seen_at: o.oldest_first_seen_at.clone(),
                    oldest_age_seconds: o.oldest.map(|t| now.duration_since(t).as_secs().max(0)),
                };
                (o.kind.clone(), kind)
            })
            .collect(),
        items: items.clone(),
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
