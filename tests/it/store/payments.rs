//! `payrecon_payments` (docs/reference.md §3) on every backend: the migration that gives every
//! paid order its payment row, a held credit and the top-up that completes it, the guard on the
//! amount before a credit, and a payment that can credit one order only.

use std::path::Path;

use payrecon::domain::{Attach, BlockRef, LedgerView, NewPayment, PlannedTransition, State, U256};
use payrecon::store::{ApplyOutcome, Store};

use super::{ctx, exec, hash, id_of, key, new_order, open, slot};
use crate::support;
use payrecon_testkit::inspect::Inspect;

/// `(order_ref, tx_hash, log_index, amount, state, source)` of every payment row, by id.
pub async fn payments(store: &Store) -> Vec<(String, String, i64, String, String, String)> {
    let text = match store {
        Store::MySql(_) => "CHAR",
        _ => "TEXT",
    };
    let sql = format!(
        "SELECT CAST(o.order_ref AS {text}), p.tx_hash, p.log_index, CAST(p.amount AS {text}), \
         p.state, p.source FROM payrecon_payments p JOIN orders o ON o.id = p.order_id \
         ORDER BY p.id"
    );
    payrecon_testkit::on_pool!(store, p => sqlx::query_as(&sql).fetch_all(p).await).unwrap()
}

fn block(n: u64) -> BlockRef {
    BlockRef {
        number: 1000 + n,
        hash: hash(5000 + n),
    }
}

fn credit(n: u64, amount: u64, before: Option<u64>, after: u64) -> NewPayment {
    NewPayment {
        key: key(n, 0),
        amount: U256::from(amount),
        block: block(n),
        state: State::Final,
        paid_before: before.map(U256::from),
        paid_after: U256::from(after),
        amount_due: U256::from(25),
        block_time: None,
        held_late: false,
        merchant: false,
    }
}

async fn step(
    store: &Store,
    order_ref: &str,
    to: State,
    c: NewPayment,
    attach: Option<(u64, u64)>,
) -> PlannedTransition {
    PlannedTransition {
        order_id: id_of(store, order_ref).await,
        order_ref: order_ref.into(),
        from: State::Unpaid,
        to,
        attach: attach.map(|(n, paid)| Attach {
            key: key(n, 0),
            amount: U256::from(paid),
            block: block(n),
        }),
        credit: Some(c),
    }
}

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
async fn the_migration_gives_every_paid_order_its_payment_row_and_changes_nothing_else() {
    let (_dir, urls) = support::backends().await;
    for url in &urls {
        let store = Store::connect(url, 2).await.unwrap();
        // The schema as it was before payments (migrations 1..=8).
        let dir = if url.starts_with("sqlite") {
            "sqlite"
        } else {
            "postgres"
        };
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("migrations")
            .join(dir);
        let mut old = sqlx::migrate::Migrator::new(path).await.unwrap();
        old.migrations = old
            .migrations
            .iter()
            .filter(|m| m.version < 9)
            .cloned()
            .collect::<Vec<_>>()
            .into();
        payrecon_testkit::on_pool!(&store, p => old.run(p).await.unwrap());
        store
            .insert_orders(&[
                new_order("BY-PAYRECON", 1, 25),
                new_order("BY-MERCHANT", 2, 25),
                new_order("KEYED-UNPAID", 3, 25),
                new_order("NO-AMOUNT", 4, 25),
                new_order("UNPAID", 5, 25),
            ])
            .await
            .unwrap();
        for (r, n, state, amount) in [
            ("BY-PAYRECON", 1, "final", "30"),
            ("BY-MERCHANT", 2, "confirmed", "25"),
            ("KEYED-UNPAID", 3, "unpaid", "25"),
        ] {
            exec(
                &store,
                &format!(
                    "UPDATE orders SET tx_hash = '{}', log_index = 0, amount_paid = {amount}, \
                     block_number = 7, block_hash = '{}', state = '{state}' \
                     WHERE order_ref = '{r}'",
                    hash(n),
                    hash(100 + n)
                ),
            )
            .await;
        }
        exec(
            &store,
            &format!(
                "UPDATE orders SET tx_hash = '{}', log_index = 0, state = 'final' \
                 WHERE order_ref = 'NO-AMOUNT'",
                hash(4)
            ),
        )
        .await;
        let id = id_of(&store, "BY-PAYRECON").await;
        exec(
            &store,
            &format!(
                "INSERT INTO payrecon_transitions (order_id, from_state, to_state, source, \
                 provider, run_id) VALUES ({id}, 'unpaid', 'final', 'webhook', 'qv', 'r-1')"
            ),
        )
        .await;
        let before = snapshot(&store).await;

        store.migrate().await.unwrap();
        let rows = payments(&store).await;
        let got: Vec<(&str, &str, &str, &str)> = rows
            .iter()
            .map(|r| (r.0.as_str(), r.3.as_str(), r.4.as_str(), r.5.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("BY-PAYRECON", "30", "final", "webhook"),
                ("BY-MERCHANT", "25", "confirmed", "merchant"),
            ],
            "{url}"
        );
        assert_eq!(snapshot(&store).await, before, "{url}: no order changed");
        assert_eq!(store.count("payrecon_events").await.unwrap(), 0);
        assert_eq!(store.count("payrecon_transitions").await.unwrap(), 1);
        // Nothing to hold for the migrated rows: they keep their keys.
        let view = store.load_view(&[key(1, 0)], &[]).await.unwrap();
        assert_eq!(view.by_key[&key(1, 0)].order_ref, "BY-PAYRECON");
    }
}

