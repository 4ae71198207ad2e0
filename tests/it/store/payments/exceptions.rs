//! Exceptions opened with the payments that cause them: a batch's exceptions commit with it or
//! not at all, and a held order's exception is opened once, on every backend.

use payrecon::domain::State;
use payrecon::store::ApplyOutcome;

use crate::store::{ctx, exec, hash, new_order, open};
use crate::support;
use payrecon_testkit::inspect::Inspect;

use super::{credit, payments, step};

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
