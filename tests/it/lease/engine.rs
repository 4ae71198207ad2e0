//! Scheduled runs under leases, at the library level on both backends: two `App`s on one
//! database; a provider whose lease another instance holds is skipped by scheduled runs (no
//! report entry, no metrics, nothing applied), while a manual run (no lease) and a dry run
//! proceed; once released, the scheduled run takes the lease and applies.

use std::time::Duration;

use jiff::Timestamp;
use payrecon::app::App;
use payrecon::domain::State;
use payrecon::engine::{RunOptions, Trigger};
use payrecon::report::Report;
use payrecon::store::Store;

use crate::reconcile::{entry, on_backends, opts, payee, usdt, World, CG};
use crate::serve::series;

const OTHER: &str = "other-instance";

fn scheduled() -> RunOptions {
    RunOptions {
        trigger: Trigger::Schedule,
        ..opts()
    }
}

fn has(report: &Report, provider: &str) -> bool {
    report.providers.iter().any(|p| p.provider == provider)
}

fn runs_ok(app: &App) -> f64 {
    let text = app.engine.metrics.encode();
    series(
        &text,
        "payrecon_runs_total",
        &[("provider", CG), ("outcome", "ok")],
    )
    .expect("the series is exported from the start")
}

async fn lease_row(store: &Store) -> (String, i64) {
    let sql = "SELECT holder, token FROM payrecon_leases WHERE provider = 'cg'";
    payrecon_testkit::on_pool!(store, p => sqlx::query_as(sql).fetch_one(p).await)
        .expect("the cg lease row")
}

/// An order `r` paid on chain (final) and listed by the provider.
async fn paid(w: &World, r: &str, n: u64) {
    let to = payee(n);
    w.orders(&[(r, &to, usdt(25))]).await;
    let tx = w.pay(&to, usdt(25)).await;
    w.anvil.mine(70).await;
    w.notify(&format!("n-{r}"), &tx, &to, "25");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lease_held_elsewhere_skips_scheduled_runs_not_manual_ones() {
    on_backends(|url| async move {
        let Some(w) = World::start(&url).await else {
            return;
        };
        paid(&w, "L-1", 1).await;
        let held = w
            .store()
            .acquire_lease(CG, OTHER, Timestamp::now(), Duration::from_secs(3600))
            .await
            .unwrap()
            .expect("a free lease");

        // A scheduled run on this instance and a manual run on another, at the same time.
        let app2 = w.another_app("", "").await;
        let (sched, manual) = (scheduled(), opts());
        let (sched, man) = tokio::join!(w.app.engine.run(&sched), app2.engine.run(&manual));
        let (sched, man) = (sched.unwrap(), man.unwrap());
        assert!(!has(&sched, CG), "{url}: skipped: {}", sched.to_json());
        assert!(has(&sched, "chain"), "{url}: the chain lease was free");
        assert_eq!(
            runs_ok(&w.app),
            0.0,
            "{url}: no metrics for a skipped provider"
        );
        let m = entry(&man, CG);
        assert_eq!((m.status.as_str(), m.applied), ("ok", 1), "{url}");
        assert_eq!(runs_ok(&app2), 1.0, "{url}");
        assert_eq!(w.order("L-1").await.state, State::Final, "{url}");
        assert_eq!(
            lease_row(w.store()).await,
            (OTHER.into(), 1),
            "{url}: untouched"
        );

        // Alone, the scheduled run applies nothing for cg's records.
        paid(&w, "L-2", 2).await;
        let sched = w.app.engine.run(&scheduled()).await.unwrap();
        assert!(!has(&sched, CG), "{url}: {}", sched.to_json());
        assert_eq!(sched.totals.applied, 0, "{url}");
        assert_eq!(w.order("L-2").await.state, State::Unpaid, "{url}");
        assert_eq!(runs_ok(&w.app), 0.0, "{url}");

        // A dry run takes no lease: it reports cg, and writes nothing.
        let dry = RunOptions {
            dry_run: true,
            ..scheduled()
        };
        let d = w.app.engine.run(&dry).await.unwrap();
        assert_eq!(entry(&d, CG).gaps.missing, 1, "{url}: {}", d.to_json());
        assert_eq!(w.order("L-2").await.state, State::Unpaid, "{url}");
        assert_eq!(lease_row(w.store()).await, (OTHER.into(), 1), "{url}");

        // Released: the next scheduled run takes the lease (token 2) and applies.
        w.store().release_lease(&held).await.unwrap();
        let before = runs_ok(&w.app);
        let sched = w.app.engine.run(&scheduled()).await.unwrap();
        let e = entry(&sched, CG);
        assert_eq!((e.status.as_str(), e.applied), ("ok", 1), "{url}");
        assert_eq!(w.order("L-2").await.state, State::Final, "{url}");
        assert_eq!(runs_ok(&w.app), before + 1.0, "{url}");
        let me = w.app.engine.instance.clone();
        assert_eq!(lease_row(w.store()).await, (me, 2), "{url}");
        // ...and released it after the part: free at once for another instance.
        let next = w
            .store()
            .acquire_lease(CG, OTHER, Timestamp::now(), Duration::from_secs(60))
            .await
            .unwrap();
        assert_eq!(
            next.map(|f| f.token),
            Some(3),
            "{url}: released after the run"
        );

        let audit = w.audit().await;
        let to: Vec<(&str, State)> = audit.iter().map(|a| (a.0.as_str(), a.2)).collect();
        assert_eq!(to, [("L-1", State::Final), ("L-2", State::Final)], "{url}");
    })
    .await;
}
