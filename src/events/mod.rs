//! Events to the merchant's application (docs/reference.md §6): the delivery loop. It claims
//! due events in the database (one instance at a time per event, per-order order), POSTs each
//! with Standard Webhooks headers, and records the attempt: delivered on a 2xx within
//! `timeout`, otherwise retried after the next delay of `retry_schedule` (plus jitter, or a
//! longer `Retry-After`), and dead after the last one. `serve` runs it until shutdown, woken by
//! each committed batch (polling is the fallback for other processes' commits); `run` flushes
//! for up to `flush_timeout`.

pub mod sign;

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use jiff::Timestamp;
use tokio::sync::Notify;
use tokio::task::JoinSet;

use crate::config::EventsConfig;
use crate::metrics::{EventL, EventOutcome, Metrics};
use crate::providers::retry::retry_after_secs;
use crate::store::{Attempt, ClaimedEvent, Store};

/// How often the loop looks for due events when nothing woke it (another process's commits,
/// retries coming due).
pub const POLL: Duration = Duration::from_millis(500);
/// How often the pending and dead gauges are refreshed.
const COUNT_EVERY: Duration = Duration::from_secs(5);
/// How often `serve` deletes delivered events past `events.retention`.
const PRUNE_EVERY: Duration = Duration::from_secs(3600);
/// A claim outlives the attempt's timeout by this much; a process that died holding one
/// leaves the event to another instance after that.
const CLAIM_MARGIN: Duration = Duration::from_secs(10);
/// A flush starts no attempt with less time than this left (or `timeout`, if shorter).
const FLUSH_LAST_ATTEMPT: Duration = Duration::from_secs(1);
/// The longest `Retry-After` honoured.
const RETRY_AFTER_CAP: Duration = Duration::from_secs(3600);
/// Jitter added to each delay of the schedule: up to this share of it.
const JITTER: f64 = 0.2;

#[derive(Debug, thiserror::Error)]
pub enum EventsError {
    #[error("events: cannot build the HTTP client: {0}")]
    Client(String),
}

/// What a flush did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Flushed {
    pub delivered: u64,
    pub failed: u64,
    pub dead: u64,
}

pub struct Deliverer {
    store: Store,
    cfg: EventsConfig,
    key: Vec<u8>,
    client: reqwest::Client,
    metrics: Arc<Metrics>,
    /// This process as a claim holder.
    holder: String,
    wake: Arc<Notify>,
}

enum Mode {
    /// `serve`: until stopped; deletes delivered events past retention.
    Serve,
    /// `run`: until nothing is due, or the deadline.
    Flush(Instant),
}

