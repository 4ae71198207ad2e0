//! The serve loop: sleep until the next cron tick, run, repeat. Single-flight by construction
//! (the run is awaited inline): ticks that pass while a run is going are skipped and logged,
//! never queued. Time comes from a `Clock`, so tests drive it with `tokio::time::pause()`.

use std::future::Future;

use chrono::{DateTime, Utc};
use croner::Cron;
use tokio::sync::watch;

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
    mut shutdown: watch::Receiver<bool>,
    mut job: F,
) -> u64
where
    C: Clock,
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    let mut runs = 0u64;
    let mut next = match cron.find_next_occurrence(&clock.now(), false) {
        Ok(t) => t,
        Err(e) => {
            tracing::error!(error = %e, "The cron expression has no next occurrence; the schedule stops.");
            return runs;
        }
    };
    loop {
        if *shutdown.borrow() {
            return runs;
        }
        let wait = (next - clock.now()).to_std().unwrap_or_default();
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = shutdown.changed() => continue,
        }
        if clock.now() < next {
            continue;
        }
        runs += 1;
        tracing::info!(tick = %next, "Scheduled run starting.");
        job().await;
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
}
