//! /metrics: every series exported at zero before the first run, and a scheduled run that
//! applies and moves them; every label value bounded.

use std::time::Duration;

use crate::serve::{series, world_with_payments, Served, EVERY_SECOND, NEVER};
use crate::support::wait_until;
use payrecon_testkit::inspect::Inspect;

use super::assert_bounded_labels;

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
