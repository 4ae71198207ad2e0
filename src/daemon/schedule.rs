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

pub fn parse_cron(expr: &str) -> Result<Cron, String> {
    Cron::new(expr)
        .with_seconds_required()
        .parse()
        .map_err(|e| format!("schedule.cron: {e}"))
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
        let now = clock.now();
        let mut skipped = 0u64;
        let mut t = next;
        loop {
            match cron.find_next_occurrence(&t, false) {
                Ok(n) if n <= now => {
                    skipped += 1;
                    t = n;
                }
                Ok(n) => {
                    next = n;
                    break;
                }
                Err(e) => {
                    tracing::error!(error = %e, "The cron expression has no next occurrence; the schedule stops.");
                    return runs;
                }
            }
        }
        if skipped > 0 {
            tracing::warn!(
                skipped,
                "Ticks came while a run was still going; they were skipped, not queued."
            );
        }
        tracing::info!(next_run = %next, "Next run at {next}.");
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
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    fn clock() -> TokioClock {
        TokioClock {
            base: "2026-11-29T00:00:00Z".parse().unwrap(),
            start: tokio::time::Instant::now(),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn runs_at_each_tick_and_stops_on_shutdown() {
        let cron = parse_cron("*/10 * * * * *").unwrap();
        let (tx, rx) = watch::channel(false);
        let count = Arc::new(AtomicU64::new(0));
        let c = count.clone();
        let clock = clock();
        let handle = tokio::spawn(async move {
            run_loop(&cron, &clock, rx, || {
                c.fetch_add(1, Ordering::SeqCst);
                async {}
            })
            .await
        });
        tokio::time::sleep(Duration::from_secs(65)).await;
        assert_eq!(count.load(Ordering::SeqCst), 6); // ticks at 10, 20, ..., 60 s
        tx.send(true).unwrap();
        assert_eq!(handle.await.unwrap(), 6);
    }

    #[tokio::test(start_paused = true)]
    async fn a_tick_during_a_run_is_skipped_not_queued() {
        let cron = parse_cron("*/10 * * * * *").unwrap();
        let (tx, rx) = watch::channel(false);
        let in_flight = Arc::new(AtomicU64::new(0));
        let max_in_flight = Arc::new(AtomicU64::new(0));
        let count = Arc::new(AtomicU64::new(0));
        let (f, m, c) = (in_flight.clone(), max_in_flight.clone(), count.clone());
        let clock = clock();
        let handle = tokio::spawn(async move {
            run_loop(&cron, &clock, rx, move || {
                let (f, m, c) = (f.clone(), m.clone(), c.clone());
                async move {
                    let now = f.fetch_add(1, Ordering::SeqCst) + 1;
                    m.fetch_max(now, Ordering::SeqCst);
                    c.fetch_add(1, Ordering::SeqCst);
                    // Each run takes 25 s: the ticks at +10 and +20 s after its start pass.
                    tokio::time::sleep(Duration::from_secs(25)).await;
                    f.fetch_sub(1, Ordering::SeqCst);
                }
            })
            .await
        });
        tokio::time::sleep(Duration::from_secs(95)).await;
        tx.send(true).unwrap();
        handle.await.unwrap();
        assert_eq!(max_in_flight.load(Ordering::SeqCst), 1);
        // Runs start at 10, 40 (next tick after 35), 70 s: three, not nine.
        assert_eq!(count.load(Ordering::SeqCst), 3);
    }

    /// The loop at each minute, a watchdog fed every 10 s that gives up on a run after
    /// 30 min, and `job`; returns the feed counter and the loop's task.
    fn fed_loop<Fut>(
        job: impl FnMut() -> Fut + Send + 'static,
    ) -> (
        Arc<AtomicU64>,
        tokio::task::JoinHandle<u64>,
        watch::Sender<bool>,
    )
    where
        Fut: Future<Output = ()> + Send + 'static,
    {
        let feeds = Arc::new(AtomicU64::new(0));
        let f = feeds.clone();
        let watchdog = Watchdog::new(
            Duration::from_secs(10),
            Duration::from_secs(1800),
            move || {
                f.fetch_add(1, Ordering::SeqCst);
            },
        );
        let cron = parse_cron("0 * * * * *").unwrap();
        let (tx, rx) = watch::channel(false);
        let clock = clock();
        let handle = tokio::spawn(async move {
            run_loop_fed(&cron, &clock, rx, Some(&watchdog), false, job).await
        });
        (feeds, handle, tx)
    }

    async fn feeds_during(feeds: &AtomicU64, secs: u64) -> u64 {
        let before = feeds.load(Ordering::SeqCst);
        tokio::time::sleep(Duration::from_secs(secs)).await;
        feeds.load(Ordering::SeqCst) - before
    }

    #[tokio::test(start_paused = true)]
    async fn sdnotify_watchdog_is_fed_by_an_idle_loop_and_through_a_long_healthy_run() {
        // The first run (at +60 s) takes 20 minutes.
        let (feeds, handle, tx) = fed_loop(|| tokio::time::sleep(Duration::from_secs(1200)));
        assert_eq!(
            feeds_during(&feeds, 55).await,
            6,
            "idle: every 10 s from the start"
        );
        // Inside the run: still fed every 10 s.
        tokio::time::sleep(Duration::from_secs(300)).await;
        assert_eq!(feeds_during(&feeds, 600).await, 60, "during a 20 min run");
        tx.send(true).unwrap();
        handle.await.unwrap();
        let after = feeds.load(Ordering::SeqCst);
        tokio::time::sleep(Duration::from_secs(600)).await;
        assert_eq!(
            feeds.load(Ordering::SeqCst),
            after,
            "a stopped loop feeds nothing"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn sdnotify_watchdog_is_no_longer_fed_by_a_stuck_loop() {
        // The first run never returns (an await nothing will wake).
        let (feeds, handle, _tx) = fed_loop(std::future::pending::<()>);
        // Fed while the run is young (it starts at +60 s)...
        tokio::time::sleep(Duration::from_secs(605)).await;
        assert_eq!(feeds_during(&feeds, 600).await, 60, "a young run is fed");
        // ...and no longer once it has lasted 30 minutes: systemd then restarts payrecon.
        tokio::time::sleep(Duration::from_secs(900)).await;
        assert_eq!(
            feeds_during(&feeds, 3600).await,
            0,
            "a stuck run is not fed"
        );
        assert!(!handle.is_finished());
        handle.abort();
    }
}
