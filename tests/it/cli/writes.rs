//! What a run writes and asks for: --dry-run (nothing), --no-resend (no resend), the
//! environment overrides and `api_key_file` through the binary.

use payrecon_testkit::sandbox::SANDBOX_API_KEY;

use super::harness::{command, output, payrecon, World};
use payrecon_testkit::inspect::Inspect;

async fn states(w: &World, refs: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for r in refs {
        let o = w.store.order_by_ref(r).await.unwrap().unwrap();
        out.push(format!("{}:{}:{:?}", r, o.state.as_str(), o.tx_hash));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_writes_nothing_and_requests_no_resend() {
    let (_guard, urls) = crate::support::all_backends().await;
    for url in urls {
        let w = World::new(payrecon_testkit::tmp::dir().unwrap(), url.clone()).await;
        let mut refs = w.missing_payments(1, 3).await;
        refs.push(w.failed_notification(4).await);
        let before = states(&w, &refs).await;
        let config = w.config("");
        let out = payrecon(&config, &["run", "--dry-run", "--format", "json"]).await;
        out.assert_code(0);
        let r = out.json();
        assert_eq!(r["dry_run"], true);
        assert_eq!(r["totals"]["gaps"], 5, "{url}: {r}");
        assert_eq!(r["totals"]["applied"], 0, "{url}");
        assert_eq!(r["totals"]["resends_requested"], 0, "{url}");
        let actions: Vec<&str> = r["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["action"].as_str().unwrap())
            .collect();
        assert!(actions.contains(&"would_apply"), "{actions:?}");
        assert!(!actions.contains(&"applied") && !actions.contains(&"resend_requested"));
        for table in [
            "payrecon_transitions",
            "payrecon_runs",
            "payrecon_findings",
            "payrecon_resends",
        ] {
            assert_eq!(
                w.count(table).await,
                0,
                "{url}: {table} written by a dry run"
            );
        }
        assert_eq!(states(&w, &refs).await, before, "{url}: orders changed");
        assert!(w.cg.retries().is_empty(), "{url}: resend requested");

        // --fail-on-gaps applies to a dry run too.
        let out = payrecon(&config, &["run", "--dry-run", "--fail-on-gaps"]).await;
        out.assert_code(3);
        assert_eq!(w.count("payrecon_transitions").await, 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_resend_applies_but_requests_no_resend() {
    let w = World::sqlite().await;
    let failed = w.failed_notification(1).await;
    let config = w.config("");
    let out = payrecon(&config, &["run", "--no-resend", "--format", "json"]).await;
    out.assert_code(0);
    let r = out.json();
    assert_eq!(r["totals"]["applied"], 1);
    assert_eq!(r["totals"]["resends_requested"], 0);
    assert!(w.cg.retries().is_empty(), "{:?}", w.cg.retries());
    let o = w.store.order_by_ref(&failed).await.unwrap().unwrap();
    assert_eq!(o.state.as_str(), "final");
    assert_eq!(w.count("payrecon_resends").await, 0);
    // Without --no-resend the next run does request it.
    let out = payrecon(&config, &["run", "--format", "json"]).await;
    out.assert_code(0);
    assert_eq!(out.json()["totals"]["resends_requested"], 1);
    assert_eq!(
        w.cg.retries(),
        [("ethereum".to_string(), "n-1".to_string())]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn environment_overrides_and_api_key_file_reach_the_binary() {
    let w = World::sqlite().await;
    let refs = w.missing_payments(1, 1).await;
    let config = w.config("");

    // A wrong key from the environment beats the file's right one: 401, exit 1.
    let mut cmd = command(&config, &["run", "--format", "json"]);
    cmd.env("PAYRECON_PROVIDERS__SANDBOX__API_KEY", "wrong-key-0000");
    let out = output(cmd).await;
    out.assert_code(1);
    let r = out.json();
    assert_eq!(r["providers"][0]["status"], "failed");
    assert!(
        r["providers"][0]["error"].as_str().unwrap().contains("401"),
        "{r}"
    );
    assert!(!out.stderr.contains("wrong-key-0000") && !out.stdout.contains("wrong-key-0000"));
    assert_eq!(
        w.store
            .order_by_ref(&refs[0])
            .await
            .unwrap()
            .unwrap()
            .state
            .as_str(),
        "unpaid"
    );

    // A numeric override is read as a number (an invalid one names its key).
    let mut cmd = command(&config, &["run"]);
    cmd.env("PAYRECON_RECONCILE__BATCH_SIZE", "\"lots\"");
    let out = output(cmd).await;
    out.assert_code(1);
    assert!(out.stderr.contains("batch_size"), "{}", out.stderr);

    // The key only in a file, the database URL only in the environment.
    let elsewhere = format!("sqlite://{}", w.dir.path().join("elsewhere.db").display());
    let key_file = w.write("sandbox.key", &format!("{SANDBOX_API_KEY}\n"));
    let toml = payrecon_testkit::sandbox::config_toml(&elsewhere, &w.cg_url, &w.rpc_url, "")
        .replace(
            &format!("api_key = \"{SANDBOX_API_KEY}\""),
            &format!("api_key_file = \"{}\"", key_file.display()),
        );
    let config = w.write("from-file.toml", &toml);
    let mut cmd = command(&config, &["run", "--format", "json"]);
    cmd.env("PAYRECON_DATABASE__URL", &w.db_url);
    let out = output(cmd).await;
    out.assert_code(0);
    assert_eq!(out.json()["totals"]["applied"], 1);
    assert_eq!(
        w.store
            .order_by_ref(&refs[0])
            .await
            .unwrap()
            .unwrap()
            .state
            .as_str(),
        "final"
    );

    // The right key from the environment: the wrong one in the file is overridden.
    let toml = payrecon_testkit::sandbox::config_toml(&w.db_url, &w.cg_url, &w.rpc_url, "")
        .replace(SANDBOX_API_KEY, "stale-key");
    let config = w.write("stale.toml", &toml);
    let out = payrecon(&config, &["run"]).await;
    out.assert_code(1);
    let mut cmd = command(&config, &["run"]);
    cmd.env("PAYRECON_PROVIDERS__SANDBOX__API_KEY", SANDBOX_API_KEY);
    output(cmd).await.assert_code(0);
}
