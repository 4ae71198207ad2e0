//! `database.max_connections = 1` (docs/reference.md §2) on SQLite and PostgreSQL: `serve` runs
//! every second over 200 missing payments (a run lasts seconds) while 50 signed webhook
//! deliveries, each posted twice at once, and `/readyz` polls arrive together. Nothing
//! deadlocks: every request is answered, every delivery is stored once and applied once, the
//! runs finish, and serve exits 0 on SIGTERM.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use payrecon::webhook::{sign, Encoding};
use payrecon_testkit::sandbox::config_toml;

use super::{assert_alive, status_of};
use crate::cli::harness::{scalar, World};
use crate::serve::{Served, EVERY_SECOND};
use crate::support::wait_until;

const SECRET: &str = "whsec_depfaults_pool_5e2a91";
/// Deliveries (distinct events, distinct orders); each is posted twice at once.
const DELIVERIES: u32 = 50;
/// Missing payments the scheduled runs reconcile meanwhile.
const MISSING: u32 = 200;
/// Orders of the deliveries are `P-<FIRST + i>`.
const FIRST: u32 = 1001;

const UNFINISHED: &str = "SELECT COUNT(*) FROM payrecon_runs WHERE finished_at IS NULL";

/// The sandbox config with a pool of one connection and a webhook secret for `sandbox`.
fn config(w: &World) -> std::path::PathBuf {
    let extra =
        format!("webhook_secret = \"{SECRET}\"\n{EVERY_SECOND}[reconcile]\nbatch_size = 20\n");
    let toml = config_toml(&w.db_url, &w.cg_url, &w.rpc_url, &extra).replacen(
        "[database]\n",
        "[database]\nmax_connections = 1\n",
        1,
    );
    assert!(toml.contains("max_connections = 1\n"));
    w.write("config.toml", &toml)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn depfaults_pool_of_one_connection_under_webhooks_a_run_and_readyz() {
    let (_guard, urls) = crate::support::all_backends().await;
    for url in urls {
        let backend = if url.starts_with("sqlite") {
            "sqlite"
        } else {
            "postgres"
        };
        let w = World::new(payrecon_testkit::tmp::dir().unwrap(), url.clone()).await;
        w.missing_payments(1, MISSING).await;
        let mut bodies = Vec::new();
        for i in FIRST..FIRST + DELIVERIES {
            let record = w.cg_notification(i).await;
            let txid = record["txid"].as_str().unwrap().to_string();
            bodies.push((
                sign(SECRET, txid.as_bytes(), Encoding::Base64),
                record.to_string(),
            ));
        }
        // Slow dependencies: a run lasts seconds, so the deliveries land during one.
        w.cg.set_latency(Duration::from_millis(500));
        w.chain.set_latency(Duration::from_millis(50));
        let cfg = config(&w);
        let mut s = Served::start(&cfg).await;
        wait_until("a run in progress", Duration::from_secs(30), || async {
            scalar(&url, UNFINISHED).await > 0
        })
        .await;

        // /readyz polled all along.
        let polling = Arc::new(AtomicBool::new(true));
        let poller = {
            let (polling, url) = (polling.clone(), format!("{}/readyz", s.base));
            tokio::spawn(async move {
                let http = reqwest::Client::new();
                let mut polls: Vec<(Option<u16>, Duration)> = Vec::new();
                while polling.load(Ordering::SeqCst) {
                    let t0 = Instant::now();
                    polls.push((status_of(&http, &url).await, t0.elapsed()));
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                polls
            })
        };

        let t0 = Instant::now();
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap();
        let posts = bodies.iter().chain(bodies.iter()).map(|(sig, body)| {
            let req = http
                .post(format!("{}/webhooks/sandbox", s.base))
                .header("content-type", "application/json")
                .header("X-Signature", sig)
                .body(body.clone());
            async move {
                let t = Instant::now();
                let r = req.send().await.map(|r| r.status().as_u16());
                (r.map_err(|e| e.to_string()), t.elapsed())
            }
        });
        let answers = futures::future::join_all(posts).await;
        let posted_in = t0.elapsed();
        let during_run = scalar(&url, UNFINISHED).await;
        assert!(
            during_run > 0,
            "{backend}: the deliveries were not answered during a run"
        );
        let slowest = answers.iter().map(|(_, d)| *d).max().unwrap();
        for (r, _) in &answers {
            assert_eq!(
                r.as_ref().ok(),
                Some(&200),
                "{backend}: {r:?}\n{}",
                s.proc.stderr()
            );
        }

        let webhook_final = format!(
            "SELECT COUNT(*) FROM orders WHERE state = 'final' AND order_ref IN ({})",
            (FIRST..FIRST + DELIVERIES)
                .map(|i| format!("'P-{i}'"))
                .collect::<Vec<_>>()
                .join(",")
        );
        wait_until(
            "every delivery applied",
            Duration::from_secs(90),
            || async { scalar(&url, &webhook_final).await == i64::from(DELIVERIES) },
        )
        .await;
        let applied_in = t0.elapsed();
        let all_final = "SELECT COUNT(*) FROM orders WHERE state = 'final'";
        wait_until(
            "the runs to reconcile every missing payment",
            Duration::from_secs(120),
            || async { scalar(&url, all_final).await == i64::from(MISSING + DELIVERIES) },
        )
        .await;
        let reconciled_in = t0.elapsed();
        let settled = status_of(&reqwest::Client::new(), &format!("{}/readyz", s.base)).await;
        assert_eq!(
            settled,
            Some(200),
            "{backend}: readyz once the work is done"
        );
        polling.store(false, Ordering::SeqCst);
        let polls = poller.await.unwrap();
        assert_alive(&mut s, "under a pool of one");
        let (code, stop_took) = s.stop("TERM", Duration::from_secs(60)).await;
        assert_eq!(code, Some(0), "{backend}: {}", s.proc.stderr());
        let log = s.proc.stderr();
        assert!(!log.contains("panicked"), "{backend}: {log}");
        assert!(
            !log.contains(SECRET),
            "{backend}: the webhook secret in the log"
        );

        // Every readyz poll answered, within its own 2 s bound plus slack.
        let unanswered = polls.iter().filter(|(st, _)| st.is_none()).count();
        assert_eq!(unanswered, 0, "{backend}: readyz polls without an answer");
        let ready = polls.iter().filter(|(st, _)| *st == Some(200)).count();
        let unready = polls.iter().filter(|(st, _)| *st == Some(503)).count();
        assert_eq!(ready + unready, polls.len(), "{backend}: {polls:?}");
        let slowest_poll = polls.iter().map(|(_, d)| *d).max().unwrap_or_default();
        assert!(
            slowest_poll < Duration::from_secs(4),
            "{backend}: readyz took {slowest_poll:?}"
        );

        // Stored once, applied once; the runs finished.
        let events = "SELECT COUNT(*) FROM payrecon_webhook_events WHERE provider = 'sandbox'";
        assert_eq!(
            scalar(&url, events).await,
            i64::from(DELIVERIES),
            "{backend}"
        );
        let pending = "SELECT COUNT(*) FROM payrecon_webhook_events WHERE processed_at IS NULL";
        assert_eq!(scalar(&url, pending).await, 0, "{backend}");
        let dup = "SELECT COUNT(*) FROM (SELECT order_id, to_state FROM payrecon_transitions \
                   GROUP BY order_id, to_state HAVING COUNT(*) > 1) d";
        assert_eq!(scalar(&url, dup).await, 0, "{backend}");
        let transitions = "SELECT COUNT(*) FROM payrecon_transitions";
        assert_eq!(
            scalar(&url, transitions).await,
            i64::from(MISSING + DELIVERIES),
            "{backend}"
        );
        let by_webhook = "SELECT COUNT(*) FROM payrecon_transitions WHERE source = 'webhook'";
        assert_eq!(
            scalar(&url, by_webhook).await,
            i64::from(DELIVERIES),
            "{backend}"
        );
        assert_eq!(
            scalar(&url, UNFINISHED).await,
            0,
            "{backend}: a run left unfinished"
        );
        let runs = scalar(&url, "SELECT COUNT(*) FROM payrecon_runs").await;
        let failed = scalar(
            &url,
            "SELECT COUNT(*) FROM payrecon_runs WHERE status <> 'ok'",
        )
        .await;
        assert_eq!(failed, 0, "{backend}: failed runs under a pool of one");
        eprintln!(
            "{backend} pool=1: {} deliveries answered 200 in {posted_in:?} (slowest {slowest:?}, \
             {during_run} run(s) unfinished right after); all applied {applied_in:?}, all \
             {} orders final {reconciled_in:?} after the first post; readyz {} polls: {ready} \
             200, {unready} 503, slowest {slowest_poll:?}; {runs} runs, 0 failed; SIGTERM exit \
             in {stop_took:?}",
            answers.len(),
            MISSING + DELIVERIES,
            polls.len()
        );
    }
}