impl Deliverer {
    pub fn new(
        cfg: EventsConfig,
        store: Store,
        metrics: Arc<Metrics>,
        holder: String,
        wake: Arc<Notify>,
    ) -> Result<Deliverer, EventsError> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(cfg.timeout)
            .user_agent(concat!("payrecon/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| EventsError::Client(e.to_string()))?;
        Ok(Deliverer {
            key: cfg.key(),
            store,
            cfg,
            client,
            metrics,
            holder,
            wake,
        })
    }

    pub fn config(&self) -> &EventsConfig {
        &self.cfg
    }

    /// `serve`: delivers until `stop` resolves, then lets the attempts in flight finish
    /// (each bounded by `timeout`). Also refreshes the gauges and applies retention.
    pub async fn run(self: &Arc<Self>, stop: impl Future<Output = ()>) {
        // Aborted however `run` ends (returns, panics, or its future is dropped).
        let mut housekeeping = JoinSet::new();
        {
            let me = self.clone();
            housekeeping.spawn(async move { me.housekeeping().await });
        }
        self.pump(Mode::Serve, stop).await;
    }

    /// `run`: delivers what is due, and what becomes due within `within` (an order's next
    /// event, a retry), then returns; the rest waits for the next `serve` or `run`. It never
    /// overruns `within`: an attempt started near the end gets the time that is left, and
    /// none starts in its last second.
    pub async fn flush(self: &Arc<Self>, within: Duration) -> Flushed {
        let tally = self
            .pump(Mode::Flush(Instant::now() + within), std::future::pending())
            .await;
        self.refresh_gauges().await;
        tally
    }

    /// Gauges every `COUNT_EVERY`, retention every `PRUNE_EVERY` (its own task: a slow count
    /// or delete never holds up a delivery).
    async fn housekeeping(&self) {
        let mut pruned_at: Option<Instant> = None;
        loop {
            self.refresh_gauges().await;
            if pruned_at.is_none_or(|t| t.elapsed() >= PRUNE_EVERY) {
                self.prune().await;
                pruned_at = Some(Instant::now());
            }
            tokio::time::sleep(COUNT_EVERY).await;
        }
    }

    async fn pump(self: &Arc<Self>, mode: Mode, stop: impl Future<Output = ()>) -> Flushed {
        let mut tally = Flushed::default();
        // Each attempt on its own task: it progresses whatever the loop is waiting on.
        let mut inflight: JoinSet<EventOutcome> = JoinSet::new();
        let mut store_failing = false;
        tokio::pin!(stop);
        loop {
            // In a flush, the time left bounds each attempt; none starts in the last second.
            let timeout = match mode {
                Mode::Flush(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    if left < FLUSH_LAST_ATTEMPT.min(self.cfg.timeout) {
                        break;
                    }
                    left.min(self.cfg.timeout)
                }
                Mode::Serve => self.cfg.timeout,
            };
            let free = self.cfg.max_concurrency.saturating_sub(inflight.len());
            let mut claimed = 0;
            if free > 0 {
                let lease = timeout + CLAIM_MARGIN;
                match self
                    .store
                    .claim_events(&self.holder, Timestamp::now(), lease, free)
                    .await
                {
                    Ok(events) => {
                        if store_failing {
                            tracing::info!("The event outbox can be read again.");
                            store_failing = false;
                        }
                        claimed = events.len();
                        for ev in events {
                            let me = self.clone();
                            inflight.spawn(async move { me.deliver(ev, timeout).await });
                        }
                    }
                    Err(e) => {
                        if !store_failing {
                            tracing::warn!(error = %e, "Cannot claim events to deliver; retrying.");
                        }
                        store_failing = true;
                    }
                }
            }
            let deadline = match mode {
                Mode::Flush(d) => {
                    // Nothing in flight and nothing due: wait only for a retry that comes
                    // due before the deadline.
                    // (While the outbox cannot be read, keep trying until the deadline.)
                    if inflight.is_empty()
                        && claimed == 0
                        && !store_failing
                        && !self.due_before(d).await
                    {
                        break;
                    }
                    d
                }
                Mode::Serve => Instant::now() + Duration::from_secs(3600),
            };
            tokio::select! {
                // A stop wins over everything else: no new attempt starts after it.
                biased;
                _ = &mut stop => break,
                Some(done) = inflight.join_next(), if !inflight.is_empty() => tally.add_joined(done),
                _ = self.wake.notified() => {}
                _ = tokio::time::sleep(POLL) => {}
                _ = tokio::time::sleep_until(deadline.into()) => {}
            }
        }
        while let Some(done) = inflight.join_next().await {
            tally.add_joined(done);
        }
        tally
    }

    /// One attempt of one claimed event (answered within `timeout`), recorded.
    async fn deliver(&self, ev: ClaimedEvent, timeout: Duration) -> EventOutcome {
        let attempt = self.send(&ev, timeout).await;
        let outcome = match &attempt {
            Attempt::Delivered { .. } => EventOutcome::delivered,
            Attempt::Retry { .. } => EventOutcome::failed,
            Attempt::Dead { .. } => EventOutcome::dead,
        };
        match &attempt {
            Attempt::Delivered { status } => {
                tracing::info!(event_id = %ev.id, order_id = ev.order_id, status, "Event delivered.")
            }
            Attempt::Retry { error, next, .. } => {
                tracing::warn!(event_id = %ev.id, order_id = ev.order_id, attempt = ev.attempts + 1,
                    error = %error, next_attempt_at = %next, "An event delivery failed; it will be retried.")
            }
            Attempt::Dead { error, .. } => {
                tracing::error!(event_id = %ev.id, order_id = ev.order_id, attempts = ev.attempts + 1,
                    error = %error, "An event is dead: every retry failed (`payrecon events replay` sends it again).")
            }
        }
        let counter = |o: EventOutcome| {
            self.metrics
                .events
                .get_or_create(&EventL { outcome: o })
                .inc()
        };
        // `failed` counts failed attempts, the last one of a dead event included.
        if matches!(outcome, EventOutcome::dead) {
            counter(EventOutcome::failed);
        }
        counter(outcome.clone());
        if let Err(e) = self
            .store
            .record_attempt(&ev.id, &self.holder, Timestamp::now(), &attempt)
            .await
        {
            // The claim expires; the event is attempted again then (same webhook-id).
            tracing::warn!(event_id = %ev.id, error = %e, "Cannot record an event delivery attempt.");
        }
        outcome
    }

    /// POSTs the stored body with this attempt's timestamp and signature.
    async fn send(&self, ev: &ClaimedEvent, timeout: Duration) -> Attempt {
        let ts = Timestamp::now().as_second();
        let signature = sign::signature(&self.key, &ev.id, ts, ev.body.as_bytes());
        let res = self
            .client
            .post(&self.cfg.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header("webhook-id", &ev.id)
            .header("webhook-timestamp", ts.to_string())
            .header("webhook-signature", signature)
            .timeout(timeout)
            .body(ev.body.clone())
            .send()
            .await;
        let (status, error, retry_after) = match res {
            Ok(resp) if resp.status().is_success() => {
                return Attempt::Delivered {
                    status: resp.status().as_u16(),
                }
            }
            Ok(resp) => {
                let status = resp.status();
                let what = if status.is_redirection() {
                    format!("HTTP {} (redirects are not followed)", status.as_u16())
                } else {
                    format!("HTTP {}", status.as_u16())
                };
                (Some(status.as_u16()), what, retry_after_secs(&resp))
            }
            Err(e) => (None, describe(&e, timeout), None),
        };
        let jitter: f64 = rand::random();
        match next_attempt(
            &self.cfg.retry_schedule,
            ev.attempts,
            retry_after,
            Timestamp::now(),
            jitter,
        ) {
            Some(next) => Attempt::Retry {
                status,
                error,
                next,
            },
            None => Attempt::Dead { status, error },
        }
    }

    /// Some pending event becomes due before `deadline` (a retry within the flush).
    async fn due_before(&self, deadline: Instant) -> bool {
        let now = Timestamp::now();
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok(left) = jiff::SignedDuration::try_from(left) else {
            return false;
        };
        match self.store.next_due_at(now).await {
            Ok(Some(at)) => at <= now + left,
            Ok(None) => false,
            Err(e) => {
                tracing::debug!(error = %e, "Cannot read when the next event is due.");
                false
            }
        }
    }

    async fn refresh_gauges(&self) {
        match self.store.event_counts().await {
            Ok(c) => {
                self.metrics.events_pending.set(c.pending);
                self.metrics.events_dead.set(c.dead);
                let age = c
                    .oldest_pending
                    .and_then(|t| t.parse::<Timestamp>().ok())
                    .map(|t| Timestamp::now().duration_since(t).as_secs_f64().max(0.0))
                    .unwrap_or(0.0);
                self.metrics.events_oldest_pending.set(age);
            }
            Err(e) => tracing::debug!(error = %e, "Cannot count pending events."),
        }
    }

    async fn prune(&self) {
        let Ok(keep) = jiff::SignedDuration::try_from(self.cfg.retention) else {
            return;
        };
        let Ok(before) = Timestamp::now().checked_sub(keep) else {
            return;
        };
        match self.store.prune_events(before).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(deleted = n, "Deleted delivered events past retention."),
            Err(e) => tracing::warn!(error = %e, "Cannot delete delivered events past retention."),
        }
    }
}

impl Flushed {
    fn add_joined(&mut self, done: Result<EventOutcome, tokio::task::JoinError>) {
        match done {
            Ok(o) => self.add(o),
            // The attempt's task panicked: its claim expires and the event is sent again.
            Err(e) => tracing::error!(error = %e, "An event delivery task failed."),
        }
    }

