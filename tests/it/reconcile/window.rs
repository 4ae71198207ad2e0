//! The `--since`/`--until` window: a record outside it is not examined, a wider backfill
//! reaches it.

use payrecon::domain::State;

use super::{entry, gaps, minutes_ago, on_backends, opts_since, payee, usdt, World, CG};

#[tokio::test]
async fn record_outside_the_window_is_untouched_until_a_wider_backfill_reaches_it() {
    on_backends(|url| async move {
        let Some(w) = World::start(&url).await else {
            return;
        };
        w.orders(&[("W-1", &payee(1), usdt(25)), ("W-2", &payee(2), usdt(26))])
            .await;
        let old = w.pay(&payee(1), usdt(25)).await;
        let recent = w.pay(&payee(2), usdt(26)).await;
        w.notify_at("1701", &old, &payee(1), "25", minutes_ago(72 * 60));
        w.notify("1702", &recent, &payee(2), "26");

        let report = w.app.engine.run(&opts_since(48)).await.unwrap();
        let cg = entry(&report, CG);
        assert_eq!((cg.checked, cg.applied), (1, 1), "{}", report.to_json());
        assert_eq!(gaps(cg), [1, 0, 0, 0, 0, 0]);
        assert!(report
            .findings
            .iter()
            .all(|f| f.order_ref.as_deref() != Some("W-1")));
        let w1 = w.order("W-1").await;
        assert_eq!((w1.state, w1.tx_hash), (State::Unpaid, None));

        // A backfill over the last week.
        let report = w.app.engine.run(&opts_since(7 * 24)).await.unwrap();
        let cg = entry(&report, CG);
        assert_eq!((cg.checked, cg.applied), (2, 1), "{}", report.to_json());
        assert_eq!(gaps(cg), [1, 0, 0, 0, 0, 0]);
        let w1 = w.order("W-1").await;
        assert_eq!(
            (w1.state, w1.tx_hash.as_deref()),
            (State::Pending, Some(old.as_str()))
        );
        assert_eq!(w.audit().await.len(), 2);
    })
    .await;
}

#[tokio::test]
async fn until_bounds_the_window_too() {
    on_backends(|url| async move {
        let Some(w) = World::start(&url).await else {
            return;
        };
        w.orders(&[("W-3", &payee(3), usdt(1))]).await;
        let tx = w.pay(&payee(3), usdt(1)).await;
        w.notify("1703", &tx, &payee(3), "1");
        let mut o = opts_since(48);
        o.until = minutes_ago(60); // the record is 30 minutes old
        let report = w.app.engine.run(&o).await.unwrap();
        assert_eq!(entry(&report, CG).checked, 0, "{}", report.to_json());
        assert_eq!(w.order("W-3").await.state, State::Unpaid);
    })
    .await;
}
