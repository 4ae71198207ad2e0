//! Whole write batches: on PostgreSQL and MariaDB/MySQL a batch in which every transition goes
//! through is one UPDATE of the orders and one audit `INSERT` (and on MariaDB/MySQL the rows
//! they wrote read back); a batch with any transition that does not falls back to row by row,
//! and the outcomes are the same on every backend either way.

use payrecon::domain::{NewPayment, PlannedTransition, State};
use payrecon::stats::statements_issued;
use payrecon::store::{ApplyOutcome, Store};

use super::{ctx, exec, hash, new_order, open, plan};
use crate::support;
use payrecon_testkit::inspect::Inspect;

const N: u64 = 100;

/// Inserts orders `{prefix}-1` to `{prefix}-N` (slot `slot + i`, `amount_due(i)`).
async fn n_orders(store: &Store, prefix: &str, slot: u64, amount_due: impl Fn(u64) -> u64) {
    let orders: Vec<_> = (1..=N)
        .map(|i| new_order(&format!("{prefix}-{i}"), slot + i, amount_due(i)))
        .collect();
    store.insert_orders(&orders).await.unwrap();
}

/// `n_orders`, and those in `keyed` keyed at `pending` as the merchant's handler does: its tx
/// hash (`hash(i)`) and log index 0 written on the order, no payment row.
async fn keyed_by_the_merchant(
    store: &Store,
    prefix: &str,
    slot: u64,
    amount_due: impl Fn(u64) -> u64,
    keyed: std::ops::RangeInclusive<u64>,
) {
    n_orders(store, prefix, slot, amount_due).await;
    for i in keyed {
        exec(
            store,
            &format!(
                "UPDATE orders SET state = 'pending', tx_hash = '{}', log_index = 0 \
                 WHERE order_ref = '{prefix}-{i}'",
                hash(i)
            ),
        )
        .await;
    }
}

/// The payment of `t`'s attach, the whole amount due, as its only payment (`merchant`: the
/// key the merchant's code wrote, recorded rather than credited).
fn credit_of(
    t: &PlannedTransition,
    state: State,
    block_time: Option<jiff::Timestamp>,
    merchant: bool,
) -> NewPayment {
    let a = t.attach.clone().expect("a step with an attach");
    NewPayment {
        key: a.key,
        amount: a.amount,
        block: a.block,
        state,
        paid_before: None,
        paid_after: a.amount,
        amount_due: a.amount,
        block_time,
        held_late: false,
        merchant,
    }
}

#[tokio::test]
async fn a_batch_that_goes_through_is_a_constant_number_of_statements() {
    let (_dir, urls) = support::all_backends().await;
    for url in &urls {
        let store = open(url).await;
        // Half keyed by the merchant's handler at `pending` (advanced without attach), half
        // unpaid (attached and advanced).
        keyed_by_the_merchant(&store, "S", 100, |_| 1_000, (N / 2 + 1)..=N).await;
        let mut batch = Vec::new();
        for i in 1..=N {
            let r = format!("S-{i}");
            batch.push(if i <= N / 2 {
                plan(&store, &r, State::Pending, Some((i, 0, 1_000))).await
            } else {
                plan(&store, &r, State::Confirmed, None).await
            });
        }
        let before = statements_issued();
        let out = store.apply(&batch, &ctx()).await.unwrap();
        let statements = statements_issued() - before;
        let expected: Vec<_> = (1..=N)
            .map(|i| ApplyOutcome::Applied {
                from: if i <= N / 2 {
                    State::Unpaid
                } else {
                    State::Pending
                },
            })
            .collect();
        assert_eq!(out, expected, "{url}");
        for i in [1, N / 2, N / 2 + 1, N] {
            let o = store
                .order_by_ref(&format!("S-{i}"))
                .await
                .unwrap()
                .unwrap();
            assert_eq!(o.tx_hash.as_deref(), Some(hash(i).as_str()), "{url} S-{i}");
            if i <= N / 2 {
                assert_eq!(o.state, State::Pending);
                assert_eq!(o.amount_paid.as_deref(), Some("1000"));
                assert_eq!(o.block_number, Some((1000 + i) as i64));
            } else {
                assert_eq!(o.state, State::Confirmed);
                assert_eq!(o.amount_paid, None, "no attach: payment columns untouched");
            }
        }
        assert_eq!(store.count("payrecon_transitions").await.unwrap(), N as i64);
        match store {
            // begin, lock, savepoint, update, insert, follow, release, commit: not one per row.
            Store::Postgres(_) => assert!(
                statements <= 10,
                "{url}: {statements} statements for a batch of {N}"
            ),
            // The same, and the keys checked first (no NOT EXISTS on the table it writes).
            Store::MySql(_) => assert!(
                statements <= 12,
                "{url}: {statements} statements for a batch of {N}"
            ),
            Store::Sqlite(_) => {}
        }
    }
}

