//! A run without an end is `running`, then `killed` once it is more than an hour old.

use jiff::{SignedDuration, Timestamp};
use payrecon::sandbox::SANDBOX_PROVIDER;
use payrecon::store::RunRow;

use super::{provider, status_json};
use crate::cli::harness::{payrecon, World};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_shows_a_run_without_an_end_as_running_or_killed() {
    let (_guard, urls) = crate::support::backends().await;
    for url in urls {
        let w = World::new(tempfile::tempdir().unwrap(), url.clone()).await;
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
        assert!(s["open_findings"]["run_id"].is_null());

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
