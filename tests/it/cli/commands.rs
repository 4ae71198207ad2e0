//! `migrate`, `check`, and invariant 6 across processes (one resend per cooldown).

use super::harness::{payrecon, World};
use crate::support::free_port;
use payrecon_testkit::inspect::Inspect;

const TABLES: [&str; 5] = [
    "orders",
    "payrecon_transitions",
    "payrecon_findings",
    "payrecon_runs",
    "payrecon_resends",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_creates_the_schema() {
    let (_guard, urls) = crate::support::all_backends().await;
    for url in urls {
        let dir = payrecon_testkit::tmp::dir().unwrap();
        let config = dir.path().join("config.toml");
        let toml = payrecon_testkit::sandbox::config_toml(
            &url,
            "http://127.0.0.1:1/api/v2",
            "http://127.0.0.1:1",
            "",
        );
        std::fs::write(&config, toml).unwrap();
        // An empty database (an SQLite file made by someone else): `export` says what to do.
        if let Some(file) = payrecon::store::sqlite_file(&url) {
            std::fs::write(file, b"").unwrap();
        }
        // `check` fails the database's line, and says why and what to do.
        let out = payrecon(&config, &["check"]).await;
        out.assert_code(1);
        let first = out.stdout.lines().next().unwrap_or_default();
        assert!(
            first.starts_with("FAILED database (")
                && first.contains("payrecon's tables are missing: run `payrecon migrate`"),
            "{url}: {}",
            out.stdout
        );
        let out = payrecon(&config, &["export"]).await;
        out.assert_code(1);
        assert!(
            out.stderr.contains("run `payrecon migrate` first"),
            "{url}: {}",
            out.stderr
        );
        // A read of a payrecon table is told apart by the database's error code, not its text.
        let bare = payrecon::store::Store::connect(&url, 1).await.unwrap();
        let err = bare.event_counts().await.unwrap_err();
        assert!(
            matches!(err, payrecon::store::StoreError::NoSchema { .. }),
            "{url}: {err:?}"
        );
        assert!(
            err.to_string().contains("run `payrecon migrate` first"),
            "{err}"
        );
        bare.close().await;
        let out = payrecon(&config, &["migrate"]).await;
        out.assert_code(0);
        out.assert_no_panic();
        assert!(out.stdout.is_empty(), "{}", out.stdout);
        assert!(
            out.stderr.contains("schema created ("),
            "{url}: {}",
            out.stderr
        );
        // Then the database's line is ok, with the schema it found (the chain and provider
        // of this configuration are down: their lines fail).
        let out = payrecon(&config, &["check"]).await;
        let first = out.stdout.lines().next().unwrap_or_default();
        assert!(
            first.starts_with("ok") && first.contains("schema at migration"),
            "{url}: {}",
            out.stdout
        );
        let store = payrecon::store::Store::connect(&url, 2).await.unwrap();
        for t in TABLES {
            assert_eq!(store.count(t).await.unwrap(), 0, "{url}: table {t}");
        }
        // Twice is fine (an upgrade with nothing to do), and says so.
        let again = payrecon(&config, &["migrate"]).await;
        again.assert_code(0);
        assert!(
            again.stderr.contains("schema is up to date ("),
            "{url}: {}",
            again.stderr
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_prints_one_line_per_item_and_fails_when_the_provider_is_down() {
    let w = World::sqlite().await;
    w.chain.mine(80);
    w.cg.set_block_number(
        "ethereum",
        19_000_000,
        payrecon_testkit::sandbox::chaingateway::BlockShape::Integer,
    );
    let out = payrecon(&w.config(""), &["check"]).await;
    out.assert_code(0);
    out.assert_no_panic();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(
        lines.len(),
        4,
        "database, chain, provider, events:\n{}",
        out.stdout
    );
    // apply = true and no [events] url: a warning, not a failure (exit 0 above).
    assert!(
        lines[3].starts_with("WARN") && lines[3].contains("[events] url"),
        "{}",
        lines[3]
    );
    assert!(
        lines[0].starts_with("ok") && lines[0].contains("database"),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].starts_with("ok") && lines[1].contains("ethereum"),
        "{}",
        lines[1]
    );
    assert!(lines[1].contains("head 80"), "{}", lines[1]);
    assert!(
        lines[2].starts_with("ok") && lines[2].contains("sandbox"),
        "{}",
        lines[2]
    );
    assert!(lines[2].contains("19000000"), "{}", lines[2]);
    assert!(!out.stdout.contains("INFO"));

    let down = format!("http://127.0.0.1:{}/api/v2", free_port());
    let out = payrecon(&w.config_for(&down, ""), &["check"]).await;
    out.assert_code(1);
    out.assert_no_panic();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{}", out.stdout);
    assert!(lines[3].starts_with("WARN"), "{}", out.stdout);
    assert!(
        lines[0].starts_with("ok") && lines[1].starts_with("ok"),
        "{}",
        out.stdout
    );
    assert!(lines[2].starts_with("FAILED"), "{}", lines[2]);
    assert!(
        lines[2].contains("sandbox"),
        "the failed line names the provider: {}",
        lines[2]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_resend_across_two_processes() {
    let (_guard, urls) = crate::support::all_backends().await;
    for url in urls {
        let w = World::new(payrecon_testkit::tmp::dir().unwrap(), url.clone()).await;
        w.failed_notification(7).await;
        let config = w.config("");
        let first = payrecon(&config, &["run", "--format", "json"]).await;
        first.assert_code(0);
        let r = first.json();
        assert_eq!(r["providers"][0]["resends"]["requested"], 1, "{url}: {r}");
        let second = payrecon(&config, &["run", "--format", "json"]).await;
        second.assert_code(0);
        let r = second.json();
        let resends = &r["providers"][0]["resends"];
        assert_eq!(resends["requested"], 0, "{url}: {r}");
        assert_eq!(resends["skipped"], 1, "{url}: {r}");
        assert_eq!(r["totals"]["resends_requested"], 0);
        let f = r["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["kind"] == "failed_notification")
            .unwrap_or_else(|| panic!("{url}: no failed_notification finding: {r}"));
        assert_eq!(f["action"], "resend_skipped");
        assert_eq!(
            w.cg.retries(),
            [("ethereum".to_string(), "n-7".to_string())],
            "{url}"
        );
    }
}