/// A batch that credits each order its payment, attaches its key and moves it forward, with
/// events on, goes through set-wise on PostgreSQL and MariaDB/MySQL: the credits, their ids,
/// the orders, the audit rows and the events in a fixed number of statements. On every
/// backend each order gets its payment row, its amount and two events, the payment's first.
#[tokio::test]
async fn a_batch_of_credits_goes_through_in_a_constant_number_of_statements() {
    let (_dir, urls) = support::all_backends().await;
    for url in &urls {
        let store = open(url).await;
        n_orders(&store, "C", 400, |i| 2_000 + i).await;
        let mut batch = Vec::new();
        for i in 1..=N {
            let mut t = plan(
                &store,
                &format!("C-{i}"),
                State::Final,
                Some((i, 0, 2_000 + i)),
            )
            .await;
            t.credit = Some(credit_of(&t, State::Final, None, false));
            batch.push(t);
        }
        let mut ctx = ctx();
        ctx.events = true;
        let before = statements_issued();
        let out = store.apply(&batch, &ctx).await.unwrap();
        let statements = statements_issued() - before;
        let applied = ApplyOutcome::Applied {
            from: State::Unpaid,
        };
        assert_eq!(out, vec![applied; N as usize], "{url}");
        if !matches!(store, Store::Sqlite(_)) {
            assert!(
                statements <= 16,
                "{url}: {statements} statements to credit and move {N} orders"
            );
        }
        for i in [1, N / 2, N] {
            let o = store
                .order_by_ref(&format!("C-{i}"))
                .await
                .unwrap()
                .unwrap();
            assert_eq!(o.state, State::Final, "{url} C-{i}");
            assert_eq!(o.amount_paid, Some((2_000 + i).to_string()), "{url} C-{i}");
            assert_eq!(o.tx_hash.as_deref(), Some(hash(i).as_str()), "{url} C-{i}");
        }
        let n = N.to_string();
        let payments = store
            .rows(
                "SELECT COUNT(*), COUNT(CASE WHEN p.amount = o.amount_paid THEN 1 END) \
                 FROM payrecon_payments p JOIN orders o ON o.id = p.order_id",
            )
            .await
            .unwrap();
        assert_eq!(
            payments,
            vec![vec![Some(n.clone()), Some(n.clone())]],
            "{url}"
        );
        assert_eq!(store.count("payrecon_transitions").await.unwrap(), N as i64);
        // Per order, in the outbox's order: the payment's event, then the transition's.
        let events = store
            .rows("SELECT order_id, type FROM payrecon_events ORDER BY seq")
            .await
            .unwrap();
        let mut by_order: std::collections::HashMap<String, Vec<String>> = Default::default();
        for row in events {
            let (Some(order), Some(kind)) = (row[0].clone(), row[1].clone()) else {
                panic!("{url}: an event without its order or type");
            };
            by_order.entry(order).or_default().push(kind);
        }
        assert_eq!(by_order.len(), N as usize, "{url}: events of every order");
        for kinds in by_order.values() {
            assert_eq!(
                kinds,
                &["order.payment_received", "order.final"],
                "{url}: the payment's event first"
            );
        }
    }
}

