//! Applying transitions: monotonic, audited once, payment keys never shared, also with
//! eight racing pools and the merchant's handler writing at the same time.

use std::collections::HashMap;

use payrecon::domain::{PlannedTransition, State};
use payrecon::store::{ApplyOutcome, Source, Store};

use super::{ctx, exec, hash, id_of, new_order, open, plan};
use crate::support;
use payrecon_testkit::inspect::Inspect;

#[tokio::test]
async fn a_jump_is_one_audit_row_and_a_replay_is_backwards() {
    let (_dir, urls) = support::all_backends().await;
    for url in &urls {
        let store = open(url).await;
        store
            .insert_orders(&[new_order("A-1", 1, 25_000_000)])
            .await
            .unwrap();
        let t = plan(&store, "A-1", State::Final, Some((1, 7, 25_000_000))).await;
        let out = store.apply(std::slice::from_ref(&t), &ctx()).await.unwrap();
        assert_eq!(
            out,
            [ApplyOutcome::Applied {
                from: State::Unpaid
            }],
            "{url}"
        );

        let snap = store.order_by_ref("A-1").await.unwrap().unwrap();
        assert_eq!(snap.state, State::Final);
        assert_eq!(snap.tx_hash.as_deref(), Some(hash(1).as_str()));
        assert_eq!(snap.log_index, Some(7));
        assert_eq!(snap.amount_paid.as_deref(), Some("25000000"));
        assert_eq!(snap.block_number, Some(1001));
        assert_eq!(snap.block_hash.as_deref(), Some(hash(5001).as_str()));

        let audit = store.transitions().await.unwrap();
        assert_eq!(audit.len(), 1, "{url}");
        assert_eq!(audit[0].order_ref, "A-1");
        assert_eq!(
            (audit[0].from_state, audit[0].to_state),
            (State::Unpaid, State::Final)
        );
        assert_eq!(
            (audit[0].source.as_str(), audit[0].provider.as_str()),
            ("reconcile", "cg")
        );
        assert_eq!(audit[0].run_id.as_deref(), Some("run-1"));

        let again = store.apply(&[t], &ctx()).await.unwrap();
        assert_eq!(again, [ApplyOutcome::Backwards]);
        let back = plan(&store, "A-1", State::Pending, None).await;
        assert_eq!(
            store.apply(&[back], &ctx()).await.unwrap(),
            [ApplyOutcome::Backwards]
        );
        assert_eq!(store.count("payrecon_transitions").await.unwrap(), 1);
        assert_eq!(
            store.order_by_ref("A-1").await.unwrap().unwrap().state,
            State::Final
        );
    }
}

#[tokio::test]
async fn a_transition_without_attach_leaves_the_payment_columns_alone() {
    let (_dir, urls) = support::all_backends().await;
    for url in &urls {
        let store = open(url).await;
        store
            .insert_orders(&[new_order("A-1", 1, 10)])
            .await
            .unwrap();
        let t = plan(&store, "A-1", State::Pending, Some((3, 1, 9))).await;
        store.apply(&[t], &ctx()).await.unwrap();
        let before = store.order_by_ref("A-1").await.unwrap().unwrap();
        let webhook = payrecon::store::ApplyContext {
            source: Source::Webhook,
            provider: "qvard".into(),
            run_id: String::new(),
            events: false,
            retries: Default::default(),
        };
        let t = plan(&store, "A-1", State::Confirmed, None).await;
        let out = store.apply(&[t], &webhook).await.unwrap();
        assert_eq!(
            out,
            [ApplyOutcome::Applied {
                from: State::Pending
            }],
            "{url}"
        );
        let after = store.order_by_ref("A-1").await.unwrap().unwrap();
        assert_eq!(after.state, State::Confirmed);
        assert_eq!(
            (
                after.tx_hash,
                after.log_index,
                after.amount_paid,
                after.block_number
            ),
            (
                before.tx_hash,
                before.log_index,
                before.amount_paid,
                before.block_number
            )
        );
        let audit = store.transitions().await.unwrap();
        assert_eq!(audit[1].source, "webhook");
        assert_eq!(audit[1].run_id, None);
    }
}

#[tokio::test]
async fn a_key_held_by_another_order_is_a_duplicate_and_leaves_both_alone() {
    let (_dir, urls) = support::all_backends().await;
    for url in &urls {
        let store = open(url).await;
        store
            .insert_orders(&[new_order("A-1", 1, 10), new_order("B-1", 1, 10)])
            .await
            .unwrap();
        let a = plan(&store, "A-1", State::Confirmed, Some((1, 0, 10))).await;
        store.apply(&[a], &ctx()).await.unwrap();
        let a_before = store.order_by_ref("A-1").await.unwrap().unwrap();

        let b = plan(&store, "B-1", State::Final, Some((1, 0, 10))).await;
        let b_ok = plan(&store, "B-1", State::Pending, Some((2, 0, 10))).await;
        let out = store.apply(&[b, b_ok], &ctx()).await.unwrap();
        assert_eq!(
            out,
            [
                ApplyOutcome::Duplicate,
                ApplyOutcome::Applied {
                    from: State::Unpaid
                }
            ],
            "{url}"
        );
        assert_eq!(store.order_by_ref("A-1").await.unwrap().unwrap(), a_before);
        let b_now = store.order_by_ref("B-1").await.unwrap().unwrap();
        assert_eq!(b_now.state, State::Pending);
        assert_eq!(b_now.tx_hash.as_deref(), Some(hash(2).as_str()));
        // B-1 now holds tx 2: attaching tx 3 to it is refused too.
        let b3 = plan(&store, "B-1", State::Final, Some((3, 0, 10))).await;
        assert_eq!(
            store.apply(&[b3], &ctx()).await.unwrap(),
            [ApplyOutcome::Duplicate]
        );
        assert_eq!(store.count("payrecon_transitions").await.unwrap(), 2);
    }
}

