//! The presets' API keys never show: not in the JSON report, a finding's detail, the run row
//! or the metrics, also when the provider answers errors.

use payrecon::report::Report;
use payrecon_testkit::HttpFault;
use serde_json::json;

use super::{Lab, PAYMOS, PKEY, QKEY, QVARD};
use crate::reconcile::{entry, minutes_ago, on_backends, payee, usdt, KEY};
use payrecon_testkit::inspect::Inspect;

fn assert_no_key(what: &str, text: &str) {
    for key in [QKEY, PKEY, KEY] {
        assert!(!text.contains(key), "{what} holds an API key: {text}");
    }
}

async fn assert_nothing_leaks(lab: &Lab, report: &Report) {
    assert_no_key("the JSON report", &report.to_json());
    let json = serde_json::to_string(report).unwrap();
    assert_no_key("the compact JSON report", &json);
    for f in lab.w.store().findings().await.unwrap() {
        assert_no_key("a finding's detail", &f.detail);
    }
    let run = lab.w.store().run_by_id(&report.run_id).await.unwrap();
    let run = run.expect("the run row");
    assert_no_key("the run's error", run.error.as_deref().unwrap_or(""));
    assert_no_key("the metrics", &lab.w.app.engine.metrics.encode());
}

#[tokio::test]
async fn preset_api_keys_never_appear_in_reports_findings_or_errors() {
    on_backends(|url| async move {
        let Some(lab) = Lab::start(&url).await else {
            return;
        };
        let w = &lab.w;
        w.orders(&[("7001", &payee(1), usdt(25)), ("S-P", &payee(2), usdt(30))])
            .await;
        let qtx = w.pay(&payee(1), usdt(25)).await;
        let ptx = w.pay(&payee(2), usdt(30)).await;
        w.anvil.mine(70).await;
        let (qli, pli) = (lab.log_index(&qtx).await, lab.log_index(&ptx).await);
        // A numeric id: the fake's resend endpoint looks ids up as strings and answers 404,
        // so the resend fails and its error reaches the finding's detail.
        lab.qvard.add_raw(json!({
            "id": 7001, "object": "payment", "status": "completed", "chain": "ethereum",
            "tx_hash": qtx, "log_index": qli, "asset": lab.token(), "amount": "25.00",
            "completed_at": minutes_ago(12).as_second(),
        }));
        lab.paymos_event("evt_s", "S-P", &ptx, pli, usdt(30), "final", 17 * 60, 11);

        let report = lab.run().await;

        let (q, p) = (entry(&report, QVARD), entry(&report, PAYMOS));
        assert_eq!((q.status.as_str(), p.status.as_str()), ("ok", "ok"));
        assert_eq!(
            (q.applied, q.resends.failed, q.resends.requested),
            (1, 1, 0)
        );
        assert_eq!((p.applied, p.resends.requested), (1, 1));
        let failed = report
            .findings
            .iter()
            .find(|f| f.provider == QVARD && f.kind == "failed_notification")
            .expect("Qvard's inferred failed notification");
        assert!(
            failed.detail.contains("resend request failed"),
            "{}",
            failed.detail
        );
        assert_nothing_leaks(&lab, &report).await;

        // Every attempt answered 500: both presets fail, with an error that names no key.
        lab.qvard.push_fault(HttpFault::Status(500), 50);
        lab.paymos.push_fault(HttpFault::Status(500), 50);
        lab.w.allow_error("injected fault");
        let broken = lab.run().await;

        for name in [QVARD, PAYMOS] {
            let e = entry(&broken, name);
            assert_eq!(e.status, "failed", "{}", broken.to_json());
            let error = e.error.as_deref().expect("an error");
            assert!(error.contains("500"), "{name}: {error}");
            assert_no_key("a provider error", error);
        }
        assert_eq!(entry(&broken, "cg").status, "ok");
        let run = w.store().run_by_id(&broken.run_id).await.unwrap().unwrap();
        assert_eq!(run.status, "failed");
        assert!(run.error.as_deref().is_some_and(|e| e.contains(QVARD)));
        assert_nothing_leaks(&lab, &broken).await;
    })
    .await;
}
