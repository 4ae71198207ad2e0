//! A payment key the merchant's own code wrote into `orders` (docs/how-it-works.md,
//! "Keys the merchant's own code wrote"): the next run that reads it on chain gives it its
//! payment row (source `merchant`) with the chain's amount, and the order follows the cover
//! rule from there; nothing is credited twice.

use payrecon::domain::State;

use super::{entry, on_backends, payee, usdt, World, CG};
use crate::store::payments::payments;

#[tokio::test]
async fn a_key_the_merchant_wrote_gets_its_payment_row_at_the_next_run() {
    on_backends(|url| async move {
        let Some(w) = World::start(&url).await else {
            return;
        };
        w.orders(&[
            ("M-PAID", &payee(1), usdt(25)),
            ("M-SHORT", &payee(2), usdt(25)),
            ("M-F1", &payee(3), usdt(7)),
            ("M-F2", &payee(4), usdt(8)),
        ])
        .await;
        let paid = w.pay(&payee(1), usdt(25)).await;
        let short = w.pay(&payee(2), usdt(20)).await;
        // Two the handler already made final (the sweep rechecks them: both recorded in one
        // set-wise step, on both backends).
        for (r, n, amount) in [("M-F1", 3, 7), ("M-F2", 4, 8)] {
            let tx = w.pay(&payee(n), usdt(amount)).await;
            let (_, _, li) = w.where_is(&tx).await;
            // The handler wrote an amount of its own: the chain's replaces it.
            w.seed(r, &tx, li, usdt(amount - 1), State::Final).await;
        }
        // The merchant's handler wrote both keys: one `pending` (amount left out), one it
        // left `unpaid`; payrecon never credited either.
        let (_, _, li_paid) = w.where_is(&paid).await;
        let (_, _, li_short) = w.where_is(&short).await;
        w.seed("M-PAID", &paid, li_paid, usdt(24), State::Pending)
            .await;
        w.seed("M-SHORT", &short, li_short, usdt(25), State::Unpaid)
            .await;
        assert!(payments(w.store()).await.is_empty());
        w.anvil.mine(70).await; // below finalized (head - 64)
        w.notify("801", &short, &payee(2), "20");

        let report = w.run().await;
        let rows = payments(w.store()).await;
        let rows: Vec<(&str, &str, &str, &str)> = rows
            .iter()
            .map(|(r, _, _, a, s, src)| (r.as_str(), a.as_str(), s.as_str(), src.as_str()))
            .collect();
        let mut rows = rows;
        rows.sort();
        assert_eq!(
            rows,
            [
                ("M-F1", "7000000", "final", "merchant"),
                ("M-F2", "8000000", "final", "merchant"),
                ("M-PAID", "25000000", "final", "merchant"),
                ("M-SHORT", "20000000", "final", "merchant"),
            ],
            "{url}: {}",
            report.to_json()
        );
        let p = w.order("M-PAID").await;
        assert_eq!(
            (p.state, p.amount_paid.as_deref()),
            (State::Final, Some("25000000")),
            "{url}: the chain's amount, not the handler's"
        );
        for (r, paid) in [("M-F1", "7000000"), ("M-F2", "8000000")] {
            let o = w.order(r).await;
            assert_eq!(
                (o.state, o.amount_paid.as_deref()),
                (State::Final, Some(paid)),
                "{url}"
            );
        }
        let s = w.order("M-SHORT").await;
        assert_eq!(
            (s.state, s.amount_paid.as_deref()),
            (State::Unpaid, Some("20000000")),
            "{url}: short, held"
        );
        let cg = entry(&report, CG);
        assert_eq!(cg.gaps.amount_mismatch, 1, "{}", report.to_json());

        // The next run records nothing again, and the short order stays held.
        let again = w.run().await;
        assert_eq!(payments(w.store()).await.len(), 4, "{url}");
        assert_eq!(w.order("M-SHORT").await.state, State::Unpaid);
        assert_eq!(again.totals.applied, 0, "{}", again.to_json());
    })
    .await;
}
