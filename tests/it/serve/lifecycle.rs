//! Graceful SIGTERM/SIGINT (idle and mid-run), single-flight scheduling, and a manual
//! `payrecon run` beside `serve` on the same database (SQLite and PostgreSQL).

use std::time::Duration;

use sqlx::Row;

use super::{world_with_payments, Served, EVERY_SECOND, NEVER};
use crate::cli::harness::{payrecon, scalar, World};
use crate::support::wait_until;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_and_sigint_exit_0_when_idle() {
    let (_w, config) = world_with_payments(0, NEVER).await;
    for sig in ["TERM", "INT"] {
        let mut s = Served::start(&config).await;
        let (code, took) = s.stop(sig, Duration::from_secs(10)).await;
        assert_eq!(code, Some(0), "SIG{sig}: {}", s.proc.stderr());
        assert!(took < Duration::from_secs(3), "SIG{sig} took {took:?}");
        assert!(
            s.proc.stderr().contains("payrecon stopped"),
            "{}",
            s.proc.stderr()
        );
        eprintln!("idle: SIG{sig} to exit in {took:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_mid_run_lets_the_run_finish_then_exits_0() {
    for sig in ["TERM", "INT"] {
        let (w, config) = world_with_payments(3, EVERY_SECOND).await;
        // Each provider request takes 700 ms: a run takes a few seconds.
        w.cg.set_latency(Duration::from_millis(700));
        let mut s = Served::start(&config).await;
        wait_until("a run in progress", Duration::from_secs(20), || async {
            w.cg.requests() > 0
        })
        .await;
        let (code, took) = s.stop(sig, Duration::from_secs(30)).await;
        assert_eq!(code, Some(0), "SIG{sig}: {}", s.proc.stderr());
        eprintln!("mid-run: SIG{sig} to exit in {took:?}");
        // The run was allowed to finish: its row is closed and its work is done.
        let runs = w.count("payrecon_runs").await;
        assert_eq!(runs, 1, "no new run after the signal");
        let pool = sqlx::SqlitePool::connect(&w.db_url).await.unwrap();
        let status: Option<String> = sqlx::query_scalar("SELECT status FROM payrecon_runs")
            .fetch_one(&pool)
            .await
            .unwrap();
        assert_eq!(status.as_deref(), Some("ok"), "{}", s.proc.stderr());
        assert_eq!(w.count("payrecon_transitions").await, 3);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_grace_bounds_the_wait_for_a_slow_run() {
    let extra = format!("{EVERY_SECOND}[reconcile]\nshutdown_grace = \"1s\"\n");
    let (w, config) = world_with_payments(1, &extra).await;
    // A request takes 4 s (within the 5 s provider timeout): a run takes 10 s or more.
    w.cg.set_latency(Duration::from_secs(4));
    let mut s = Served::start(&config).await;
    wait_until("a run in progress", Duration::from_secs(20), || async {
        w.cg.requests() > 0
    })
    .await;
    let (code, took) = s.stop("TERM", Duration::from_secs(15)).await;
    assert_eq!(code, Some(0), "{}", s.proc.stderr());
    assert!(
        took < Duration::from_secs(4),
        "1 s grace, exit took {took:?}"
    );
    assert!(s.proc.stderr().contains("grace"), "{}", s.proc.stderr());
    eprintln!("grace 1s: SIGTERM to exit in {took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ticks_during_a_run_are_skipped_and_runs_never_overlap() {
    let (w, config) = world_with_payments(2, EVERY_SECOND).await;
    w.cg.set_latency(Duration::from_millis(800));
    let mut s = Served::start(&config).await;
    let pool = sqlx::SqlitePool::connect(&w.db_url).await.unwrap();
    let finished = || async {
        sqlx::query_scalar::<_, i64>(
            "SELECT COUNT(*) FROM payrecon_runs WHERE finished_at IS NOT NULL",
        )
        .fetch_one(&pool)
        .await
        .unwrap()
    };
    wait_until("three finished runs", Duration::from_secs(60), || async {
        finished().await >= 3
    })
    .await;
    let (code, _) = s.stop("TERM", Duration::from_secs(30)).await;
    assert_eq!(code, Some(0));
    let log = s.proc.stderr();
    assert!(log.contains("skipped"), "no skipped tick logged:\n{log}");
    let rows = sqlx::query("SELECT started_at, finished_at FROM payrecon_runs ORDER BY started_at")
        .fetch_all(&pool)
        .await
        .unwrap();
    let spans: Vec<(String, String)> = rows
        .iter()
        .map(|r| (r.get::<String, _>(0), r.get::<String, _>(1)))
        .collect();
    assert!(spans.len() >= 3);
    for pair in spans.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        assert!(a.0 <= a.1, "{a:?}");
        assert!(a.1 <= b.0, "runs overlap: {a:?} then {b:?}");
    }
    // Each run took longer than a tick: fewer runs than seconds elapsed.
    let first: jiff::Timestamp = spans[0].0.parse().unwrap();
    let last: jiff::Timestamp = spans.last().unwrap().1.parse().unwrap();
    let secs = last.duration_since(first).as_secs();
    assert!(
        (spans.len() as i64) < secs,
        "{} runs in {secs} s",
        spans.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manual_run_beside_serve_applies_nothing_twice() {
    let (_guard, urls) = crate::support::all_backends().await;
    for url in urls {
        let w = World::new(payrecon_testkit::tmp::dir().unwrap(), url.clone()).await;
        w.missing_payments(1, 300).await;
        for i in [1, 50, 100, 150, 200] {
            assert!(w.cg.mark_failed("ethereum", &format!("n-{i}")));
        }
        let config = w.config(&format!("{EVERY_SECOND}[reconcile]\nbatch_size = 20\n"));
        // 15 batches of at least one 100 ms chain round trip: each run takes seconds, so
        // the manual run starts while serve's first run is going.
        w.chain.set_latency(Duration::from_millis(100));
        let mut s = Served::start(&config).await;
        let unfinished = "SELECT COUNT(*) FROM payrecon_runs WHERE finished_at IS NULL";
        wait_until("serve's first run", Duration::from_secs(20), || async {
            scalar(&url, unfinished).await > 0
        })
        .await;
        let out = payrecon(&config, &["run", "--format", "json"]).await;
        out.assert_code(0);
        let manual = out.json();
        // Let serve complete a run after the manual one too.
        let by_schedule = "SELECT COUNT(*) FROM payrecon_runs \
                           WHERE \"trigger\" = 'schedule' AND status = 'ok'";
        let before = scalar(&url, by_schedule).await;
        wait_until("another scheduled run", Duration::from_secs(60), || async {
            scalar(&url, by_schedule).await > before
        })
        .await;
        let (code, _) = s.stop("TERM", Duration::from_secs(30)).await;
        assert_eq!(code, Some(0));

        let dup = "SELECT COUNT(*) FROM (SELECT order_id, to_state FROM payrecon_transitions \
                   GROUP BY order_id, to_state HAVING COUNT(*) > 1) d";
        assert_eq!(scalar(&url, dup).await, 0, "{url}");
        assert_eq!(w.count("payrecon_transitions").await, 300, "{url}");
        let finals = "SELECT COUNT(*) FROM orders WHERE state = 'final'";
        assert_eq!(scalar(&url, finals).await, 300, "{url}");
        let applied = "SELECT CAST(COALESCE(SUM(applied), 0) AS BIGINT) FROM payrecon_runs";
        assert_eq!(
            scalar(&url, applied).await,
            300,
            "{url}: runs claim more than applied"
        );
        let mut retries = w.cg.retries();
        assert_eq!(
            retries.len(),
            5,
            "{url}: one resend per failed notification"
        );
        retries.sort();
        retries.dedup();
        assert_eq!(retries.len(), 5, "{url}");
        // Both made progress side by side (or the manual run found it all done).
        let manual_applied = manual["totals"]["applied"].as_u64().unwrap();
        eprintln!("{url}: manual run applied {manual_applied}");
        assert!(manual_applied < 300, "{url}: serve's run applied nothing");
    }
}
