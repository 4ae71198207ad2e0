use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::config::parse_cron;

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
    let handle =
        tokio::spawn(
            async move { run_loop_fed(&cron, &clock, rx, Some(&watchdog), false, job).await },
        );
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
