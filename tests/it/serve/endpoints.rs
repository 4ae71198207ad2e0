//! /healthz, /readyz, /metrics; a scheduled run.

use std::time::Duration;

use super::{series, world_with_payments, Served, EVERY_SECOND, NEVER};
use crate::cli::harness::World;
use crate::support::wait_until;
use payrecon_testkit::inspect::Inspect;

const METRICS: [&str; 22] = [
    "payrecon_runs_total",
    "payrecon_run_duration_seconds",
    "payrecon_last_success_timestamp_seconds",
    "payrecon_payments_checked_total",
    "payrecon_gaps_total",
    "payrecon_gap_ratio",
    "payrecon_transitions_applied_total",
    "payrecon_transitions_refused_total",
    "payrecon_resends_total",
    "payrecon_provider_requests_total",
    "payrecon_records_rejected_total",
    "payrecon_chain_head_block",
    "payrecon_events_total",
    "payrecon_events_pending",
    "payrecon_events_oldest_pending_seconds",
    "payrecon_events_dead",
    "payrecon_list_full_scans_total",
    "payrecon_orders_held",
    "payrecon_database_retries_total",
    "payrecon_balances_checked_total",
    "payrecon_balance_mismatched_addresses",
    "payrecon_last_balance_check_timestamp_seconds",
];

