//! The dashboard: a provisionable classic JSON model, and every panel query and template
//! variable answered with data by a real Prometheus that scrapes an in-process `serve` which
//! has reconciled gaps, transitions, a resend, a provider 5xx and forged webhook deliveries.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use payrecon_testkit::sandbox::chaingateway::Fault;
use serde_json::Value;

use super::prometheus::Prometheus;
use super::{alert_names, read, repo, tool, DASHBOARD, RULES};
use crate::ingest::{cg_body, cg_sig, providers, Daemon, NEVER};
use crate::reconcile::{entry, gaps, opts, payee, usdt, World, CG};
use crate::support::{self, skip};

fn dashboard() -> Value {
    serde_json::from_str(&read(DASHBOARD)).expect("the dashboard is JSON")
}

/// Every panel, rows' nested panels included.
fn panels(d: &Value) -> Vec<&Value> {
    let mut out = Vec::new();
    for p in d["panels"].as_array().expect("panels") {
        out.push(p);
        if let Some(nested) = p["panels"].as_array() {
            out.extend(nested);
        }
    }
    out
}

/// `(panel title, expr)` of every query target.
fn targets(d: &Value) -> Vec<(String, String)> {
    panels(d)
        .into_iter()
        .flat_map(|p| {
            let title = p["title"].as_str().unwrap_or("?").to_string();
            p["targets"]
                .as_array()
                .into_iter()
                .flatten()
                .map(move |t| (title.clone(), t["expr"].as_str().expect("expr").to_string()))
        })
        .collect()
}

/// The expression Grafana would send, with all providers and chains selected.
fn substitute(expr: &str) -> String {
    let e = expr
        .replace("$__rate_interval", "1m")
        .replace("$__interval", "15s")
        .replace("$__range", "1h")
        .replace("${provider}", ".*")
        .replace("$provider", ".*")
        .replace("${chain}", ".*")
        .replace("$chain", ".*");
    assert!(!e.contains('$'), "an unknown variable in {expr}");
    e
}

/// The template variable `name`.
fn variable<'a>(d: &'a Value, name: &str) -> &'a Value {
    d["templating"]["list"]
        .as_array()
        .expect("templating.list")
        .iter()
        .find(|v| v["name"] == name)
        .unwrap_or_else(|| panic!("no template variable {name}"))
}

#[test]
fn dashboard_is_a_provisionable_model_on_a_datasource_variable() {
    let d = dashboard();
    assert_eq!(d["uid"], "payrecon-overview");
    assert!(d["schemaVersion"].as_u64().is_some(), "schemaVersion");
    let ds = variable(&d, "datasource");
    assert_eq!(ds["type"], "datasource");
    assert_eq!(ds["query"], "prometheus");
    for (name, query) in [
        ("provider", "label_values(payrecon_runs_total, provider)"),
        ("chain", "label_values(payrecon_chain_head_block, chain)"),
    ] {
        let v = variable(&d, name);
        assert_eq!(v["type"], "query", "{name}");
        assert_eq!(v["query"], query, "{name}");
        assert_eq!(v["datasource"]["uid"], "${datasource}", "{name}");
        assert_eq!(v["allValue"], ".*", "{name}");
    }
    let mut ids = BTreeSet::new();
    for p in panels(&d) {
        let title = p["title"].as_str().expect("every panel has a title");
        assert!(
            ids.insert(p["id"].as_u64().expect("id")),
            "duplicate id: {title}"
        );
        if p["type"] == "row" {
            continue;
        }
        assert_eq!(p["datasource"]["uid"], "${datasource}", "{title}");
        let ts = p["targets"].as_array().expect("targets");
        assert!(!ts.is_empty(), "{title} has no query");
        for t in ts {
            assert_eq!(t["datasource"]["uid"], "${datasource}", "{title}");
        }
    }
    let exprs: Vec<String> = targets(&d).into_iter().map(|(_, e)| e).collect();
    for metric in [
        "payrecon_gap_ratio",
        "payrecon_gaps_total",
        "payrecon_transitions_applied_total",
        "payrecon_resends_total",
        "payrecon_run_duration_seconds_bucket",
        "payrecon_last_success_timestamp_seconds",
        "payrecon_provider_requests_total",
        "payrecon_chain_head_block",
        "payrecon_webhooks_total",
        "payrecon_reorged_open",
        "payrecon_runs_total",
    ] {
        assert!(
            exprs.iter().any(|e| e.contains(metric)),
            "no panel shows {metric}"
        );
    }
    assert!(exprs.iter().any(|e| e.contains("histogram_quantile(")));
    let dashboards = read("grafana/provisioning/dashboards/payrecon.yml");
    assert!(dashboards.contains("apiVersion: 1") && dashboards.contains("type: file"));
    let datasources = read("grafana/provisioning/datasources/prometheus.yml");
    assert!(datasources.contains("apiVersion: 1") && datasources.contains("type: prometheus"));
}

