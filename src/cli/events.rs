//! `payrecon events` (read-only, like `status`) and `payrecon events replay`: the operator's
//! view of the outbox and the way to send delivered or dead events again, ids unchanged.

use std::fmt::Write as _;

use jiff::Timestamp;

use super::Exit;

use super::{CliError, EventStatus, EventsAction, EventsArgs, Format, Outcome};
use crate::app::{db, Access};
use crate::config::Config;
use crate::store::{EventCounts, EventFilter, EventRow};

/// What `payrecon events` shows.
#[derive(Debug, Clone, serde::Serialize)]
pub struct EventList {
    pub counts: EventCounts,
    pub events: Vec<EventRow>,
    /// More events matched than `limit`: the newest are shown.
    pub truncated: bool,
}

/// Reads events on a read-only connection (never creates or migrates anything).
pub async fn list(config: &Config, filter: &EventFilter) -> Result<EventList, CliError> {
    let store = db::open(config, Access::Read).await?;
    let mut f = filter.clone();
    f.limit = filter.limit.saturating_add(1);
    let read = async {
        let mut events = store.list_events(&f).await?;
        let counts = store.event_counts().await?;
        let truncated = events.len() as i64 > filter.limit;
        if truncated {
            events.remove(0);
        }
        Ok::<_, crate::store::StoreError>(EventList {
            counts,
            events,
            truncated,
        })
    }
    .await;
    store.close().await;
    Ok(read?)
}

/// Puts the matching delivered or dead events back in the queue; returns how many.
pub async fn replay(config: &Config, filter: &EventFilter) -> Result<u64, CliError> {
    // An event put back in the queue with delivery off would never leave: refused, not done.
    if config.events.is_none() {
        return Err(CliError::failed(
            "events are off ([events] url is not set): an event put back in the queue would \
             never be sent; set [events] url first",
        ));
    }
    let store = db::open(config, Access::Write).await?;
    let n = store.replay_events(filter, Timestamp::now()).await;
    let why = match n {
        Ok(0) if filter.id.is_some() || filter.order_ref.is_some() => {
            Some(nothing_to_replay(&store, filter).await)
        }
        _ => None,
    };
    store.close().await;
    match why {
        Some(why) => Err(CliError::failed(why?)),
        None => Ok(n?),
    }
}

/// Why `--id` or `--order` put nothing back: no such event (or no event of that order), or
/// every one of them is pending already (in the queue).
async fn nothing_to_replay(
    store: &crate::store::Store,
    filter: &EventFilter,
) -> Result<String, CliError> {
    let found = store
        .list_events(&EventFilter {
            limit: 1,
            ..filter.clone()
        })
        .await?;
    let (none, pending) = match (&filter.id, &filter.order_ref) {
        (Some(id), _) => (
            format!("no event has the id {id}"),
            format!("event {id} is pending (in the queue already)"),
        ),
        (None, Some(order)) => (
            format!("order {order} has no event that matches"),
            format!("order {order}'s events are pending (in the queue already)"),
        ),
        (None, None) => ("no event matches".into(), "the events are pending".into()),
    };
    let why = if found.is_empty() { none } else { pending };
    Ok(format!("{why}: nothing put back in the queue"))
}

impl EventList {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|_| "{}".into())
    }

    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let c = &self.counts;
        let _ = writeln!(
            s,
            "{} pending, {} dead{}",
            c.pending,
            c.dead,
            c.oldest_pending
                .as_deref()
                .map(|t| format!(", oldest pending written {t}"))
                .unwrap_or_default()
        );
        if self.events.is_empty() {
            let _ = writeln!(s, "no events match");
            return s;
        }
        let _ = writeln!(
            s,
            "\n{:<36} {:<16} {:<15} {:<9} {:>8}  {:<24} last",
            "id", "order", "type", "status", "attempts", "when"
        );
        for e in &self.events {
            let when = match e.status.as_str() {
                "delivered" => e.delivered_at.clone(),
                "dead" => e.dead_at.clone(),
                _ => e.next_attempt_at.clone().map(|t| format!("next {t}")),
            }
            .unwrap_or_default();
            let last = match (e.last_status, &e.last_error) {
                (_, Some(err)) => err.clone(),
                (Some(st), None) => format!("HTTP {st}"),
                (None, None) => String::new(),
            };
            let _ = writeln!(
                s,
                "{:<36} {:<16} {:<15} {:<9} {:>8}  {:<24} {last}",
                e.id,
                e.order_ref.as_deref().unwrap_or("?"),
                e.kind,
                e.status,
                e.attempts,
                when
            );
        }
        if self.truncated {
            let _ = writeln!(s, "(more events match; the newest are shown: use --limit)");
        }
        s
    }
}

/// Runs `payrecon events …` (exit 0 done, 1 a database error, 2 usage).
pub async fn command(config: &Config, args: EventsArgs) -> Outcome {
    if let Some(EventsAction::Replay(r)) = args.action {
        let since = match r
            .since
            .as_deref()
            .map(|s| crate::config::parse_time_arg(s, Timestamp::now()))
        {
            Some(Err(e)) => return Err(CliError::usage(format!("--since: {e}"))),
            Some(Ok(t)) => Some(t),
            None => None,
        };
        let filter = EventFilter {
            id: r.id,
            order_ref: r.order,
            since,
            ..Default::default()
        };
        let n = replay(config, &filter).await?;
        println!("{n} event(s) put back in the queue (ids unchanged)");
        return Ok(Exit::Done);
    }
    if args.limit < 1 {
        return Err(CliError::usage("--limit must be at least 1"));
    }
    let filter = EventFilter {
        status: args.status.map(|s| {
            match s {
                EventStatus::Pending => "pending",
                EventStatus::Dead => "dead",
                EventStatus::Delivered => "delivered",
            }
            .to_string()
        }),
        order_ref: args.order,
        limit: args.limit,
        ..Default::default()
    };
    let list = list(config, &filter).await?;
    match args.format {
        Format::Json => println!("{}", list.to_json()),
        Format::Text => print!("{}", list.to_text()),
    }
    Ok(Exit::Done)
}