#[tokio::test]
async fn the_merchant_wrote_the_same_key_first_and_payrecon_still_advances() {
    let (_dir, urls) = support::all_backends().await;
    for url in &urls {
        let store = open(url).await;
        store
            .insert_orders(&[new_order("A-1", 1, 10)])
            .await
            .unwrap();
        exec(
            &store,
            &format!(
                "UPDATE orders SET tx_hash = '{}', log_index = 4, state = 'pending' \
                 WHERE order_ref = 'A-1'",
                hash(9)
            ),
        )
        .await;
        let t = plan(&store, "A-1", State::Confirmed, Some((9, 4, 10))).await;
        let out = store.apply(&[t], &ctx()).await.unwrap();
        assert_eq!(
            out,
            [ApplyOutcome::Applied {
                from: State::Pending
            }],
            "{url}"
        );
        let snap = store.order_by_ref("A-1").await.unwrap().unwrap();
        assert_eq!(snap.amount_paid.as_deref(), Some("10"));
        assert_eq!(snap.block_number, Some(1009));
    }
}

#[tokio::test]
async fn an_audited_transition_is_not_applied_again_after_the_merchant_moved_the_row_back() {
    let (_dir, urls) = support::all_backends().await;
    for url in &urls {
        let store = open(url).await;
        store
            .insert_orders(&[new_order("A-1", 1, 10)])
            .await
            .unwrap();
        let t = plan(&store, "A-1", State::Confirmed, Some((1, 0, 10))).await;
        store.apply(std::slice::from_ref(&t), &ctx()).await.unwrap();
        assert!(crate::support::set_state_raw(&store, "A-1", State::Pending)
            .await
            .unwrap());

        let out = store.apply(&[t], &ctx()).await.unwrap();
        assert_eq!(out, [ApplyOutcome::Duplicate], "{url}");
        let snap = store.order_by_ref("A-1").await.unwrap().unwrap();
        assert_eq!(snap.state, State::Pending);
        assert_eq!(store.count("payrecon_transitions").await.unwrap(), 1);

        let fin = plan(&store, "A-1", State::Final, None).await;
        let out = store.apply(&[fin], &ctx()).await.unwrap();
        assert_eq!(
            out,
            [ApplyOutcome::Applied {
                from: State::Pending
            }]
        );
        let audit = store.transitions().await.unwrap();
        let pairs: Vec<_> = audit.iter().map(|a| (a.from_state, a.to_state)).collect();
        assert_eq!(
            pairs,
            [
                (State::Unpaid, State::Confirmed),
                (State::Pending, State::Final)
            ]
        );
    }
}

#[tokio::test]
async fn two_steps_for_one_order_in_one_batch_chain_their_from_states() {
    let (_dir, urls) = support::all_backends().await;
    for url in &urls {
        let store = open(url).await;
        store
            .insert_orders(&[new_order("A-1", 1, 10)])
            .await
            .unwrap();
        let p = plan(&store, "A-1", State::Pending, Some((1, 0, 10))).await;
        let f = plan(&store, "A-1", State::Final, None).await;
        let out = store.apply(&[p, f.clone(), f], &ctx()).await.unwrap();
        assert_eq!(
            out,
            [
                ApplyOutcome::Applied {
                    from: State::Unpaid
                },
                ApplyOutcome::Applied {
                    from: State::Pending
                },
                ApplyOutcome::Backwards
            ],
            "{url}"
        );
    }
}

const RACERS: usize = 8;
const ORDERS: usize = 24;

