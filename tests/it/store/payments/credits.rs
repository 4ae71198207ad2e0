//! Crediting payments on every backend: a held credit and the top-up that completes it, the
//! guard on the amount before each credit of a batch, a payment that can credit one order only,
//! an order's earlier payments moving with it, and a held payment gone from the chain that
//! counts toward nothing until it is back.

use payrecon::domain::{LedgerView, PlannedTransition, State, U256};
use payrecon::store::ApplyOutcome;

use crate::store::{ctx, exec, hash, id_of, key, new_order, open, slot};
use crate::support;
use payrecon_testkit::inspect::Inspect;

use super::{credit, payments, step};

#[tokio::test]
async fn a_held_credit_then_a_top_up_that_completes_the_order() {
    let (_dir, urls) = support::all_backends().await;
    for url in &urls {
        let store = open(url).await;
        store
            .insert_orders(&[new_order("A-1", 1, 25)])
            .await
            .unwrap();

        let held = step(&store, "A-1", State::Unpaid, credit(1, 20, None, 20), None).await;
        let out = store
            .apply(std::slice::from_ref(&held), &ctx())
            .await
            .unwrap();
        assert_eq!(out, [ApplyOutcome::Credited], "{url}");
        let snap = store.order_by_ref("A-1").await.unwrap().unwrap();
        assert_eq!(
            (
                snap.state,
                snap.tx_hash.as_deref(),
                snap.amount_paid.as_deref()
            ),
            (State::Unpaid, None, Some("20")),
            "{url}"
        );
        assert_eq!(store.count("payrecon_transitions").await.unwrap(), 0);
        // The same credit again (a second run, another instance) writes nothing.
        let out = store.apply(&[held], &ctx()).await.unwrap();
        assert_eq!(out, [ApplyOutcome::Duplicate], "{url}");

        // The lookups find the order by its credited payment, with that payment loaded; and
        // as a partly paid order of its slot.
        let view: LedgerView = store.load_view(&[key(1, 0)], &[slot(1)]).await.unwrap();
        let row = &view.by_key[&key(1, 0)];
        assert_eq!((row.key.as_ref(), row.credits.len()), (None, 1), "{url}");
        assert_eq!(row.credits[0].amount, U256::from(20));
        assert_eq!(view.unpaid[&slot(1)][0].credits.len(), 1);
        let attached = store.attached_keys(&[key(1, 0), key(2, 0)]).await.unwrap();
        assert_eq!(attached.into_iter().collect::<Vec<_>>(), [key(1, 0)]);

        // A top-up planned on a stale amount is refused: the amount before is guarded (and
        // told from a duplicate: planned again, it is credited).
        let stale = step(
            &store,
            "A-1",
            State::Final,
            credit(2, 5, None, 5),
            Some((2, 5)),
        )
        .await;
        assert_eq!(
            store.apply(&[stale], &ctx()).await.unwrap(),
            [ApplyOutcome::Stale],
            "{url}"
        );
        let top_up = step(
            &store,
            "A-1",
            State::Final,
            credit(2, 5, Some(20), 25),
            Some((2, 25)),
        );
        let out = store.apply(&[top_up.await], &ctx()).await.unwrap();
        assert_eq!(
            out,
            [ApplyOutcome::Applied {
                from: State::Unpaid
            }],
            "{url}"
        );
        let snap = store.order_by_ref("A-1").await.unwrap().unwrap();
        assert_eq!(
            (
                snap.state,
                snap.tx_hash.clone(),
                snap.amount_paid.as_deref()
            ),
            (State::Final, Some(hash(2)), Some("25")),
            "{url}"
        );
        let rows = payments(&store).await;
        let got: Vec<(&str, i64, &str, &str)> = rows
            .iter()
            .map(|r| (r.1.as_str(), r.2, r.3.as_str(), r.5.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (hash(1).as_str(), 0, "20", "reconcile"),
                (hash(2).as_str(), 0, "5", "reconcile")
            ],
            "{url}"
        );
    }
}