#[tokio::test]
async fn a_batch_with_a_transition_that_does_not_go_through_has_row_by_row_outcomes() {
    let (_dir, urls) = support::all_backends().await;
    for url in &urls {
        let store = open(url).await;
        let orders: Vec<_> = (1..=6)
            .map(|i| new_order(&format!("F-{i}"), 200 + i, 10))
            .collect();
        store.insert_orders(&orders).await.unwrap();
        // F-1 holds tx 1; F-2 was audited at confirmed, then moved back by the merchant.
        let t = plan(&store, "F-1", State::Pending, Some((1, 0, 10))).await;
        store.apply(&[t], &ctx()).await.unwrap();
        let t = plan(&store, "F-2", State::Confirmed, Some((2, 0, 10))).await;
        store.apply(std::slice::from_ref(&t), &ctx()).await.unwrap();
        assert!(crate::support::set_state_raw(&store, "F-2", State::Pending)
            .await
            .unwrap());
        let audit_before = store.count("payrecon_transitions").await.unwrap();

        // A key another order holds (F-3 <- tx 1), an audited step again (F-2 -> confirmed),
        // two orders attaching one new key (F-4, F-5 <- tx 7), and a plain one (F-6).
        let batch = vec![
            plan(&store, "F-3", State::Pending, Some((1, 0, 10))).await,
            plan(&store, "F-2", State::Confirmed, None).await,
            plan(&store, "F-4", State::Pending, Some((7, 0, 10))).await,
            plan(&store, "F-5", State::Pending, Some((7, 0, 10))).await,
            plan(&store, "F-6", State::Final, Some((6, 0, 10))).await,
        ];
        let out = store.apply(&batch, &ctx()).await.unwrap();
        assert_eq!(
            out,
            [
                ApplyOutcome::Duplicate,
                ApplyOutcome::Duplicate,
                ApplyOutcome::Applied {
                    from: State::Unpaid
                },
                ApplyOutcome::Duplicate,
                ApplyOutcome::Applied {
                    from: State::Unpaid
                },
            ],
            "{url}"
        );
        let state = |r: &'static str| {
            let store = store.clone();
            async move { store.order_by_ref(r).await.unwrap().unwrap() }
        };
        assert_eq!(state("F-3").await.state, State::Unpaid);
        assert_eq!(state("F-3").await.tx_hash, None);
        assert_eq!(state("F-2").await.state, State::Pending);
        assert_eq!(
            state("F-4").await.tx_hash.as_deref(),
            Some(hash(7).as_str())
        );
        assert_eq!(state("F-5").await.state, State::Unpaid);
        assert_eq!(state("F-5").await.tx_hash, None);
        assert_eq!(state("F-6").await.state, State::Final);
        assert_eq!(
            store.count("payrecon_transitions").await.unwrap(),
            audit_before + 2,
            "{url}: one audit row per applied transition, none for the others"
        );
    }
}

/// Orders the merchant's handler keyed itself (a tx hash and log index, no payment row yet)
/// are recorded in a fixed number of statements whatever their count, on every backend: their
/// payment rows (source `merchant`, no event) and the chain's amount and block on the orders.
#[tokio::test]
async fn keys_the_merchant_wrote_are_recorded_in_a_constant_number_of_statements() {
    let (_dir, urls) = support::all_backends().await;
    let block_time = jiff::Timestamp::from_second(1_790_000_000).unwrap();
    for url in &urls {
        let store = open(url).await;
        keyed_by_the_merchant(&store, "M", 300, |i| 1_000 + i, 1..=N).await;
        let mut batch = Vec::new();
        for i in 1..=N {
            let mut t = plan(
                &store,
                &format!("M-{i}"),
                State::Pending,
                Some((i, 0, 1_000 + i)),
            )
            .await;
            t.credit = Some(credit_of(&t, State::Pending, Some(block_time), true));
            batch.push(t);
        }
        let mut ctx = ctx();
        ctx.events = true;
        let before = statements_issued();
        let out = store.apply(&batch, &ctx).await.unwrap();
        let statements = statements_issued() - before;
        assert_eq!(out, vec![ApplyOutcome::Attached; N as usize], "{url}");
        assert!(
            statements <= 10,
            "{url}: {statements} statements to record {N} keys the merchant wrote"
        );
        for i in [1, N / 2, N] {
            let o = store
                .order_by_ref(&format!("M-{i}"))
                .await
                .unwrap()
                .unwrap();
            assert_eq!(o.state, State::Pending, "{url} M-{i}: the state stays");
            assert_eq!(o.amount_paid, Some((1_000 + i).to_string()), "{url} M-{i}");
            assert_eq!(o.block_number, Some((1000 + i) as i64), "{url} M-{i}");
            assert_eq!(o.block_hash.as_deref(), Some(hash(5000 + i).as_str()));
        }
        let rows = store
            .rows(
                "SELECT source, COUNT(*), COUNT(CASE WHEN amount = block_number \
                 THEN 1 END), COUNT(block_time) FROM payrecon_payments GROUP BY source",
            )
            .await
            .unwrap();
        let n = N.to_string();
        assert_eq!(
            rows,
            vec![vec![
                Some("merchant".to_string()),
                Some(n.clone()),
                Some(n.clone()),
                Some(n),
            ]],
            "{url}: one merchant row per key, with its amount and block time"
        );
        assert_eq!(
            store.count("payrecon_transitions").await.unwrap(),
            0,
            "{url}"
        );
        assert_eq!(
            store.count("payrecon_events").await.unwrap(),
            0,
            "{url}: a key the merchant wrote is recorded, not credited"
        );
        // Seen again, nothing is left to record: each goes row by row and finds its key taken.
        let out = store.apply(&batch, &ctx).await.unwrap();
        assert!(
            out.iter().all(|o| *o != ApplyOutcome::Attached),
            "{url}: recorded twice: {out:?}"
        );
        assert_eq!(
            store.count("payrecon_payments").await.unwrap(),
            N as i64,
            "{url}"
        );
    }
}

