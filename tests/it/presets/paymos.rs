//! Paymos (failed-events list only): each event is applied at once, resent only once its
//! retry window (16h) has passed, and at most once per cooldown; an event in a state the
//! status map does not know is rejected.

use payrecon::domain::State;

use super::{of, one, others_quiet, Lab, PAYMOS};
use crate::reconcile::{entry, gaps, on_backends, payee, usdt};
use payrecon_testkit::inspect::Inspect;

#[tokio::test]
async fn paymos_failed_events_are_applied_and_resent_after_the_retry_window_once() {
    on_backends(|url| async move {
        let Some(lab) = Lab::start(&url).await else {
            return;
        };
        let w = &lab.w;
        w.orders(&[
            ("P-OLD", &payee(1), usdt(25)),
            ("P-NEW", &payee(2), usdt(30)),
            ("P-REF", &payee(3), usdt(15)),
        ])
        .await;
        let old = w.pay(&payee(1), usdt(25)).await;
        let new = w.pay(&payee(2), usdt(30)).await;
        let refd = w.pay(&payee(3), usdt(15)).await;
        w.anvil.mine(70).await;
        let (li_old, li_new) = (lab.log_index(&old).await, lab.log_index(&new).await);
        let li_ref = lab.log_index(&refd).await;
        // Paymos gave up on this one (11 attempts over 16 hours) ...
        lab.paymos_event(
            "evt_old",
            "P-OLD",
            &old,
            li_old,
            usdt(25),
            "completed",
            17 * 60,
            11,
        );
        // ... is still retrying this one ...
        lab.paymos_event("evt_new", "P-NEW", &new, li_new, usdt(30), "final", 60, 4);
        // ... and reports this one in a state its status map does not know.
        lab.paymos_event(
            "evt_ref",
            "P-REF",
            &refd,
            li_ref,
            usdt(15),
            "refunded",
            17 * 60,
            11,
        );

        let report = lab.run().await;

        let p = entry(&report, PAYMOS);
        assert_eq!(
            (p.kind.as_str(), p.status.as_str(), p.error.as_deref()),
            ("http", "ok", None),
            "{}",
            report.to_json()
        );
        assert_eq!(gaps(p), [2, 0, 2, 0, 0, 0], "{}", report.to_json());
        assert_eq!((p.checked, p.applied, p.rejected), (2, 2, 1));
        assert_eq!(
            (p.resends.requested, p.resends.skipped, p.resends.failed),
            (1, 1, 0)
        );
        others_quiet(&report, PAYMOS);
        for (r, tx, li, amount) in [
            ("P-OLD", &old, li_old, "25000000"),
            ("P-NEW", &new, li_new, "30000000"),
        ] {
            let o = w.order(r).await;
            assert_eq!(o.state, State::Final, "{r}");
            assert_eq!(o.tx_hash.as_deref(), Some(tx.as_str()), "{r}");
            assert_eq!(o.log_index, Some(li), "{r}");
            assert_eq!(o.amount_paid.as_deref(), Some(amount), "{r}");
            assert_eq!(one(&report, PAYMOS, "missing", r).action, "applied");
        }
        let r = w.order("P-REF").await;
        assert_eq!((r.state, r.tx_hash), (State::Unpaid, None));
        let f_old = one(&report, PAYMOS, "failed_notification", "P-OLD");
        assert_eq!(f_old.action, "resend_requested");
        let f_new = one(&report, PAYMOS, "failed_notification", "P-NEW");
        assert_eq!(f_new.action, "resend_skipped");
        assert!(
            f_new.detail.contains("retry window") && f_new.detail.contains("16h"),
            "{}",
            f_new.detail
        );
        assert_eq!(lab.paymos.resends(), ["evt_old"]);
        assert_eq!(
            lab.paymos.attempts("evt_old"),
            Some(0),
            "the resend reset it"
        );
        assert_eq!(lab.paymos.attempts("evt_new"), Some(4));
        let audit = w.store().transitions().await.unwrap();
        assert_eq!(audit.len(), 2, "{audit:?}");
        assert!(audit.iter().all(|t| t.source == "reconcile"
            && t.provider == PAYMOS
            && t.from_state == State::Unpaid
            && t.to_state == State::Final));

        // Both events are still on the failed list: no transition, no resend (cooldown for
        // the old one, retry window for the new one), the rejection counted again.
        let again = lab.run().await;
        let p = entry(&again, PAYMOS);
        assert_eq!(
            (p.status.as_str(), p.checked, p.applied, p.rejected),
            ("ok", 2, 0, 1)
        );
        assert_eq!(gaps(p), [0, 0, 2, 0, 0, 0], "{}", again.to_json());
        assert_eq!((p.resends.requested, p.resends.skipped), (0, 2));
        let f_old = one(&again, PAYMOS, "failed_notification", "P-OLD");
        assert_eq!(f_old.action, "resend_skipped");
        assert!(f_old.detail.contains("cooldown"), "{}", f_old.detail);
        let f_new = one(&again, PAYMOS, "failed_notification", "P-NEW");
        assert_eq!(f_new.action, "resend_skipped");
        assert!(f_new.detail.contains("retry window"), "{}", f_new.detail);
        assert_eq!(lab.paymos.resend_count("evt_old"), 1);
        assert_eq!(lab.paymos.resend_count("evt_new"), 0);
        assert_eq!(w.store().transitions().await.unwrap().len(), 2);
        assert!(of(&again, PAYMOS, "missing").is_empty());
        assert_eq!(again.totals.applied, 0);
    })
    .await;
}
