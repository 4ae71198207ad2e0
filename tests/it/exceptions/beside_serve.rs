//! Decisions beside a running `serve` that reconciles every second on the same database: the
//! serve's runs open the exception and export its gauges; `accept` from another process goes
//! through, and the next run's gauges show it settled.

use std::time::Duration;

use payrecon::domain::State;

use super::{all, id, one, order, pay};
use crate::cli::harness::{payrecon, World};
use crate::serve::{series, Served, EVERY_SECOND};
use crate::support::wait_until;
use payrecon_testkit::inspect::Inspect;

async fn open_gauge(s: &Served, kind: &str) -> Option<f64> {
    series(
        &s.metrics().await,
        "payrecon_exceptions_open",
        &[("kind", kind)],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accept_beside_a_running_serve_goes_through_and_its_gauges_follow() {
    let (_guard, urls) = crate::support::all_backends().await;
    for url in urls {
        let w = World::new(payrecon_testkit::tmp::dir().unwrap(), url.clone()).await;
        let config = w.config(EVERY_SECOND);
        let held = order(&w, 1, 30).await;
        pay(&w, 1, 20, "n-1");
        let mut served = Served::start(&config).await;
        wait_until(
            "serve's run to open the exception",
            Duration::from_secs(30),
            || async { open_gauge(&served, "amount_mismatch").await == Some(1.0) },
        )
        .await;
        let x = id(one(&all(&config).await, "amount_mismatch", &held));
        let out = payrecon(
            &config,
            &[
                "exceptions",
                "accept",
                &x,
                "--reason",
                "paid by card",
                "--by",
                "fay",
            ],
        )
        .await;
        out.assert_code(0);
        assert_eq!(
            w.store.order_by_ref(&held).await.unwrap().unwrap().state,
            State::Final
        );
        wait_until(
            "serve's gauge to show it settled",
            Duration::from_secs(30),
            || async { open_gauge(&served, "amount_mismatch").await == Some(0.0) },
        )
        .await;
        let (code, _) = served.stop("TERM", Duration::from_secs(30)).await;
        assert_eq!(code, Some(0), "{url}: {}", served.proc.stderr());
        let xs = all(&config).await;
        assert_eq!(
            one(&xs, "amount_mismatch", &held)["resolved_by"],
            "fay",
            "{url}"
        );
    }
}

/// docs/reference.md §5: the gauges of what the database holds are read when `serve` starts: a
/// serve started after a run (a restart) shows the held order and its open exception before any
/// run of its own, on every database.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_serve_shows_what_the_database_holds_before_its_first_run() {
    let (_guard, urls) = crate::support::all_backends().await;
    for url in urls {
        let w = World::new(payrecon_testkit::tmp::dir().unwrap(), url.clone()).await;
        let config = w.config(crate::serve::NEVER);
        order(&w, 1, 30).await;
        pay(&w, 1, 20, "n-1");
        payrecon(&config, &["run"]).await.assert_code(0);
        let mut served = Served::start(&config).await;
        let m = served.metrics().await;
        let held = series(&m, "payrecon_orders_held", &[("reason", "underpaid")]);
        assert_eq!(held, Some(1.0), "{url}: {m}");
        assert_eq!(
            open_gauge(&served, "amount_mismatch").await,
            Some(1.0),
            "{url}"
        );
        let runs = series(
            &m,
            "payrecon_runs_total",
            &[("provider", "chain"), ("outcome", "ok")],
        );
        assert_eq!(runs, Some(0.0), "{url}: no run of its own yet");
        let (code, _) = served.stop("TERM", Duration::from_secs(30)).await;
        assert_eq!(code, Some(0), "{url}: {}", served.proc.stderr());
    }
}
