//! PostgreSQL restarted (`pg_ctl restart -m fast`) and then stopped for a while under a
//! running `payrecon serve` that runs every second: the process stays up, `/healthz` stays
//! 200, `/readyz` turns 503 while the database is gone and 200 once it is back, the runs
//! that cannot reach the database are reported failed (`payrecon_runs_total{outcome="failed"}`
//! and an error log line: such a run has no row, as its row could not be written), and the
//! first run after the outage reconciles a payment the provider listed only after it. A
//! webhook delivery during the outage is answered 503 (not stored, so not acknowledged) and
//! its retry after the outage is applied. A fast restart fails at most the run in flight:
//! pooled connections it cut are not handed to later runs.

use std::time::{Duration, Instant};

use payrecon::webhook::{sign, Encoding};

use super::cluster::PrivatePg;
use super::{assert_alive, runs, status_of};
use crate::cli::harness::{scalar, World};
use crate::serve::{Served, EVERY_SECOND};
use crate::support::wait_until;

/// The `sandbox` provider's webhook secret.
const SECRET: &str = "whsec_depfaults_outage_0c77d2";
const P100_FINAL: &str =
    "SELECT COUNT(*) FROM orders WHERE order_ref = 'P-100' AND state = 'final'";
const P101_FINAL: &str =
    "SELECT COUNT(*) FROM orders WHERE order_ref = 'P-101' AND state = 'final'";

