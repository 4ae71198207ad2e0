//! A payment key attached to an order that already has the provider's state (the merchant's
//! handler applied Qvard's `{"id", "status"}` webhook): the webhook path worked, so this is
//! no failed notification and nothing is resent.

use payrecon::domain::State;

use super::{Lab, QVARD};
use crate::reconcile::{entry, gaps, on_backends, payee, usdt};
use payrecon_testkit::inspect::Inspect;

#[tokio::test]
async fn qvard_key_attached_to_an_order_already_final_requests_no_resend() {
    on_backends(|url| async move {
        let Some(lab) = Lab::start(&url).await else {
            return;
        };
        let w = &lab.w;
        w.orders(&[("S-2", &payee(2), usdt(30))]).await;
        let tx = w.pay(&payee(2), usdt(30)).await;
        w.anvil.mine(70).await;
        let li = lab.log_index(&tx).await;
        assert!(
            crate::support::set_state_raw(w.store(), "S-2", State::Final)
                .await
                .unwrap()
        );
        lab.qvard_payment("S-2", Some((&tx, li)), "30.00", 20);

        let report = lab.run().await;

        let q = entry(&report, QVARD);
        let o = w.order("S-2").await;
        assert_eq!((o.state, o.log_index), (State::Final, Some(li)));
        assert_eq!(o.tx_hash.as_deref(), Some(tx.as_str()));
        assert_eq!(w.store().transitions().await.unwrap().len(), 0);
        assert_eq!(
            (q.applied, q.resends.requested),
            (0, 0),
            "{}",
            report.to_json()
        );
        assert_eq!(gaps(q), [0, 0, 0, 0, 0, 0], "{}", report.to_json());
        assert!(lab.qvard.resends().is_empty(), "{:?}", lab.qvard.resends());
    })
    .await;
}

/// The same through payrecon alone: a status-only record made the order final (its
/// notification counted as failed then, and resent); the record naming the transaction only
/// adds the key, which is no second failed notification.
#[tokio::test]
async fn qvard_key_attached_after_a_status_only_record_is_no_second_failed_notification() {
    on_backends(|url| async move {
        let Some(lab) = Lab::start(&url).await else {
            return;
        };
        let w = &lab.w;
        w.orders(&[("S-3", &payee(3), usdt(25))]).await;
        let tx = w.pay(&payee(3), usdt(25)).await;
        w.anvil.mine(70).await;
        let li = lab.log_index(&tx).await;
        lab.qvard_payment("S-3", None, "25.00", 15);
        let first = lab.run().await;
        assert_eq!(gaps(entry(&first, QVARD)), [1, 0, 1, 0, 0, 0]);
        lab.qvard_payment("S-3", Some((&tx, li)), "25.00", 14);

        let again = lab.run().await;

        let q = entry(&again, QVARD);
        assert_eq!(w.order("S-3").await.log_index, Some(li));
        assert_eq!(gaps(q), [0, 0, 0, 0, 0, 0], "{}", again.to_json());
        assert_eq!((q.resends.requested, q.resends.skipped), (0, 0));
    })
    .await;
}