/// Top-ups in a batch of several orders (the set-wise path on PostgreSQL and MariaDB/MySQL):
/// each credit is guarded by the order's amount before it. A batch in which every one holds
/// goes through whole; one planned on a stale amount is refused (`Stale`) and the others in
/// its batch still apply, on every backend.
#[tokio::test]
async fn top_ups_in_one_batch_are_each_guarded_by_the_amount_before() {
    let (_dir, urls) = support::all_backends().await;
    for url in &urls {
        let store = open(url).await;
        let orders: Vec<_> = (1..=4)
            .map(|i| new_order(&format!("T-{i}"), 40 + i, 25))
            .collect();
        store.insert_orders(&orders).await.unwrap();
        // T-1 and T-2 are held at 20 of 25.
        for (r, n) in [("T-1", 21), ("T-2", 22)] {
            let held = step(&store, r, State::Unpaid, credit(n, 20, None, 20), None).await;
            let out = store.apply(&[held], &ctx()).await.unwrap();
            assert_eq!(out, [ApplyOutcome::Credited], "{url} {r}");
        }
        let applied = ApplyOutcome::Applied {
            from: State::Unpaid,
        };
        // T-1's top-up on the amount it holds, and T-3 paid whole: both go through.
        let batch = vec![
            step(
                &store,
                "T-1",
                State::Final,
                credit(31, 5, Some(20), 25),
                Some((31, 25)),
            )
            .await,
            step(
                &store,
                "T-3",
                State::Final,
                credit(33, 25, None, 25),
                Some((33, 25)),
            )
            .await,
        ];
        let out = store.apply(&batch, &ctx()).await.unwrap();
        assert_eq!(out, [applied, applied], "{url}");
        // T-2's top-up planned as if nothing were held: refused; T-4 beside it applies.
        let batch = vec![
            step(
                &store,
                "T-2",
                State::Final,
                credit(32, 5, None, 5),
                Some((32, 5)),
            )
            .await,
            step(
                &store,
                "T-4",
                State::Final,
                credit(34, 25, None, 25),
                Some((34, 25)),
            )
            .await,
        ];
        let out = store.apply(&batch, &ctx()).await.unwrap();
        assert_eq!(out, [ApplyOutcome::Stale, applied], "{url}");
        for (r, state, paid) in [
            ("T-1", State::Final, "25"),
            ("T-2", State::Unpaid, "20"),
            ("T-3", State::Final, "25"),
            ("T-4", State::Final, "25"),
        ] {
            let o = store.order_by_ref(r).await.unwrap().unwrap();
            assert_eq!(
                (o.state, o.amount_paid.as_deref()),
                (state, Some(paid)),
                "{url} {r}"
            );
        }
        // Sorted: the ids one INSERT gives its rows follow no promised order.
        let mut rows: Vec<(String, String)> = payments(&store)
            .await
            .into_iter()
            .map(|(r, _, _, amount, _, _)| (r, amount))
            .collect();
        rows.sort();
        let want: Vec<(String, String)> = [
            ("T-1", "20"),
            ("T-1", "5"),
            ("T-2", "20"),
            ("T-3", "25"),
            ("T-4", "25"),
        ]
        .into_iter()
        .map(|(r, a)| (r.to_string(), a.to_string()))
        .collect();
        assert_eq!(
            rows, want,
            "{url}: one payment row per credit, none for the stale one"
        );
        assert_eq!(
            store.count("payrecon_transitions").await.unwrap(),
            3,
            "{url}"
        );
    }
}

#[tokio::test]
async fn a_payment_credits_one_order_only() {
    let (_dir, urls) = support::all_backends().await;
    for url in &urls {
        let store = open(url).await;
        store
            .insert_orders(&[new_order("A-1", 1, 25), new_order("A-2", 1, 25)])
            .await
            .unwrap();
        let a = step(&store, "A-1", State::Unpaid, credit(1, 20, None, 20), None).await;
        let b = step(&store, "A-2", State::Unpaid, credit(1, 20, None, 20), None).await;
        let out = store.apply(&[a, b], &ctx()).await.unwrap();
        assert_eq!(
            out,
            [ApplyOutcome::Credited, ApplyOutcome::Duplicate],
            "{url}"
        );
        let b = store.order_by_ref("A-2").await.unwrap().unwrap();
        assert_eq!(b.amount_paid, None, "{url}");
        assert_eq!(payments(&store).await.len(), 1);
        // A key the merchant's own code wrote into another order is not credited either.
        exec(
            &store,
            &format!(
                "UPDATE orders SET tx_hash = '{}', log_index = 0 WHERE order_ref = 'A-1'",
                hash(2)
            ),
        )
        .await;
        let c = step(&store, "A-2", State::Unpaid, credit(2, 20, None, 20), None).await;
        let out = store.apply(&[c], &ctx()).await.unwrap();
        assert_eq!(out, [ApplyOutcome::Duplicate], "{url}");
        assert_eq!(payments(&store).await.len(), 1);
    }
}

