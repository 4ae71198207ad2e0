//! Qvard (payments list only): every gap kind a completed-payments list can show, the failed
//! notifications inferred from it with their resends, and its retry window.

use std::collections::BTreeSet;

use payrecon::domain::State;

use super::{of, one, others_quiet, Lab, QVARD};
use crate::reconcile::{entry, gaps, ghost_hash, on_backends, payee, usdt};
use payrecon_testkit::inspect::Inspect;

#[tokio::test]
async fn qvard_gap_kinds_are_applied_flagged_and_resent_once() {
    on_backends(|url| async move {
        let Some(lab) = Lab::start(&url).await else {
            return;
        };
        let w = &lab.w;
        w.orders(&[
            ("Q-OLD", &payee(1), usdt(25)),
            ("Q-LAG", &payee(2), usdt(30)),
            ("Q-UNDER", &payee(3), usdt(25)),
            ("Q-GHOST", &payee(4), usdt(10)),
            ("Q-NEW", &payee(5), usdt(40)),
        ])
        .await;
        let old = w.pay(&payee(1), usdt(25)).await;
        let lag = w.pay(&payee(2), usdt(30)).await;
        let under = w.pay(&payee(3), usdt(20)).await;
        // A payment to an address no order waits on, under an id no order has.
        let stray = w.pay(&payee(9), usdt(5)).await;
        let (li_lag, li_stray) = (lab.log_index(&lag).await, lab.log_index(&stray).await);
        // The merchant's handler saw Q-LAG as pending.
        w.seed("Q-LAG", &lag, li_lag, usdt(30), State::Pending)
            .await;
        w.anvil.mine(70).await; // all of the above below `finalized` (head - 64)
        let new = w.pay(&payee(5), usdt(40)).await; // one confirmation: pending
        let ghost = ghost_hash(1);
        for (id, tx, amount) in [
            ("Q-OLD", &old, "25.00"),
            ("Q-LAG", &lag, "30.00"),
            ("Q-UNDER", &under, "20.00"),
            ("Q-NOBODY", &stray, "5.00"),
            ("Q-NEW", &new, "40.00"),
        ] {
            let li = lab.log_index(tx).await;
            lab.qvard_payment(id, Some((tx, li)), amount, 12);
        }
        lab.qvard_payment("Q-GHOST", Some((&ghost, 0)), "10.00", 12);

        let report = lab.run().await;

        let q = entry(&report, QVARD);
        assert_eq!(
            (q.kind.as_str(), q.status.as_str()),
            ("http", "ok"),
            "{}",
            report.to_json()
        );
        // Q-UNDER (20 of 25) is credited and held: no transition, so no notification was
        // missed for it either (Qvard sends none for a short payment).
        assert_eq!(gaps(q), [2, 1, 3, 1, 2, 0], "{}", report.to_json());
        assert_eq!((q.checked, q.applied, q.refused_backwards), (6, 3, 0));
        assert_eq!(
            (q.resends.requested, q.resends.skipped, q.resends.failed),
            (3, 0, 0)
        );
        others_quiet(&report, QVARD);
        // The chain decides the state (Qvard says `completed`), the order_ref picks the order.
        for (r, tx, amount, state) in [
            ("Q-OLD", &old, "25000000", State::Final),
            ("Q-LAG", &lag, "30000000", State::Final),
            ("Q-NEW", &new, "40000000", State::Pending),
        ] {
            let (block, hash, li) = w.where_is(tx).await;
            let o = w.order(r).await;
            assert_eq!(o.state, state, "{r}");
            assert_eq!(o.tx_hash.as_deref(), Some(tx.as_str()), "{r}");
            assert_eq!(o.log_index, Some(li), "{r}");
            assert_eq!(o.amount_paid.as_deref(), Some(amount), "{r}");
            assert_eq!(o.block_number, Some(block as i64), "{r}");
            assert_eq!(o.block_hash.as_deref(), Some(hash.as_str()), "{r}");
        }
        let u = w.order("Q-UNDER").await;
        assert_eq!(
            (u.state, u.tx_hash.as_deref(), u.amount_paid.as_deref()),
            (State::Unpaid, None, Some("20000000"))
        );
        let g = w.order("Q-GHOST").await;
        assert_eq!(
            (g.state, g.tx_hash, g.amount_paid),
            (State::Unpaid, None, None)
        );
        assert_eq!(w.store().count("orders").await.unwrap(), 5, "nothing else");

        for r in ["Q-OLD", "Q-NEW"] {
            let f = one(&report, QVARD, "missing", r);
            assert_eq!(
                (f.action.as_str(), f.local_state.as_deref()),
                ("applied", Some("unpaid"))
            );
        }
        let nw = one(&report, QVARD, "missing", "Q-NEW");
        assert_eq!(nw.observed_state.as_deref(), Some("pending"));
        let lagging = one(&report, QVARD, "lagging", "Q-LAG");
        assert_eq!(
            (
                lagging.action.as_str(),
                lagging.local_state.as_deref(),
                lagging.observed_state.as_deref(),
                lagging.log_index
            ),
            ("applied", Some("pending"), Some("final"), Some(li_lag))
        );
        let mm = one(&report, QVARD, "amount_mismatch", "Q-UNDER");
        assert_eq!(mm.action, "held");
        assert_eq!(mm.tx_hash.as_deref(), Some(under.as_str()));
        assert!(
            mm.detail
                .starts_with("underpaid: paid 20000000 of 25000000"),
            "{}",
            mm.detail
        );
        let failed = of(&report, QVARD, "failed_notification");
        assert!(failed.iter().all(|f| f.action == "resend_requested"));
        let named: BTreeSet<_> = failed.iter().filter_map(|f| f.order_ref.clone()).collect();
        let expect: BTreeSet<String> = ["Q-LAG", "Q-NEW", "Q-OLD"].map(String::from).into();
        assert_eq!(named, expect);
        let unknown = of(&report, QVARD, "unknown_payment");
        assert!(unknown.iter().all(|f| f.action == "none"));
        let hashes: BTreeSet<_> = unknown.iter().filter_map(|f| f.tx_hash.clone()).collect();
        assert_eq!(hashes, BTreeSet::from([ghost.clone(), stray.clone()]));
        let s = unknown
            .iter()
            .find(|f| f.tx_hash.as_deref() == Some(&stray));
        assert_eq!(s.unwrap().log_index, Some(li_stray));

        // One resend per id whose ledger row was behind; none for the unknown payments.
        let mut resent = lab.qvard.resends();
        resent.sort();
        assert_eq!(resent, ["Q-LAG", "Q-NEW", "Q-OLD"]);
        let audit = w.store().transitions().await.unwrap();
        let mine: Vec<_> = audit.iter().filter(|t| t.source == "reconcile").collect();
        assert_eq!(audit.len(), 4, "{audit:?}");
        assert_eq!(mine.len(), 3, "{audit:?}");
        assert!(mine
            .iter()
            .all(|t| t.provider == QVARD && t.run_id.as_deref() == Some(report.run_id.as_str())));
        let moves: BTreeSet<_> = mine
            .iter()
            .map(|t| (t.order_ref.as_str(), t.from_state, t.to_state))
            .collect();
        let want = BTreeSet::from([
            ("Q-OLD", State::Unpaid, State::Final),
            ("Q-LAG", State::Pending, State::Final),
            ("Q-NEW", State::Unpaid, State::Pending),
        ]);
        assert_eq!(moves, want);
        assert_eq!(w.store().count("payrecon_findings").await.unwrap(), 9);

        // Again, nothing changed: no transition, no resend; the unknown payments stay flagged,
        // and the short one stays held (credited once).
        let again = lab.run().await;
        let q = entry(&again, QVARD);
        assert_eq!(gaps(q), [0, 0, 0, 1, 2, 0], "{}", again.to_json());
        assert_eq!((q.checked, q.applied, q.resends.requested), (6, 0, 0));
        assert_eq!(w.store().transitions().await.unwrap().len(), 4);
        assert_eq!(lab.qvard.resends().len(), 3);
        assert_eq!(
            w.order("Q-UNDER").await.amount_paid.as_deref(),
            Some("20000000")
        );
        assert_eq!(w.order("Q-NEW").await.state, State::Pending);
        assert_eq!(w.order("Q-GHOST").await.state, State::Unpaid);

        // Q-NEW becomes final: lagging, applied; its resend waits for the cooldown (1h).
        w.anvil.mine(70).await;
        let third = lab.run().await;
        let q = entry(&third, QVARD);
        assert_eq!(gaps(q), [0, 1, 1, 1, 2, 0], "{}", third.to_json());
        assert_eq!(
            (q.applied, q.resends.requested, q.resends.skipped),
            (1, 0, 1)
        );
        let f = one(&third, QVARD, "failed_notification", "Q-NEW");
        assert_eq!(f.action, "resend_skipped");
        assert!(f.detail.contains("cooldown"), "{}", f.detail);
        assert_eq!(w.order("Q-NEW").await.state, State::Final);
        assert_eq!(lab.qvard.resend_count("Q-NEW"), 1);
        assert_eq!(w.store().transitions().await.unwrap().len(), 5);
    })
    .await;
}

