//! Chaingateway faults at engine level: a transient 500, a page that stays malformed, a
//! provider that is down. A failing provider never costs the others their work.

use payrecon::domain::State;
use payrecon_testkit::sandbox::chaingateway::{FakeChaingateway, Fault};

use super::{entry, gaps, on_backends, payee, provider_table, usdt, World, CG, KEY};
use payrecon_testkit::inspect::Inspect;

#[tokio::test]
async fn a_server_error_then_success_completes_the_run() {
    on_backends(|url| async move {
        let Some(w) = World::start(&url).await else {
            return;
        };
        w.orders(&[("E-1", &payee(1), usdt(25))]).await;
        let tx = w.pay(&payee(1), usdt(25)).await;
        w.notify("1801", &tx, &payee(1), "25");
        w.cg.push_fault(Fault::ServerError, 1);

        let report = w.run().await;

        let cg = entry(&report, CG);
        assert_eq!(
            (cg.status.as_str(), cg.error.as_deref()),
            ("ok", None),
            "{}",
            report.to_json()
        );
        assert_eq!((cg.checked, cg.applied), (1, 1));
        assert_eq!(w.order("E-1").await.state, State::Pending);
        let row = w.store().run_by_id(&report.run_id).await.unwrap().unwrap();
        assert_eq!((row.status.as_str(), row.error), ("ok", None));
    })
    .await;
}

#[tokio::test]
async fn a_page_that_stays_malformed_fails_that_provider_and_keeps_the_others_work() {
    on_backends(|url| async move {
        let (bad, bad_url) = FakeChaingateway::start(KEY).await;
        bad.push_fault(Fault::MalformedJson, 100);
        let Some(w) = World::start_with(&url, &provider_table("bad", &bad_url), "").await else {
            return;
        };
        w.orders(&[("E-2", &payee(2), usdt(25))]).await;
        let tx = w.pay(&payee(2), usdt(25)).await;
        w.notify("1802", &tx, &payee(2), "25");
        w.allow_error("provider bad: ");

        let report = w.run().await;

        let b = entry(&report, "bad");
        assert_eq!(b.status, "failed", "{}", report.to_json());
        assert!(b.error.as_deref().is_some_and(|e| !e.is_empty()));
        let cg = entry(&report, CG);
        assert_eq!((cg.status.as_str(), cg.applied), ("ok", 1));
        assert_eq!(gaps(cg), [1, 0, 0, 0, 0, 0]);
        assert_eq!(entry(&report, "chain").status, "ok");
        assert!(report.any_failed());
        assert_eq!(w.order("E-2").await.state, State::Pending);
        let row = w.store().run_by_id(&report.run_id).await.unwrap().unwrap();
        assert_eq!((row.status.as_str(), row.applied), ("failed", 1));
        assert!(
            row.error.as_deref().is_some_and(|e| e.starts_with("bad:")),
            "{row:?}"
        );
        assert_eq!(w.audit().await.len(), 1);
    })
    .await;
}

#[tokio::test]
async fn a_provider_that_is_down_fails_alone() {
    on_backends(|url| async move {
        let down = provider_table("down", "http://127.0.0.1:1/api/v2");
        let Some(w) = World::start_with(&url, &down, "").await else {
            return;
        };
        w.orders(&[("E-3", &payee(3), usdt(25))]).await;
        let tx = w.pay(&payee(3), usdt(25)).await;
        w.notify("1803", &tx, &payee(3), "25");
        w.allow_error("provider down: ");

        let report = w.run().await;

        let d = entry(&report, "down");
        assert_eq!(
            (d.status.as_str(), d.checked, d.applied),
            ("failed", 0, 0),
            "{}",
            report.to_json()
        );
        let cg = entry(&report, CG);
        assert_eq!((cg.status.as_str(), cg.applied), ("ok", 1));
        assert_eq!(report.totals.applied, 1);
        assert_eq!(w.order("E-3").await.state, State::Pending);
        let rows = w.store().transitions().await.unwrap();
        assert_eq!((rows.len(), rows[0].provider.as_str()), (1, CG));
    })
    .await;
}
