//! A Qvard record that names no transaction: the provider's status applies to the order it
//! names (docs/configuration.md, "The generic provider"); the payment key is attached later,
//! from the record that names it.

use payrecon::domain::State;

use super::{one, Lab, QVARD};
use crate::reconcile::{entry, gaps, on_backends, payee, usdt};
use payrecon_testkit::inspect::Inspect;

#[tokio::test]
async fn qvard_status_only_record_moves_the_order_and_a_later_record_attaches_the_key() {
    on_backends(|url| async move {
        let Some(lab) = Lab::start(&url).await else {
            return;
        };
        let w = &lab.w;
        w.orders(&[("S-1", &payee(1), usdt(25))]).await;
        let tx = w.pay(&payee(1), usdt(25)).await;
        w.anvil.mine(70).await;
        let (block, hash, li) = w.where_is(&tx).await;
        lab.qvard_payment("S-1", None, "25.00", 15);

        let report = lab.run().await;

        let q = entry(&report, QVARD);
        assert_eq!(gaps(q), [1, 0, 1, 0, 0, 0], "{}", report.to_json());
        assert_eq!((q.checked, q.applied, q.resends.requested), (1, 1, 1));
        let m = one(&report, QVARD, "missing", "S-1");
        assert_eq!(
            (
                m.action.as_str(),
                m.local_state.as_deref(),
                m.observed_state.as_deref(),
                m.tx_hash.as_deref()
            ),
            ("applied", Some("unpaid"), Some("final"), None)
        );
        assert!(m.detail.contains("no transaction"), "{}", m.detail);
        let o = w.order("S-1").await;
        assert_eq!(o.state, State::Final);
        assert_eq!((o.tx_hash, o.log_index, o.amount_paid), (None, None, None));
        assert_eq!(lab.qvard.resends(), ["S-1"]);
        let audit = w.store().transitions().await.unwrap();
        assert_eq!(audit.len(), 1, "{audit:?}");
        assert_eq!(
            (
                audit[0].from_state,
                audit[0].to_state,
                audit[0].provider.as_str()
            ),
            (State::Unpaid, State::Final, QVARD)
        );

        // Qvard now lists the payment with its transaction.
        lab.qvard_payment("S-1", Some((&tx, li)), "25.00", 14);
        let again = lab.run().await;

        let q = entry(&again, QVARD);
        assert_eq!(
            (q.status.as_str(), q.checked),
            ("ok", 2),
            "{}",
            again.to_json()
        );
        let o = w.order("S-1").await;
        assert_eq!(o.state, State::Final);
        assert_eq!(o.tx_hash.as_deref(), Some(tx.as_str()));
        assert_eq!(o.log_index, Some(li));
        assert_eq!(o.amount_paid.as_deref(), Some("25000000"));
        assert_eq!(o.block_number, Some(block as i64));
        assert_eq!(o.block_hash.as_deref(), Some(hash.as_str()));
        assert_eq!(
            w.store().transitions().await.unwrap().len(),
            1,
            "no second row"
        );
        assert_eq!(q.applied, 0, "attaching a key is no transition");
        assert_eq!(lab.qvard.resends(), ["S-1"]);
    })
    .await;
}