    fn add(&mut self, o: EventOutcome) {
        match o {
            EventOutcome::delivered => self.delivered += 1,
            EventOutcome::failed => self.failed += 1,
            EventOutcome::dead => self.dead += 1,
        }
    }
}

/// When to attempt again after a failed attempt, `attempts` having been made before it:
/// the next delay of `schedule` plus up to 20 % (`jitter` in [0, 1)), or a longer
/// `Retry-After` (at most 1 h). `None` when the schedule is spent: the event is dead.
pub fn next_attempt(
    schedule: &[Duration],
    attempts: i64,
    retry_after: Option<Duration>,
    now: Timestamp,
    jitter: f64,
) -> Option<Timestamp> {
    let delay = *schedule.get(usize::try_from(attempts).ok()?)?;
    let jittered = delay.mul_f64(1.0 + JITTER * jitter.clamp(0.0, 1.0));
    let wait = match retry_after.map(|r| r.min(RETRY_AFTER_CAP)) {
        Some(r) if r > jittered => r,
        _ => jittered,
    };
    now.checked_add(jiff::SignedDuration::try_from(wait).ok()?)
        .ok()
}

/// A transport error in one line with its causes, without the URL (it may carry a token).
fn describe(e: &reqwest::Error, timeout: Duration) -> String {
    if e.is_timeout() {
        return format!(
            "no answer within {} (events.timeout)",
            crate::config::format_duration(timeout)
        );
    }
    let mut text = if e.is_connect() {
        "connection failed".to_string()
    } else {
        "request failed".to_string()
    };
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests;
