//! `run --format json`: exactly one JSON document on stdout, every field of
//! docs/reference.md §4; logs on stderr only.

use serde_json::Value;

use super::harness::{payrecon, World};
use payrecon_testkit::inspect::Inspect;

const KINDS: [&str; 9] = [
    "missing",
    "lagging",
    "failed_notification",
    "amount_mismatch",
    "unknown_payment",
    "reorged",
    "late_payment",
    "unexpected_outflow",
    "balance_mismatch",
];

fn is_rfc3339(v: &Value) -> bool {
    v.as_str()
        .is_some_and(|s| s.parse::<jiff::Timestamp>().is_ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_json_prints_one_document_with_every_field() {
    let w = World::sqlite().await;
    w.missing_payments(1, 2).await;
    let failed = w.failed_notification(3).await;
    let config = w.config("");
    let out = payrecon(&config, &["run", "--format", "json", "--since", "2h"]).await;
    out.assert_code(0);
    out.assert_no_panic();
    let r = out.json();

    for key in [
        "run_id",
        "started_at",
        "finished_at",
        "since",
        "until",
        "dry_run",
        "providers",
        "totals",
        "findings",
        "findings_truncated",
    ] {
        assert!(r.get(key).is_some(), "report lacks {key}: {r}");
    }
    assert!(!r["run_id"].as_str().unwrap().is_empty());
    for key in ["started_at", "finished_at", "since", "until"] {
        assert!(is_rfc3339(&r[key]), "{key} is not RFC 3339: {}", r[key]);
    }
    let since: jiff::Timestamp = r["since"].as_str().unwrap().parse().unwrap();
    let until: jiff::Timestamp = r["until"].as_str().unwrap().parse().unwrap();
    let window = until.duration_since(since).as_secs();
    assert!(
        (7190..=7210).contains(&window),
        "--since 2h: window {window} s"
    );
    assert_eq!(r["dry_run"], false);
    assert_eq!(r["findings_truncated"], false);

    let providers = r["providers"].as_array().unwrap();
    let names: Vec<&str> = providers
        .iter()
        .map(|p| p["provider"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["sandbox", "chain"]);
    for p in providers {
        for key in [
            "provider",
            "kind",
            "status",
            "error",
            "checked",
            "gaps",
            "applied",
            "refused_backwards",
            "rejected",
            "resends",
        ] {
            assert!(p.get(key).is_some(), "provider entry lacks {key}: {p}");
        }
        let gaps = p["gaps"].as_object().unwrap();
        let mut listed: Vec<&str> = gaps.keys().map(String::as_str).collect();
        listed.sort_unstable();
        let mut want = KINDS.to_vec();
        want.sort_unstable();
        assert_eq!(listed, want, "gaps lists all six kinds");
        for k in ["requested", "skipped", "failed"] {
            assert!(p["resends"][k].is_u64(), "resends.{k}: {p}");
        }
        assert_eq!(p["status"], "ok");
        assert_eq!(p["error"], Value::Null);
    }
    let cg = &providers[0];
    assert_eq!(cg["kind"], "chaingateway");
    assert_eq!(cg["checked"], 3);
    assert_eq!(cg["gaps"]["missing"], 3);
    assert_eq!(cg["gaps"]["failed_notification"], 1);
    assert_eq!(cg["applied"], 3);
    assert_eq!(cg["resends"]["requested"], 1);
    assert_eq!(providers[1]["kind"], "chain");

    let totals = &r["totals"];
    assert_eq!(totals["checked"], 3);
    assert_eq!(totals["gaps"], 4);
    assert_eq!(totals["applied"], 3);
    assert_eq!(totals["resends_requested"], 1);

    let findings = r["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 4, "{findings:?}");
    for f in findings {
        for key in [
            "provider",
            "kind",
            "chain",
            "tx_hash",
            "log_index",
            "order_ref",
            "local_state",
            "observed_state",
            "action",
            "detail",
        ] {
            assert!(f.get(key).is_some(), "finding lacks {key}: {f}");
        }
    }
    let resend = findings
        .iter()
        .find(|f| f["kind"] == "failed_notification")
        .unwrap();
    assert_eq!(resend["order_ref"], failed.as_str());
    assert_eq!(resend["action"], "resend_requested");
    let missing: Vec<&Value> = findings.iter().filter(|f| f["kind"] == "missing").collect();
    assert!(missing.iter().all(|f| f["action"] == "applied"
        && f["local_state"] == "unpaid"
        && f["observed_state"] == "final"
        && f["chain"] == "ethereum"));

    // Logs went to stderr, and they are there.
    assert!(
        out.stderr.contains("Run finished"),
        "stderr: {}",
        out.stderr
    );
    assert!(!out.stdout.contains("Run finished"));
    // The run is recorded with the report's id.
    let run = w
        .store
        .run_by_id(r["run_id"].as_str().unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!((run.trigger.as_str(), run.status.as_str()), ("cli", "ok"));
    assert_eq!(w.cg.retries().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_text_is_the_default_and_not_json() {
    let w = World::sqlite().await;
    w.missing_payments(1, 1).await;
    let out = payrecon(&w.config(""), &["run"]).await;
    out.assert_code(0);
    assert!(serde_json::from_str::<Value>(&out.stdout).is_err());
    assert!(
        out.stdout.contains("sandbox"),
        "text report: {}",
        out.stdout
    );
    assert!(
        !out.stdout.contains("INFO"),
        "logs on stdout: {}",
        out.stdout
    );
}

/// `PAYRECON_RUN_STATS=<file>`: the benchmark's view of a `run` (SQL statements, CPU, peak
/// RSS), and the JSON report read back with `Report::from_json`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_stats_file_and_the_report_read_back() {
    let w = World::sqlite().await;
    w.missing_payments(1, 3).await;
    let config = w.config("");
    let stats_path = w.dir.path().join("stats.json");
    let mut cmd = super::harness::command(&config, &["run", "--format", "json", "--since", "2h"]);
    cmd.env("PAYRECON_RUN_STATS", &stats_path);
    let out = super::harness::output(cmd).await;
    out.assert_code(0);
    let report = payrecon::report::Report::from_json(&out.stdout).expect("the report parses");
    assert_eq!(report.totals.applied, 3, "{}", out.stdout);
    assert_eq!(report.providers[0].gaps.missing, 3);
    let stats: Value =
        serde_json::from_str(&std::fs::read_to_string(&stats_path).expect("stats written"))
            .expect("stats are JSON");
    let sql = stats["sql_statements"].as_u64().expect("sql_statements");
    // Migrations, the run row, lookups and one apply batch: more than a few, far fewer
    // than a query per record would need for a large run.
    assert!((5..200).contains(&sql), "{stats}");
    let rss = stats["peak_rss_kib"].as_u64().expect("peak_rss_kib");
    assert!((1_000..2_000_000).contains(&rss), "{stats}");
    // A short run may take less than one clock tick (10 ms): present and sane, not > 0.
    let cpu = stats["cpu_user_s"].as_f64().expect("cpu_user_s")
        + stats["cpu_system_s"].as_f64().expect("cpu_system_s");
    assert!((0.0..60.0).contains(&cpu), "{stats}");
    // Without the variable, nothing is written.
    std::fs::remove_file(&stats_path).unwrap();
    let out = super::harness::payrecon(&config, &["run", "--since", "2h"]).await;
    out.assert_code(0);
    assert!(!stats_path.exists());
}