/// Waits until `payrecon_runs_total{sandbox, outcome}` is above `above`; returns the value.
async fn runs_above(s: &Served, outcome: &str, above: f64, within: Duration) -> f64 {
    let deadline = Instant::now() + within;
    loop {
        let v = runs(s, outcome).await;
        if v > above {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "no {outcome} run within {within:?} (still {v}):\n{}",
            s.proc.stderr()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// POSTs a signed Chaingateway delivery to `sandbox`: its status (None: no answer) and how
/// long the answer took.
async fn deliver(
    http: &reqwest::Client,
    base: &str,
    sig: &str,
    body: String,
) -> (Option<u16>, Duration) {
    let t0 = Instant::now();
    let r = http
        .post(format!("{base}/webhooks/sandbox"))
        .header("content-type", "application/json")
        .header("X-Signature", sig)
        .body(body)
        .timeout(Duration::from_secs(30))
        .send()
        .await;
    (r.ok().map(|r| r.status().as_u16()), t0.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn depfaults_postgres_restart_and_outage_under_serve() {
    let Some(pg) = PrivatePg::start() else {
        return;
    };
    let w = World::new(payrecon_testkit::tmp::dir().unwrap(), pg.url.clone()).await;
    w.missing_payments(1, 2).await;
    let config = w.config(&format!("webhook_secret = \"{SECRET}\"\n{EVERY_SECOND}"));
    let mut s = Served::start(&config).await;
    let http = reqwest::Client::new();
    let readyz = format!("{}/readyz", s.base);
    let healthz = format!("{}/healthz", s.base);

    let first = runs_above(&s, "ok", 0.0, Duration::from_secs(30)).await;
    assert_eq!(
        scalar(&pg.url, "SELECT COUNT(*) FROM orders WHERE state = 'final'").await,
        2
    );

    // (a) A fast restart: every pooled connection is cut.
    let failed_at_restart = runs(&s, "failed").await;
    let took = pg.restart_fast().expect("pg_ctl restart");
    let t_back = Instant::now();
    let ok_before = runs(&s, "ok").await.max(first);
    runs_above(&s, "ok", ok_before, Duration::from_secs(60)).await;
    let restart_to_ok = t_back.elapsed();
    assert_alive(&mut s, "after a restart");
    assert_eq!(status_of(&http, &readyz).await, Some(200));
    let failed_by_restart = runs(&s, "failed").await - failed_at_restart;
    // Only a run in flight at the restart may fail; none after it (stale pooled connections).
    assert!(
        failed_by_restart <= 1.0,
        "{failed_by_restart} runs failed across a restart:\n{}",
        s.proc.stderr()
    );
    eprintln!(
        "pg restart -m fast: took {took:?}; first ok run {restart_to_ok:?} after it; \
         {failed_by_restart} run(s) failed across it"
    );

    // (b) An outage. The payment exists on chain and its order in the ledger now; the
    // provider lists it only after the outage.
    let record = w.cg_notification(100).await;
    // And a webhook delivery for P-101, posted during the outage, then again after it.
    let delivery = w.cg_notification(101).await;
    let txid = delivery["txid"].as_str().unwrap().to_string();
    let sig = sign(SECRET, txid.as_bytes(), Encoding::Base64);
    let failed_before = runs(&s, "failed").await;
    pg.stop_fast().expect("pg_ctl stop");
    let down_at = Instant::now();
    wait_until(
        "/readyz 503 while the database is down",
        Duration::from_secs(30),
        || async { status_of(&http, &readyz).await == Some(503) },
    )
    .await;
    let to_503 = down_at.elapsed();
    assert_eq!(
        status_of(&http, &healthz).await,
        Some(200),
        "healthz during the outage"
    );
    let post = deliver(&http, &s.base, &sig, delivery.to_string());
    let (failed, (answer, answered_in)) = tokio::join!(
        runs_above(&s, "failed", failed_before, Duration::from_secs(60)),
        post
    );
    assert_eq!(
        answer,
        Some(503),
        "a delivery not stored is not acknowledged"
    );
    let to_failed = down_at.elapsed();
    assert_alive(&mut s, "during the outage");
    assert_eq!(status_of(&http, &readyz).await, Some(503));
    assert_eq!(status_of(&http, &healthz).await, Some(200));
    let log = s.proc.stderr();
    assert!(
        log.contains("Scheduled run could not start")
            || log.contains("Scheduled run finished with a failed provider"),
        "no failed run logged:\n{log}"
    );

    pg.start_server()
        .unwrap_or_else(|e| panic!("pg_ctl start: {e}\n{}", pg.server_log()));
    let outage = down_at.elapsed();
    let up_at = Instant::now();
    w.cg.add_notification("ethereum", record);
    wait_until(
        "/readyz 200 after the outage",
        Duration::from_secs(30),
        || async { status_of(&http, &readyz).await == Some(200) },
    )
    .await;
    let to_ready = up_at.elapsed();
    let ok_at_start = runs(&s, "ok").await;
    runs_above(&s, "ok", ok_at_start, Duration::from_secs(60)).await;
    let to_ok = up_at.elapsed();
    wait_until(
        "P-100 reconciled after the outage",
        Duration::from_secs(30),
        || async { scalar(&pg.url, P100_FINAL).await == 1 },
    )
    .await;
    let to_reconciled = up_at.elapsed();
    let (again, _) = deliver(&http, &s.base, &sig, delivery.to_string()).await;
    assert_eq!(
        again,
        Some(200),
        "the provider's retry after the outage is stored"
    );
    wait_until(
        "P-101 applied from the retried delivery",
        Duration::from_secs(30),
        || async { scalar(&pg.url, P101_FINAL).await == 1 },
    )
    .await;
    assert_alive(&mut s, "after the outage");
    assert_eq!(
        scalar(&pg.url, "SELECT COUNT(*) FROM payrecon_transitions").await,
        4,
        "one transition per order, none twice"
    );
    let after_ok = "SELECT COUNT(*) FROM payrecon_runs WHERE status = 'ok' AND applied = 1";
    assert!(
        scalar(&pg.url, after_ok).await >= 1,
        "the run that applied P-100 is recorded ok"
    );

    let unfinished = scalar(
        &pg.url,
        "SELECT COUNT(*) FROM payrecon_runs WHERE finished_at IS NULL",
    )
    .await;
    let (code, stop_took) = s.stop("TERM", Duration::from_secs(30)).await;
    assert_eq!(code, Some(0), "{}", s.proc.stderr());
    let log = s.proc.stderr();
    assert!(!log.contains("panicked"), "{log}");
    assert!(!log.contains(SECRET), "the webhook secret in the log");
    eprintln!(
        "pg outage: {outage:?} down; readyz 503 {to_503:?} after the stop; {} failed run(s), \
         the first {to_failed:?} after the stop; a delivery answered 503 in {answered_in:?}; \
         {unfinished} run row(s) left unfinished; readyz 200 {to_ready:?} after pg_ctl start; \
         first ok run {to_ok:?} after it; P-100 final {to_reconciled:?} after it; SIGTERM exit \
         in {stop_took:?}",
        failed - failed_before
    );
}