#[tokio::test]
async fn qvard_resend_waits_for_the_retry_window() {
    on_backends(|url| async move {
        let Some(lab) = Lab::start(&url).await else {
            return;
        };
        let w = &lab.w;
        w.orders(&[("Q-FRESH", &payee(1), usdt(25))]).await;
        let tx = w.pay(&payee(1), usdt(25)).await;
        w.anvil.mine(70).await;
        let li = lab.log_index(&tx).await;
        lab.qvard_payment("Q-FRESH", Some((&tx, li)), "25.00", 1);

        let report = lab.run().await;

        let q = entry(&report, QVARD);
        assert_eq!(gaps(q), [1, 0, 1, 0, 0, 0], "{}", report.to_json());
        assert_eq!(
            (q.applied, q.resends.requested, q.resends.skipped),
            (1, 0, 1)
        );
        assert_eq!(one(&report, QVARD, "missing", "Q-FRESH").action, "applied");
        let f = one(&report, QVARD, "failed_notification", "Q-FRESH");
        assert_eq!(f.action, "resend_skipped");
        assert!(
            f.detail.contains("retry window") && f.detail.contains("6m"),
            "{}",
            f.detail
        );
        assert_eq!(w.order("Q-FRESH").await.state, State::Final);
        assert!(lab.qvard.resends().is_empty());
        assert!(!lab
            .qvard
            .requests()
            .iter()
            .any(|r| r.contains("resend-webhook")));
        let audit = w.audit().await;
        assert_eq!(audit.len(), 1, "{audit:?}");
    })
    .await;
}