#[tokio::test]
async fn an_order_moving_on_moves_its_earlier_payments_with_it() {
    let (_dir, urls) = support::all_backends().await;
    for url in &urls {
        let store = open(url).await;
        store
            .insert_orders(&[new_order("A-1", 1, 100)])
            .await
            .unwrap();
        let mut first = credit(1, 60, None, 60);
        first.state = State::Pending;
        let held = step(&store, "A-1", State::Unpaid, first, None).await;
        let mut second = credit(2, 40, Some(60), 100);
        second.state = State::Pending;
        let covered = step(&store, "A-1", State::Pending, second, Some((2, 100))).await;
        store.apply(&[held, covered], &ctx()).await.unwrap();
        // The sweep moves the order (by its key, the later payment) to final.
        let id = id_of(&store, "A-1").await;
        let sweep = PlannedTransition {
            order_id: id,
            order_ref: "A-1".into(),
            from: State::Pending,
            to: State::Final,
            attach: None,
            credit: None,
        };
        let out = store.apply(&[sweep], &ctx()).await.unwrap();
        assert_eq!(
            out,
            [ApplyOutcome::Applied {
                from: State::Pending
            }],
            "{url}"
        );
        let states: Vec<String> = payments(&store).await.into_iter().map(|r| r.4).collect();
        assert_eq!(states, ["final", "final"], "{url}");
    }
}

#[tokio::test]
async fn a_held_payment_gone_from_the_chain_counts_toward_nothing_until_it_is_back() {
    let (_dir, urls) = support::all_backends().await;
    for url in &urls {
        let store = open(url).await;
        store
            .insert_orders(&[new_order("G-1", 1, 25)])
            .await
            .unwrap();
        for (n, amount, before, after) in [(1, 10, None, 10), (2, 5, Some(10), 15)] {
            let mut c = credit(n, amount, before, after);
            c.state = State::Pending;
            let held = step(&store, "G-1", State::Unpaid, c, None).await;
            let out = store.apply(&[held], &ctx()).await.unwrap();
            assert_eq!(out, [ApplyOutcome::Credited], "{url}");
        }
        let (page, _) = store.held_page(0, 100, None).await.unwrap();
        assert_eq!(page.len(), 2, "{url}");
        assert!(page.iter().all(|p| !p.gone && p.state == State::Pending));
        let paid = || async {
            let o = store.order_by_ref("G-1").await.unwrap().unwrap();
            o.amount_paid
        };
        // The first leaves the chain: flagged, and the order holds only the second.
        assert!(store.set_payment_gone(page[0].id, true).await.unwrap());
        assert_eq!(paid().await.as_deref(), Some("5"), "{url}");
        assert!(
            !store.set_payment_gone(page[0].id, true).await.unwrap(),
            "once"
        );
        let (again, _) = store.held_page(0, 100, None).await.unwrap();
        assert_eq!(
            again.iter().map(|p| p.gone).collect::<Vec<_>>(),
            [true, false]
        );
        let view: LedgerView = store.load_view(&[key(2, 0)], &[]).await.unwrap();
        let gone: Vec<bool> = view.by_key[&key(2, 0)]
            .credits
            .iter()
            .map(|c| c.gone)
            .collect();
        assert_eq!(gone, [true, false], "{url}");
        // Back: it counts again.
        assert!(store.set_payment_gone(page[0].id, false).await.unwrap());
        assert_eq!(paid().await.as_deref(), Some("15"), "{url}");
        // States follow the chain forward, never back.
        let moves = [(page[0].id, State::Final), (page[1].id, State::Confirmed)];
        assert_eq!(store.advance_payment_states(&moves).await.unwrap(), 2);
        let back = [(page[0].id, State::Pending)];
        assert_eq!(store.advance_payment_states(&back).await.unwrap(), 0);
        let rows = payments(&store).await;
        let states: Vec<&str> = rows.iter().map(|r| r.4.as_str()).collect();
        assert_eq!(states, ["final", "confirmed"], "{url}");
    }
}
