//! The serve loop: sleep until the next cron tick, run, repeat. Single-flight by construction
//! (the run is awaited inline): ticks that pass while a run is going are skipped and logged,
//! never queued. Time comes from a `Clock`, so tests drive it with `tokio::time::pause()`.
//! The loop feeds systemd's watchdog itself (see `sdnotify::Watchdog` for when it stops).

use std::future::Future;

use chrono::{DateTime, Utc};
use croner::Cron;
use tokio::sync::watch;

use super::sdnotify::Watchdog;

/// Wall-clock source for cron arithmetic.
pub trait Clock: Send + Sync {
    fn now(&self) -> DateTime<Utc>;
}

pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock that follows tokio's (pausable) time from a fixed start: for tests.
pub struct TokioClock {
    pub base: DateTime<Utc>,
    pub start: tokio::time::Instant,
}

impl Clock for TokioClock {
    fn now(&self) -> DateTime<Utc> {
        let elapsed = tokio::time::Instant::now() - self.start;
        self.base + chrono::Duration::from_std(elapsed).unwrap_or_default()
    }
}

/// Runs `job` at every tick of `cron` until `shutdown` turns true. A shutdown during a
/// sleep returns at once; during a run, after the run. Returns the number of runs started.
pub async fn run_loop<C, F, Fut>(
    cron: &Cron,
    clock: &C,
    shutdown: watch::Receiver<bool>,
    job: F,
) -> u64
where
    C: Clock,
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    run_loop_fed(cron, clock, shutdown, None, false, job).await
}

/// `run_loop`, feeding `watchdog` from the loop itself: while it sleeps until the next tick,
/// and while it awaits a run for up to `watchdog.stuck_after`. With `run_now`, the first run
/// starts at once (the last success is older than one interval), then the ticks follow.
pub async fn run_loop_fed<C, F, Fut>(
    cron: &Cron,
    clock: &C,
    mut shutdown: watch::Receiver<bool>,
    watchdog: Option<&Watchdog>,
    run_now: bool,
    mut job: F,
) -> u64
where
    C: Clock,
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    let mut feeder = Feeder::new(watchdog);
    let mut runs = 0u64;
    let mut next = match cron.find_next_occurrence(&clock.now(), false) {
        Ok(t) => t,
        Err(e) => {
            tracing::error!(error = %e, "The cron expression has no next occurrence; the schedule stops.");
            return runs;
        }
    };
    if run_now {
        next = clock.now();
        tracing::info!("The last successful run is older than one schedule interval: running now.");
    } else {
        tracing::info!(next_run = %next, "Next run at {next}.");
    }
    loop {
        if *shutdown.borrow() {
            return runs;
        }
        let wait = (next - clock.now()).to_std().unwrap_or_default();
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = shutdown.changed() => continue,
            _ = feeder.tick(None) => continue,
        }
        if clock.now() < next {
            continue;
        }
        runs += 1;
        tracing::info!(tick = %next, "Scheduled run starting.");
        let run = job();
        tokio::pin!(run);
        let started = tokio::time::Instant::now();
        loop {
            tokio::select! {
                _ = &mut run => break,
                _ = feeder.tick(Some(started)) => {}
            }
        }
        // Ticks that passed during the run are skipped, not queued.
        match after_run(cron, next, clock.now()) {
            Some(n) => next = n,
            None => return runs,
        }
        tracing::info!(next_run = %next, "Next run at {next}.");
    }
}

/// The first tick after `now`, past `tick` (the one that started the run): ticks that came
/// while the run went on are skipped, not queued, and said so. `None` when the cron has no
/// next occurrence (the schedule stops).
fn after_run(cron: &Cron, tick: DateTime<Utc>, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let mut skipped = 0u64;
    let mut t = tick;
    loop {
        match cron.find_next_occurrence(&t, false) {
            Ok(n) if n <= now => {
                skipped += 1;
                t = n;
            }
            Ok(n) => {
                if skipped > 0 {
                    tracing::warn!(
                        skipped,
                        "Ticks came while a run was still going; they were skipped, not queued."
                    );
                }
                return Some(n);
            }
            Err(e) => {
                tracing::error!(error = %e, "The cron expression has no next occurrence; the schedule stops.");
                return None;
            }
        }
    }
}

/// The loop's side of the watchdog: a ticker that feeds at each tick, unless the run in
/// progress has lasted longer than `stuck_after`.
struct Feeder<'a> {
    watchdog: Option<(&'a Watchdog, tokio::time::Interval)>,
    /// The run that was found stuck (logged once).
    stuck_logged: Option<tokio::time::Instant>,
}

impl<'a> Feeder<'a> {
    fn new(watchdog: Option<&'a Watchdog>) -> Feeder<'a> {
        let watchdog = watchdog.map(|w| {
            let mut ticks = tokio::time::interval(w.interval);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            (w, ticks)
        });
        Feeder {
            watchdog,
            stuck_logged: None,
        }
    }

    /// Waits for the next feeding time and feeds (never resolves without a watchdog).
    /// `run_started`: when the run being awaited started, if one is.
    async fn tick(&mut self, run_started: Option<tokio::time::Instant>) {
        let Some((w, ticks)) = &mut self.watchdog else {
            return std::future::pending().await;
        };
        ticks.tick().await;
        match run_started {
            Some(t0) if t0.elapsed() >= w.stuck_after => {
                if self.stuck_logged != Some(t0) {
                    self.stuck_logged = Some(t0);
                    tracing::error!(stuck_after_seconds = w.stuck_after.as_secs(), "The run has not finished in time; it is considered stuck and the watchdog is no longer fed (systemd restarts payrecon).");
                }
            }
            _ => w.feed(),
        }
    }
}

#[cfg(test)]
mod tests;