/// A merchant's own `orders` table may lack payrecon's unique key on `(chain, tx_hash,
/// log_index)` (the migrations give an existing table payrecon's columns and indexes, not its
/// unique keys). The set-wise batches still refuse a key another order holds and a second step
/// attaching one key, as row by row does: the same outcomes, one holder per key.
#[tokio::test]
async fn without_the_unique_key_on_orders_a_batch_still_gives_each_key_one_holder() {
    let (_dir, urls) = support::all_backends().await;
    for url in &urls {
        let store = open(url).await;
        let drop = match store {
            Store::Postgres(_) => {
                "ALTER TABLE orders DROP CONSTRAINT orders_chain_tx_hash_log_index_key"
            }
            Store::MySql(_) => "ALTER TABLE orders DROP INDEX orders_chain_tx_hash_log_index_key",
            // (An inline constraint of SQLite's table; SQLite applies row by row anyway.)
            Store::Sqlite(_) => continue,
        };
        exec(&store, drop).await;
        let orders: Vec<_> = (1..=5)
            .map(|i| new_order(&format!("G-{i}"), 500 + i, 10))
            .collect();
        store.insert_orders(&orders).await.unwrap();
        let t = plan(&store, "G-1", State::Pending, Some((1, 0, 10))).await;
        store.apply(&[t], &ctx()).await.unwrap();
        // G-2 <- tx 1 (G-1 holds it), G-3 and G-4 <- tx 7, G-5 <- tx 5.
        let batch = vec![
            plan(&store, "G-2", State::Pending, Some((1, 0, 10))).await,
            plan(&store, "G-3", State::Pending, Some((7, 0, 10))).await,
            plan(&store, "G-4", State::Pending, Some((7, 0, 10))).await,
            plan(&store, "G-5", State::Final, Some((5, 0, 10))).await,
        ];
        let out = store.apply(&batch, &ctx()).await.unwrap();
        let applied = ApplyOutcome::Applied {
            from: State::Unpaid,
        };
        assert_eq!(
            out,
            [
                ApplyOutcome::Duplicate,
                applied,
                ApplyOutcome::Duplicate,
                applied
            ],
            "{url}"
        );
        for (r, tx) in [
            ("G-2", None),
            ("G-3", Some(7)),
            ("G-4", None),
            ("G-5", Some(5)),
        ] {
            let o = store.order_by_ref(r).await.unwrap().unwrap();
            assert_eq!(o.tx_hash, tx.map(hash), "{url} {r}");
        }
        let holders = store
            .rows("SELECT COUNT(*), COUNT(DISTINCT tx_hash) FROM orders WHERE tx_hash IS NOT NULL")
            .await
            .unwrap();
        assert_eq!(
            holders,
            vec![vec![Some("3".to_string()), Some("3".to_string())]],
            "{url}: one order per key"
        );
    }
}
