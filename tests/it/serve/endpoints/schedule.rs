//! Runs on serve's schedule: a chain down counts failed runs and no success, a last success
//! older than an interval runs at start, and balance checks keep their own cron.

use std::time::Duration;

use crate::cli::harness::World;
use crate::serve::{series, Served, EVERY_SECOND, NEVER};
use crate::support::wait_until;

use super::assert_bounded_labels;

/// docs/reference.md §4: a chain that cannot be read fails every scheduled run's sweep: the
/// failed counter moves, the last success stays 0, which is what `PayreconRunsFailing` fires on
/// (grafana/alerts/payrecon.rules.test.yml holds the same series with the chain down).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chain_down_counts_failed_runs_and_no_success() {
    let w = World::sqlite().await;
    let config = crate::cli::codes::chains_down(&w, EVERY_SECOND).await;
    let mut s = Served::start(&config).await;
    let failed = |m: &str| {
        series(
            m,
            "payrecon_runs_total",
            &[("provider", "chain"), ("outcome", "failed")],
        )
    };
    wait_until("two failed runs", Duration::from_secs(30), || async {
        failed(&s.metrics().await).is_some_and(|v| v >= 2.0)
    })
    .await;
    let m = s.metrics().await;
    let chain = [("provider", "chain")];
    let ok = [("provider", "chain"), ("outcome", "ok")];
    assert_eq!(series(&m, "payrecon_runs_total", &ok), Some(0.0), "{m}");
    let last = series(&m, "payrecon_last_success_timestamp_seconds", &chain);
    assert_eq!(last, Some(0.0), "{m}");
    // The run's own steps did their work: their entry succeeds.
    let run = [("provider", "run"), ("outcome", "ok")];
    assert!(
        series(&m, "payrecon_runs_total", &run).is_some_and(|v| v >= 2.0),
        "{m}"
    );
    assert_bounded_labels(&m);
    // serve says when it runs next: at start and after each run.
    let said = s.proc.stderr().matches("Next run at ").count();
    assert!(said >= 3, "{}", s.proc.stderr());
    let (code, _) = s.stop("TERM", Duration::from_secs(30)).await;
    assert_eq!(code, Some(0));
}

/// A `serve` whose last successful run is older than one schedule interval (here a yearly
/// schedule, and a success two years ago: a daemon stopped that long) runs at start instead
/// of waiting for the next tick; a recent success waits (exceptions::beside_serve).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_serve_whose_last_success_is_older_than_an_interval_runs_at_start() {
    let w = World::sqlite().await;
    let config = w.config(NEVER);
    let long_ago = jiff::Timestamp::now() - jiff::SignedDuration::from_hours(2 * 366 * 24);
    w.store
        .start_run(&payrecon::store::RunRow {
            id: "old".into(),
            trigger: "schedule".into(),
            started_at: long_ago,
            since: long_ago,
            until: long_ago,
        })
        .await
        .unwrap();
    let done = payrecon::store::RunTotals {
        status: "ok".into(),
        checked: 0,
        gaps: 0,
        applied: 0,
        resends_requested: 0,
        error: None,
        providers: Some(",sandbox,chain,".into()),
    };
    w.store.finish_run("old", long_ago, &done).await.unwrap();
    let mut s = Served::start(&config).await;
    let ok = |m: &str| {
        series(
            m,
            "payrecon_runs_total",
            &[("provider", "chain"), ("outcome", "ok")],
        )
    };
    wait_until("a run at start", Duration::from_secs(30), || async {
        ok(&s.metrics().await).is_some_and(|v| v >= 1.0)
    })
    .await;
    assert!(
        s.proc.stderr().contains("running now"),
        "{}",
        s.proc.stderr()
    );
    let (code, _) = s.stop("TERM", Duration::from_secs(30)).await;
    assert_eq!(code, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_checks_balances_on_their_own_cron() {
    // The run schedule never fires; the balance check's does, every second.
    let w = World::sqlite().await;
    let config = w.config(&format!("{NEVER}[balances]\ncron = \"* * * * * *\"\n"));
    let mut s = Served::start(&config).await;
    let checked = |m: &str| {
        series(
            m,
            "payrecon_runs_total",
            &[("provider", "balances"), ("outcome", "ok")],
        )
    };
    wait_until(
        "a scheduled balance check",
        Duration::from_secs(30),
        || async { checked(&s.metrics().await).is_some_and(|v| v >= 1.0) },
    )
    .await;
    let m = s.metrics().await;
    let last = series(
        &m,
        "payrecon_last_balance_check_timestamp_seconds",
        &[("chain", "ethereum")],
    );
    assert!(last.is_some_and(|t| t > 1.7e9), "{m}");
    assert_eq!(
        series(
            &m,
            "payrecon_runs_total",
            &[("provider", "sandbox"), ("outcome", "ok")]
        ),
        Some(0.0),
        "the run schedule did not fire: {m}"
    );
    let (code, _) = s.stop("TERM", Duration::from_secs(30)).await;
    assert_eq!(code, Some(0));
    assert!(
        s.proc
            .stderr()
            .contains("Scheduled balance check finished."),
        "{}",
        s.proc.stderr()
    );
}