/// Every order's payment columns and state, as text.
async fn snapshot(store: &Store) -> Vec<String> {
    let mut out = Vec::new();
    for r in [
        "BY-PAYRECON",
        "BY-MERCHANT",
        "KEYED-UNPAID",
        "NO-AMOUNT",
        "UNPAID",
    ] {
        out.push(format!(
            "{:?}",
            store.order_by_ref(r).await.unwrap().unwrap()
        ));
    }
    out
}

/// Migration 0010 (payment events) on a database with events: every row kept, `seq` in
/// transition order, the NOT NULL on `transition_id` gone, exactly one cause checked.
#[tokio::test]
async fn the_events_migration_keeps_every_event_in_transition_order() {
    let (_dir, urls) = support::backends().await;
    for url in &urls {
        let store = Store::connect(url, 2).await.unwrap();
        let dir = if url.starts_with("sqlite") {
            "sqlite"
        } else {
            "postgres"
        };
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("migrations")
            .join(dir);
        let mut old = sqlx::migrate::Migrator::new(path).await.unwrap();
        old.migrations = old
            .migrations
            .iter()
            .filter(|m| m.version < 10)
            .cloned()
            .collect::<Vec<_>>()
            .into();
        payrecon_testkit::on_pool!(&store, p => old.run(p).await.unwrap());
        // Written out of transition order on purpose (ids are not the order).
        for (id, transition) in [("evt_b", 7), ("evt_a", 3), ("evt_c", 9)] {
            exec(
                &store,
                &format!(
                    "INSERT INTO payrecon_events (id, transition_id, order_id, type, body, \
                     created_at, next_attempt_at) VALUES ('{id}', {transition}, 1, \
                     'order.final', '{{}}', '2026-12-01T00:00:00Z', '2026-12-01T00:00:00Z')"
                ),
            )
            .await;
        }
        store.migrate().await.unwrap();
        let sql = "SELECT id FROM payrecon_events ORDER BY seq";
        let order: Vec<String> =
            payrecon_testkit::on_pool!(&store, p => sqlx::query_scalar(sql).fetch_all(p).await)
                .unwrap();
        assert_eq!(order, ["evt_a", "evt_b", "evt_c"], "{url}");
        // A payment's event (no transition) goes in after them; one with neither is refused.
        exec(
            &store,
            "INSERT INTO payrecon_events (id, payment_id, order_id, type, body, created_at, \
             next_attempt_at) VALUES ('evt_p', 1, 1, 'order.payment_received', '{}', \
             '2026-12-01T00:00:00Z', '2026-12-01T00:00:00Z')",
        )
        .await;
        let order: Vec<String> =
            payrecon_testkit::on_pool!(&store, p => sqlx::query_scalar(sql).fetch_all(p).await)
                .unwrap();
        assert_eq!(order.last().map(String::as_str), Some("evt_p"), "{url}");
        let neither = "INSERT INTO payrecon_events (id, order_id, type, body, created_at, \
                       next_attempt_at) VALUES ('evt_x', 1, 'order.final', '{}', \
                       '2026-12-01T00:00:00Z', '2026-12-01T00:00:00Z')";
        let refused =
            payrecon_testkit::on_pool!(&store, p => sqlx::query(neither).execute(p).await.is_err());
        assert!(refused, "{url}: an event needs exactly one cause");
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

/// A webhook delivery's exceptions open in the transaction of its credits
/// (`Store::apply_opening`): when they cannot be written, nothing of the batch is; when they
/// can, the held credit and its exception are there together. Their rows are made from the
/// outcomes in the caller's order (the batch itself runs sorted by payment key).
#[tokio::test]
async fn exceptions_opened_with_a_batch_commit_with_it_or_not_at_all() {
    use payrecon::store::{ExceptionFilter, FindingRow, Opening};
    let (_dir, urls) = support::all_backends().await;
    for url in &urls {
        let store = open(url).await;
        let orders = [new_order("W-1", 61, 25), new_order("W-2", 62, 25)];
        store.insert_orders(&orders).await.unwrap();
        // W-2 paid in full (key 72), W-1 held at 20 of 25 (key 71, so sorted first).
        let batch = vec![
            step(
                &store,
                "W-2",
                State::Final,
                credit(72, 25, None, 25),
                Some((72, 25)),
            )
            .await,
            step(&store, "W-1", State::Unpaid, credit(71, 20, None, 20), None).await,
        ];
        let seen = std::sync::Mutex::new(Vec::new());
        let rows = |out: &[ApplyOutcome]| {
            seen.lock().unwrap().push(out.to_vec());
            vec![FindingRow {
                provider: "cg".into(),
                kind: "amount_mismatch".into(),
                chain: "ethereum".into(),
                tx_hash: Some(hash(71)),
                log_index: Some(0),
                order_ref: Some("W-1".into()),
                local_state: Some("unpaid".into()),
                observed_state: Some("final".into()),
                action: "held".into(),
                detail: "underpaid: 20 of 25".into(),
                amount: Some("20".into()),
                asset: None,
                address: None,
            }]
        };
        let opening = Opening {
            by: "delivery",
            rows: &rows,
        };
        let away = "ALTER TABLE payrecon_exceptions RENAME TO payrecon_exceptions_away";
        exec(&store, away).await;
        let failed = store.apply_opening(&batch, &ctx(), None, &opening).await;
        assert!(failed.is_err(), "{url}: {failed:?}");
        assert_eq!(
            payments(&store).await,
            [],
            "{url}: no credit without its exception"
        );
        for r in ["W-1", "W-2"] {
            let o = store.order_by_ref(r).await.unwrap().unwrap();
            assert_eq!((o.state, o.amount_paid), (State::Unpaid, None), "{url} {r}");
        }
        assert_eq!(store.count("payrecon_transitions").await.unwrap(), 0);

        let back = "ALTER TABLE payrecon_exceptions_away RENAME TO payrecon_exceptions";
        exec(&store, back).await;
        let out = store
            .apply_opening(&batch, &ctx(), None, &opening)
            .await
            .unwrap();
        let want = [
            ApplyOutcome::Applied {
                from: State::Unpaid,
            },
            ApplyOutcome::Credited,
        ];
        assert_eq!(out, want, "{url}");
        assert_eq!(
            seen.lock().unwrap().last().map(Vec::as_slice),
            Some(&want[..]),
            "{url}: the rows see the caller's order"
        );
        assert_eq!(payments(&store).await.len(), 2, "{url}");
        let open = store
            .list_exceptions(&ExceptionFilter {
                status: Some("open".into()),
                limit: 10,
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(open.len(), 1, "{url}: {open:?}");
        assert_eq!(
            (open[0].kind.as_str(), open[0].order_ref.as_deref()),
            ("amount_mismatch", Some("W-1")),
            "{url}"
        );
    }
}

/// A held order whose exception was never opened (a credit written without findings: a
/// webhook delivery's before it opened its own, a process killed between the two) gets it
/// from `open_held_exceptions`, once, on every backend; MariaDB and MySQL refused the
/// statement (1052, `id` ambiguous in its `ON DUPLICATE KEY UPDATE`) on every run.
#[tokio::test]
async fn open_held_exceptions_opens_a_held_orders_exception_once_on_every_backend() {
    use payrecon::store::ExceptionFilter;
    let (_dir, urls) = support::all_backends().await;
    for url in &urls {
        let store = open(url).await;
        store
            .insert_orders(&[new_order("H-1", 91, 25)])
            .await
            .unwrap();
        let held = step(&store, "H-1", State::Unpaid, credit(91, 20, None, 20), None).await;
        let out = store.apply(&[held], &ctx()).await.unwrap();
        assert_eq!(out, [ApplyOutcome::Credited], "{url}");
        let now = jiff::Timestamp::now();
        let opened = store.open_held_exceptions("r-1", now, false).await;
        assert_eq!(opened.unwrap(), 1, "{url}");
        let again = store.open_held_exceptions("r-2", now, false).await;
        assert_eq!(again.unwrap(), 0, "{url}: one open exception per problem");
        let open = store
            .list_exceptions(&ExceptionFilter {
                status: Some("open".into()),
                limit: 10,
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(open.len(), 1, "{url}: {open:?}");
        assert_eq!(
            (open[0].kind.as_str(), open[0].order_ref.as_deref()),
            ("amount_mismatch", Some("H-1")),
            "{url}"
        );
    }
}