/// A serve that has reconciled a scenario with gaps, scraped by a real Prometheus.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_dashboard_query_returns_data_from_prometheus_scraping_serve() {
    let Some(bin) = tool("PROMETHEUS_BIN", "prometheus") else {
        skip("prometheus is not installed (apt-get install prometheus)");
        return;
    };
    let t0 = Instant::now();
    let (_db, url) = support::sqlite_url();
    let Some(w) = World::start_with(&url, &providers(None), NEVER).await else {
        return;
    };
    // A missing payment, and a missing payment whose notification failed (resent).
    w.orders(&[
        ("G-missing", &payee(1), usdt(25)),
        ("G-failed", &payee(2), usdt(15)),
    ])
    .await;
    let tx1 = w.pay(&payee(1), usdt(25)).await;
    let tx2 = w.pay(&payee(2), usdt(15)).await;
    w.notify("901", &tx1, &payee(1), "25");
    w.notify("902", &tx2, &payee(2), "15");
    assert!(w.cg.mark_failed("ethereum", "902"));

    // The served App is the one that runs: metrics are per process.
    let app = w.another_app(&providers(None), NEVER).await;
    let engine = app.engine.clone();
    let daemon = Daemon::start(app).await;
    let target = daemon.base.trim_start_matches("http://").to_string();
    let prom = Prometheus::start(&bin, &target, &repo().join(RULES)).await;
    prom.wait_for("up{job=\"payrecon\"} == 1", Duration::from_secs(30))
        .await;

    // Act: a run (its first request answered 500, then retried) and forged deliveries,
    // after a scrape of the all-zero metrics.
    w.cg.push_fault(Fault::ServerError, 1);
    let report = engine.run(&opts()).await.expect("run");
    let cg = entry(&report, CG);
    let [missing, _, failed_notification, ..] = gaps(cg);
    assert_eq!(
        (missing, failed_notification),
        (2, 1),
        "{}",
        report.to_json()
    );
    assert_eq!((cg.applied, cg.resends.requested), (2, 1));
    for i in 0..7 {
        let body = cg_body(&w, &format!("99{i}"), &tx1, &payee(1));
        let (status, _) = daemon
            .post("cg", &cg_sig("whsec_not_the_secret", &tx1), body)
            .await;
        assert!((400..500).contains(&status), "a forged delivery: {status}");
    }
    prom.wait_for(
        "payrecon_webhooks_total{job=\"payrecon\",provider=\"cg\",outcome=\"bad_signature\"} == 7 \
         and on() payrecon_runs_total{job=\"payrecon\",provider=\"cg\",outcome=\"ok\"} == 1",
        Duration::from_secs(30),
    )
    .await;
    eprintln!("scenario reconciled and scraped after {:?}", t0.elapsed());

    // Every panel query parses and returns data (a number, not only NaN).
    let d = dashboard();
    let mut wrong = Vec::new();
    for (title, expr) in targets(&d) {
        let q = substitute(&expr);
        match prom.query(&q).await {
            Err(answer) => wrong.push(format!("{title}: {q}\n  error: {answer}")),
            Ok(r) if r.is_empty() => wrong.push(format!("{title}: {q}\n  no data")),
            Ok(r) => {
                let finite = r.iter().any(|s| {
                    s["value"][1]
                        .as_str()
                        .and_then(|v| v.parse::<f64>().ok())
                        .is_some_and(f64::is_finite)
                });
                if !finite {
                    wrong.push(format!("{title}: {q}\n  only NaN: {r:?}"));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "dashboard queries:\n{}", wrong.join("\n"));

    // The template variables list the configured provider and chain.
    for (name, label, metric, want) in [
        ("provider", "provider", "payrecon_runs_total", CG),
        ("chain", "chain", "payrecon_chain_head_block", "ethereum"),
    ] {
        let q = variable(&d, name)["query"].as_str().unwrap();
        assert_eq!(q, format!("label_values({metric}, {label})"));
        let v = prom
            .api(&format!("label/{label}/values"), &[("match[]", metric)])
            .await;
        let values = v["data"].as_array().expect("label values");
        assert!(values.iter().any(|x| x == want), "{name}: {v}");
    }

    // The rules are loaded, and what this scenario should fire fires, nothing else.
    let groups = prom.api("rules", &[("type", "alert")]).await;
    let loaded = groups["data"]["groups"][0]["rules"]
        .as_array()
        .map(Vec::len);
    assert_eq!(loaded, Some(alert_names(&read(RULES)).len()), "{groups}");
    let expected = [
        "PayreconFailedNotificationsGrowing",
        "PayreconWebhookBadSignatures",
    ];
    for name in expected {
        prom.wait_for(
            &format!("ALERTS{{alertname=\"{name}\",alertstate=\"firing\",provider=\"cg\"}}"),
            Duration::from_secs(30),
        )
        .await;
    }
    let firing = prom
        .query("ALERTS{alertstate=\"firing\"}")
        .await
        .expect("ALERTS");
    let names: BTreeSet<&str> = firing
        .iter()
        .filter_map(|a| a["metric"]["alertname"].as_str())
        .collect();
    assert_eq!(names, expected.into_iter().collect(), "{}", prom.log());
    drop(prom);
    daemon.stop().await;
    eprintln!("dashboard test took {:?}", t0.elapsed());
}
