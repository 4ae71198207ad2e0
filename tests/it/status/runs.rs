//! A run without an end is `running`, then `killed` once it is more than an hour old.

use jiff::{SignedDuration, Timestamp};
use payrecon::store::RunRow;
use payrecon_testkit::sandbox::SANDBOX_PROVIDER;

use super::{provider, status_json};
use crate::cli::harness::{payrecon, World};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_shows_a_run_without_an_end_as_running_or_killed() {
    let (_guard, urls) = crate::support::all_backends().await;
    for url in urls {
        let w = World::new(payrecon_testkit::tmp::dir().unwrap(), url.clone()).await;
        let config = w.config("");
        let start = |id: &str, ago: i64| RunRow {
            id: id.into(),
            trigger: "schedule".into(),
            started_at: Timestamp::now() - SignedDuration::from_mins(ago),
            since: Timestamp::now() - SignedDuration::from_hours(48),
            until: Timestamp::now(),
        };
        w.store.start_run(&start("old", 90)).await.unwrap();
        let s = status_json(&payrecon(&config, &["status", "--format", "json"]).await);
        let run = &provider(&s, SANDBOX_PROVIDER)["last_run"];
        assert_eq!(
            (
                run["run_id"].as_str(),
                run["status"].as_str(),
                run["trigger"].as_str()
            ),
            (Some("old"), Some("killed"), Some("schedule")),
            "{url}: {s}"
        );
        assert!(run["finished_at"].is_null() && run["duration_seconds"].is_null());
        assert!(provider(&s, SANDBOX_PROVIDER)["last_success_at"].is_null());
        assert_eq!(s["exceptions"]["open_total"], 0, "{url}: {s}");

        w.store.start_run(&start("new", 1)).await.unwrap();
        let s = status_json(&payrecon(&config, &["status", "--format", "json"]).await);
        let run = &provider(&s, "chain")["last_run"];
        assert_eq!(
            (run["run_id"].as_str(), run["status"].as_str()),
            (Some("new"), Some("running")),
            "{url}: {s}"
        );
    }
}

/// A run that did not include a provider (a scheduled run that found its lease held by
/// another instance, or `run --provider`) is not that provider's last run or success.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_attributes_a_run_only_to_the_providers_it_reconciled() {
    let (_guard, urls) = crate::support::all_backends().await;
    for url in urls {
        let w = World::new(payrecon_testkit::tmp::dir().unwrap(), url.clone()).await;
        let config = w.config("");
        let run = |id: &str, ago: i64| RunRow {
            id: id.into(),
            trigger: "schedule".into(),
            started_at: Timestamp::now() - SignedDuration::from_mins(ago),
            since: Timestamp::now() - SignedDuration::from_hours(48),
            until: Timestamp::now(),
        };
        let done = |providers: &str, error: Option<&str>| payrecon::store::RunTotals {
            status: if error.is_some() { "failed" } else { "ok" }.into(),
            checked: 1,
            gaps: 0,
            applied: 0,
            resends_requested: 0,
            error: error.map(String::from),
            providers: Some(providers.into()),
        };
        let both = format!(",{SANDBOX_PROVIDER},chain,");
        w.store.start_run(&run("both", 10)).await.unwrap();
        let t1 = Timestamp::now() - SignedDuration::from_mins(9);
        w.store
            .finish_run("both", t1, &done(&both, None))
            .await
            .unwrap();
        // This instance skipped the provider (its lease was elsewhere); the sweep failed.
        w.store.start_run(&run("sweep-only", 5)).await.unwrap();
        let t2 = Timestamp::now() - SignedDuration::from_mins(4);
        let failed = done(",chain,", Some("chain: boom"));
        w.store.finish_run("sweep-only", t2, &failed).await.unwrap();

        let s = status_json(&payrecon(&config, &["status", "--format", "json"]).await);
        let p = provider(&s, SANDBOX_PROVIDER);
        assert_eq!(p["last_run"]["run_id"].as_str(), Some("both"), "{url}: {s}");
        assert_eq!(p["last_run"]["status"].as_str(), Some("ok"));
        let c = provider(&s, "chain");
        assert_eq!(
            c["last_run"]["run_id"].as_str(),
            Some("sweep-only"),
            "{url}: {s}"
        );
        assert_eq!(c["last_run"]["status"].as_str(), Some("failed"));
        // Both last succeeded in the first run.
        let ms = |v: &serde_json::Value| v.as_str().and_then(|t| t.parse::<Timestamp>().ok());
        assert_eq!(
            ms(&p["last_success_at"]).map(|t| t.as_second()),
            Some(t1.as_second())
        );
        assert_eq!(
            ms(&c["last_success_at"]).map(|t| t.as_second()),
            Some(t1.as_second())
        );
    }
}