/// Eight pools apply the same two batches (attach + confirmed, then final) at once while the
/// merchant's handler writes `final` directly on every third order.
async fn race(url: &str, with_merchant: bool) {
    let store = open(url).await;
    let orders: Vec<_> = (0..ORDERS)
        .map(|n| new_order(&format!("R-{n}"), n as u64, 10))
        .collect();
    store.insert_orders(&orders).await.unwrap();
    let mut confirmed: Vec<PlannedTransition> = Vec::new();
    let mut fin: Vec<PlannedTransition> = Vec::new();
    for n in 0..ORDERS {
        let r = format!("R-{n}");
        confirmed.push(plan(&store, &r, State::Confirmed, Some((n as u64, 1, 10))).await);
        fin.push(plan(&store, &r, State::Final, None).await);
    }
    let mut tasks = Vec::new();
    for i in 0..RACERS {
        let pool = Store::connect(url, 2).await.unwrap();
        let (mut c, mut f) = (confirmed.clone(), fin.clone());
        if i % 2 == 1 {
            c.reverse();
            f.reverse();
        }
        tasks.push(tokio::spawn(async move {
            let mut outs = pool.apply(&c, &ctx()).await.unwrap();
            outs.extend(pool.apply(&f, &ctx()).await.unwrap());
            outs
        }));
    }
    let merchant = {
        let pool = Store::connect(url, 1).await.unwrap();
        tokio::spawn(async move {
            if with_merchant {
                for n in (0..ORDERS).step_by(3) {
                    crate::support::set_state_raw(&pool, &format!("R-{n}"), State::Final)
                        .await
                        .unwrap();
                }
            }
        })
    };
    let mut applied = 0;
    for task in tasks {
        let outs = task.await.unwrap();
        assert_eq!(outs.len(), 2 * ORDERS);
        applied += outs
            .iter()
            .filter(|o| matches!(o, ApplyOutcome::Applied { .. }))
            .count();
    }
    merchant.await.unwrap();

    let audit = store.transitions().await.unwrap();
    assert_eq!(
        applied,
        audit.len(),
        "{url}: applied outcomes vs audit rows"
    );
    let mut per: HashMap<(String, State), usize> = HashMap::new();
    for a in &audit {
        *per.entry((a.order_ref.clone(), a.to_state)).or_default() += 1;
        assert!(a.from_state < a.to_state, "{a:?}");
    }
    assert!(per.values().all(|n| *n == 1), "{url}: {per:?}");
    for n in 0..ORDERS {
        let r = format!("R-{n}");
        let snap = store.order_by_ref(&r).await.unwrap().unwrap();
        assert_eq!(snap.state, State::Final, "{url} {r}");
        if !with_merchant || n % 3 != 0 {
            // Nobody else wrote these: payrecon applied final exactly once.
            assert_eq!(per.get(&(r.clone(), State::Final)), Some(&1), "{url} {r}");
            assert_eq!(snap.tx_hash.as_deref(), Some(hash(n as u64).as_str()));
        }
    }
    assert_eq!(id_of(&store, "R-0").await, 1);
}

#[tokio::test]
async fn eight_racing_pools_apply_each_transition_once() {
    let (_dir, urls) = support::all_backends().await;
    for url in &urls {
        race(url, false).await;
    }
}

#[tokio::test]
async fn racing_pools_and_the_merchant_handler_never_double_apply() {
    let (_dir, urls) = support::all_backends().await;
    for url in &urls {
        race(url, true).await;
    }
}

/// Two pools attach the same payment keys to different orders at once (the second in reverse
/// order, inviting deadlocks): each key ends on exactly one order, the loser sees `Duplicate`.
#[tokio::test]
async fn racing_attaches_of_one_key_to_two_orders_leave_one_holder() {
    let (_dir, urls) = support::all_backends().await;
    for url in &urls {
        let store = open(url).await;
        let n_keys = 16u64;
        let orders: Vec<_> = (0..n_keys)
            .flat_map(|n| {
                [
                    new_order(&format!("X-{n}"), n, 10),
                    new_order(&format!("Y-{n}"), n, 10),
                ]
            })
            .collect();
        store.insert_orders(&orders).await.unwrap();
        let (mut xs, mut ys) = (Vec::new(), Vec::new());
        for n in 0..n_keys {
            xs.push(plan(&store, &format!("X-{n}"), State::Pending, Some((n, 0, 10))).await);
            ys.push(plan(&store, &format!("Y-{n}"), State::Pending, Some((n, 0, 10))).await);
        }
        ys.reverse();
        let (a, b) = (
            Store::connect(url, 2).await.unwrap(),
            Store::connect(url, 2).await.unwrap(),
        );
        let c = ctx();
        let (ra, rb) = tokio::join!(a.apply(&xs, &c), b.apply(&ys, &c));
        let outs: Vec<_> = ra.unwrap().into_iter().chain(rb.unwrap()).collect();
        let applied = outs
            .iter()
            .filter(|o| matches!(o, ApplyOutcome::Applied { .. }))
            .count();
        let dups = outs
            .iter()
            .filter(|o| **o == ApplyOutcome::Duplicate)
            .count();
        assert_eq!((applied, dups), (n_keys as usize, n_keys as usize), "{url}");
        for n in 0..n_keys {
            let x = store
                .order_by_ref(&format!("X-{n}"))
                .await
                .unwrap()
                .unwrap();
            let y = store
                .order_by_ref(&format!("Y-{n}"))
                .await
                .unwrap()
                .unwrap();
            let holders = [&x, &y].iter().filter(|o| o.tx_hash.is_some()).count();
            assert_eq!(holders, 1, "{url} key {n}");
            let paid = [&x, &y]
                .iter()
                .filter(|o| o.state == State::Pending)
                .count();
            assert_eq!(paid, 1, "{url} key {n}");
        }
        assert_eq!(
            store.count("payrecon_transitions").await.unwrap(),
            n_keys as i64
        );
    }
}