/// Every label value is a bounded enum or a configured name: never a hash or an address.
fn assert_bounded_labels(text: &str) {
    let allowed = [
        "sandbox",
        "chain",
        // The run's own steps (the webhook inbox, the exceptions): docs/reference.md §4.
        "run",
        // The balance check (docs/operations.md, "Balances"), a run of its own.
        "balances",
        "tron",
        "bitcoin",
        "ethereum",
        "ok",
        "failed",
        "missing",
        "lagging",
        "failed_notification",
        "amount_mismatch",
        "unknown_payment",
        "reorged",
        "late_payment",
        "unexpected_outflow",
        "balance_mismatch",
        "unpaid",
        "pending",
        "confirmed",
        "final",
        "backwards",
        "duplicate",
        "requested",
        "skipped",
        "2xx",
        "4xx",
        "5xx",
        "error",
        // payrecon_webhooks_total: outcomes, and "unknown" for a provider not configured.
        "unknown",
        "accepted",
        "bad_signature",
        "bad_request",
        "too_large",
        "unknown_provider",
        // payrecon_events_total (docs/reference.md §5).
        "delivered",
        "dead",
        // payrecon_orders_held (docs/reference.md §5).
        "underpaid",
        "late",
    ];
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        assert!(
            !line.contains("0x"),
            "a hash or address in /metrics: {line}"
        );
        let Some((_, rest)) = line.split_once('{') else {
            continue;
        };
        let labels = rest.split_once('}').unwrap().0;
        for kv in labels.split(',') {
            let (k, v) = kv.split_once('=').unwrap();
            let v = v.trim_matches('"');
            if k == "le" {
                continue;
            }
            assert!(
                allowed.contains(&v),
                "unexpected label value {k}={v:?} in {line}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_are_all_exported_at_zero_before_the_first_run() {
    let (w, config) = world_with_payments(1, NEVER).await;
    let mut s = Served::start(&config).await;
    assert_eq!(s.get("/healthz").await.0, 200);
    assert_eq!(s.get("/readyz").await.0, 200);
    assert_eq!(s.get("/nope").await.0, 404);
    let m = s.metrics().await;
    for name in METRICS {
        assert!(
            m.lines().any(|l| l.starts_with(name)),
            "{name} missing from /metrics:\n{m}"
        );
    }
    for provider in ["sandbox", "chain"] {
        for outcome in ["ok", "failed"] {
            let v = series(
                &m,
                "payrecon_runs_total",
                &[("provider", provider), ("outcome", outcome)],
            );
            assert_eq!(v, Some(0.0), "runs_total {provider} {outcome}:\n{m}");
        }
        assert_eq!(
            series(&m, "payrecon_gap_ratio", &[("provider", provider)]),
            Some(0.0)
        );
        assert_eq!(
            series(
                &m,
                "payrecon_run_duration_seconds_count",
                &[("provider", provider)]
            ),
            Some(0.0),
            "{m}"
        );
    }
    // The run's own steps (`run`): their outcome and last success from the start too.
    for outcome in ["ok", "failed"] {
        let v = series(
            &m,
            "payrecon_runs_total",
            &[("provider", "run"), ("outcome", outcome)],
        );
        assert_eq!(v, Some(0.0), "runs_total run {outcome}:\n{m}");
    }
    let last = series(
        &m,
        "payrecon_last_success_timestamp_seconds",
        &[("provider", "run")],
    );
    assert_eq!(last, Some(0.0), "{m}");
    for kind in [
        "missing",
        "lagging",
        "failed_notification",
        "amount_mismatch",
        "unknown_payment",
        "reorged",
        "late_payment",
    ] {
        let v = series(
            &m,
            "payrecon_gaps_total",
            &[
                ("provider", "sandbox"),
                ("chain", "ethereum"),
                ("kind", kind),
            ],
        );
        assert_eq!(v, Some(0.0), "gaps_total {kind}:\n{m}");
    }
    assert_eq!(
        series(
            &m,
            "payrecon_payments_checked_total",
            &[("provider", "sandbox"), ("chain", "ethereum")]
        ),
        Some(0.0)
    );
    assert_eq!(
        series(
            &m,
            "payrecon_transitions_applied_total",
            &[("provider", "sandbox"), ("from", "unpaid"), ("to", "final")]
        ),
        Some(0.0),
        "{m}"
    );
    assert_eq!(
        series(
            &m,
            "payrecon_transitions_refused_total",
            &[("provider", "sandbox"), ("reason", "backwards")]
        ),
        Some(0.0)
    );
    for outcome in ["requested", "skipped", "failed"] {
        assert_eq!(
            series(
                &m,
                "payrecon_resends_total",
                &[("provider", "sandbox"), ("outcome", outcome)]
            ),
            Some(0.0),
            "{m}"
        );
    }
    for status in ["2xx", "4xx", "5xx", "error"] {
        assert_eq!(
            series(
                &m,
                "payrecon_provider_requests_total",
                &[("provider", "sandbox"), ("status", status)]
            ),
            Some(0.0),
            "{m}"
        );
    }
    assert_eq!(
        series(
            &m,
            "payrecon_records_rejected_total",
            &[("provider", "sandbox")]
        ),
        Some(0.0)
    );
    assert_eq!(
        series(&m, "payrecon_chain_head_block", &[("chain", "ethereum")]),
        Some(0.0)
    );
    assert_bounded_labels(&m);
    assert_eq!(w.count("payrecon_runs").await, 0);
    let (code, took) = s.stop("TERM", Duration::from_secs(10)).await;
    assert_eq!(code, Some(0), "{}", s.proc.stderr());
    eprintln!("idle serve: SIGTERM to exit {took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scheduled_run_applies_and_moves_the_metrics() {
    let (w, config) = world_with_payments(2, EVERY_SECOND).await;
    w.failed_notification(9).await;
    let mut s = Served::start(&config).await;
    let ok = |m: &str| {
        series(
            m,
            "payrecon_runs_total",
            &[("provider", "sandbox"), ("outcome", "ok")],
        )
    };
    wait_until("a scheduled run", Duration::from_secs(30), || async {
        ok(&s.metrics().await).is_some_and(|v| v > 0.0)
    })
    .await;
    let m = s.metrics().await;
    for r in ["P-1", "P-2", "P-9"] {
        let o = w.store.order_by_ref(r).await.unwrap().unwrap();
        assert_eq!(o.state.as_str(), "final", "{r}");
    }
    assert_eq!(
        series(
            &m,
            "payrecon_transitions_applied_total",
            &[("provider", "sandbox"), ("from", "unpaid"), ("to", "final")]
        ),
        Some(3.0),
        "{m}"
    );
    assert_eq!(
        series(
            &m,
            "payrecon_gaps_total",
            &[
                ("provider", "sandbox"),
                ("chain", "ethereum"),
                ("kind", "missing")
            ]
        ),
        Some(3.0),
        "{m}"
    );
    assert_eq!(
        series(
            &m,
            "payrecon_resends_total",
            &[("provider", "sandbox"), ("outcome", "requested")]
        ),
        Some(1.0),
        "{m}"
    );
    assert!(
        series(
            &m,
            "payrecon_last_success_timestamp_seconds",
            &[("provider", "sandbox")]
        )
        .unwrap()
            > 1.7e9
    );
    assert_eq!(
        series(&m, "payrecon_chain_head_block", &[("chain", "ethereum")]),
        Some(w.chain.head() as f64)
    );
    assert!(
        series(
            &m,
            "payrecon_provider_requests_total",
            &[("provider", "sandbox"), ("status", "2xx")]
        )
        .unwrap()
            > 0.0
    );
    assert!(
        series(
            &m,
            "payrecon_run_duration_seconds_count",
            &[("provider", "sandbox")]
        )
        .unwrap()
            >= 1.0
    );
    assert_bounded_labels(&m);
    let runs = w.count("payrecon_runs").await;
    assert!(runs >= 1);
    assert_eq!(w.count("payrecon_transitions").await, 3);
    assert_eq!(
        w.cg.retries().len(),
        1,
        "one resend whatever the number of runs"
    );
    let (code, _) = s.stop("TERM", Duration::from_secs(30)).await;
    assert_eq!(code, Some(0));
    assert!(
        s.proc.stdout().is_empty(),
        "serve printed on stdout: {}",
        s.proc.stdout()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_is_503_when_the_database_is_gone() {
    let Some(url) = crate::support::pg_database_url().await else {
        return;
    };
    let name = url.rsplit('/').next().unwrap().to_string();
    let w = World::new(payrecon_testkit::tmp::dir().unwrap(), url.clone()).await;
    let config = w.config(NEVER);
    let mut s = Served::start(&config).await;
    assert_eq!(s.get("/readyz").await.0, 200);

    let t0 = std::time::Instant::now();
    let base = std::env::var("PAYRECON_TEST_PG_URL").unwrap();
    let admin = sqlx::PgPool::connect(&base).await.unwrap();
    // The database goes away: no new connections, every session ended. (Not DROP DATABASE:
    // its checkpoint takes tens of seconds on a busy test server.)
    for sql in [
        format!("ALTER DATABASE {name} ALLOW_CONNECTIONS false"),
        format!(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE datname = '{name}' AND pid <> pg_backend_pid()"
        ),
    ] {
        sqlx::query(&sql).execute(&admin).await.unwrap();
    }
    eprintln!("dropped after {:?}", t0.elapsed());
    wait_until("/readyz 503", Duration::from_secs(30), || async {
        s.get("/readyz").await.0 == 503
    })
    .await;
    eprintln!("503 after {:?}", t0.elapsed());
    let (_, body) = s.get("/readyz").await;
    assert!(body.contains("database"), "{body}");
    assert_eq!(s.get("/healthz").await.0, 200, "healthz stays 200");
    // The database is back: ready again.
    sqlx::query(&format!("ALTER DATABASE {name} ALLOW_CONNECTIONS true"))
        .execute(&admin)
        .await
        .unwrap();
    wait_until("/readyz 200 again", Duration::from_secs(30), || async {
        s.get("/readyz").await.0 == 200
    })
    .await;
    let (code, took) = s.stop("TERM", Duration::from_secs(20)).await;
    eprintln!("stopped after {:?} ({took:?})", t0.elapsed());
    assert_eq!(code, Some(0), "{}", s.proc.stderr());
}

/// A database that stops answering (every connection hangs, nothing is closed: a network
/// partition, a frozen server) is a 503 within Kubernetes' default probe timeout of 1 s, not a
/// probe that times out; ready again once it answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_answers_within_a_second_when_the_database_hangs() {
    use payrecon_testkit::pgproxy::{via, PgProxy};
    let Some(url) = crate::support::pg_url().await else {
        return;
    };
    let (_, upstream) = via(&url, "");
    let proxy = PgProxy::start(upstream).await;
    let w = World::new(
        payrecon_testkit::tmp::dir().unwrap(),
        via(&url, &proxy.addr).0,
    )
    .await;
    let config = w.config(NEVER);
    let mut s = Served::start(&config).await;
    assert_eq!(s.get("/readyz").await.0, 200);
    proxy.freeze(true);
    let probe = reqwest::Client::builder()
        .timeout(Duration::from_secs(1))
        .build()
        .unwrap();
    for i in 0..5 {
        let t0 = std::time::Instant::now();
        let answer = probe.get(format!("{}/readyz", s.base)).send().await;
        let status = answer.as_ref().map(|r| r.status().as_u16());
        eprintln!("probe {i}: {status:?} in {:?}", t0.elapsed());
        assert!(
            matches!(status, Ok(503)),
            "probe {i} while the database hangs: {answer:?}"
        );
    }
    assert_eq!(s.get("/healthz").await.0, 200, "healthz stays 200");
    proxy.freeze(false);
    proxy.cut(None).await;
    wait_until("/readyz 200 again", Duration::from_secs(30), || async {
        s.get("/readyz").await.0 == 200
    })
    .await;
    let (code, _) = s.stop("TERM", Duration::from_secs(20)).await;
    assert_eq!(code, Some(0), "{}", s.proc.stderr());
}

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
