//! What the chain decides: block-level log indexes, native coins, confirmations across runs,
//! amounts beyond `rust_decimal`, a provider state behind the ledger, and the chain sweep.

use payrecon::domain::{State, U256};
use payrecon::store::NewOrder;
use payrecon_testkit::sandbox::chaingateway::notification;

use super::{entry, found, gaps, on_backends, payee, usdt, World, CG, CONFS};
use crate::evm::{send_native, send_tokens_in_one_block};
use payrecon_testkit::inspect::Inspect;

#[tokio::test]
async fn several_transfers_in_one_block_attach_each_to_its_order_by_block_log_index() {
    on_backends(|url| async move {
        let Some(w) = World::start(&url).await else {
            return;
        };
        let paid = [
            (payee(1), usdt(10)),
            (payee(2), usdt(20)),
            (payee(3), usdt(30)),
        ];
        w.orders(&[
            ("B-1", &paid[0].0, paid[0].1),
            ("B-2", &paid[1].0, paid[1].1),
            ("B-3", &paid[2].0, paid[2].1),
        ])
        .await;
        let payments: Vec<(&str, U256)> = paid.iter().map(|(a, v)| (a.as_str(), *v)).collect();
        let txs = send_tokens_in_one_block(&w.anvil, &w.token, &w.payer, &payments).await;
        for (i, tx) in txs.iter().enumerate() {
            w.notify(
                &format!("60{i}"),
                tx,
                &paid[i].0,
                &(10 * (i + 1)).to_string(),
            );
        }

        let report = w.run().await;

        assert_eq!(
            gaps(entry(&report, CG)),
            [3, 0, 0, 0, 0, 0],
            "{}",
            report.to_json()
        );
        let mut indexes = Vec::new();
        let mut blocks = Vec::new();
        for (i, tx) in txs.iter().enumerate() {
            let (block, _, log_index) = w.where_is(tx).await;
            let o = w.order(&format!("B-{}", i + 1)).await;
            assert_eq!(o.tx_hash.as_deref(), Some(tx.as_str()));
            assert_eq!(o.log_index, Some(log_index), "block-level logIndex of {tx}");
            assert_eq!(o.amount_paid, Some(paid[i].1.to_string()));
            assert_eq!(o.state, State::Pending);
            indexes.push(log_index);
            blocks.push(block);
        }
        assert!(
            blocks.windows(2).all(|b| b[0] == b[1]),
            "one block: {blocks:?}"
        );
        indexes.sort();
        assert_eq!(indexes, vec![0, 1, 2]);
    })
    .await;
}

#[tokio::test]
async fn native_transfer_is_keyed_with_log_index_minus_one() {
    on_backends(|url| async move {
        let Some(w) = World::start(&url).await else {
            return;
        };
        let due = U256::from(1_000_000_000_000_000u64);
        let order = NewOrder {
            order_ref: "N-1".into(),
            chain: "ethereum".into(),
            pay_to: payee(5),
            asset: "native".into(),
            amount_due: due,
        };
        w.store().insert_orders(&[order]).await.unwrap();
        let paid = U256::from(2_000_000_000_000_000u64);
        let tx = send_native(&w.anvil, &w.payer, &payee(5), paid).await;
        let n = notification(
            "701",
            &tx,
            "native",
            &payee(5),
            Some("0.002"),
            super::minutes_ago(5),
        );
        w.cg.add_notification("ethereum", n);

        let report = w.run().await;

        assert_eq!(
            gaps(entry(&report, CG)),
            [1, 0, 0, 1, 0, 0],
            "{}",
            report.to_json()
        );
        let o = w.order("N-1").await;
        assert_eq!(o.tx_hash.as_deref(), Some(tx.as_str()));
        assert_eq!(o.log_index, Some(-1));
        assert_eq!(o.amount_paid.as_deref(), Some("2000000000000000"));
        assert_eq!(o.state, State::Pending);
        assert!(found(&report, "amount_mismatch")[0]
            .detail
            .contains("overpaid"));
    })
    .await;
}

#[tokio::test]
async fn final_order_seen_at_two_confirmations_is_refused_and_not_a_gap() {
    on_backends(|url| async move {
        let Some(w) = World::start(&url).await else {
            return;
        };
        w.orders(&[("X-1", &payee(1), usdt(60))]).await;
        let tx = w.pay(&payee(1), usdt(60)).await;
        w.anvil.mine(1).await; // 2 confirmations
        let (_, _, li) = w.where_is(&tx).await;
        w.seed("X-1", &tx, li, usdt(60), State::Final).await;
        w.notify("801", &tx, &payee(1), "60");

        let report = w.run().await;

        let cg = entry(&report, CG);
        assert_eq!(cg.refused_backwards, 1, "{}", report.to_json());
        assert_eq!(gaps(cg), [0; 6]);
        assert_eq!((cg.applied, report.totals.gaps), (0, 0));
        assert!(report.findings.is_empty());
        assert_eq!(w.order("X-1").await.state, State::Final);
        assert_eq!(w.audit().await.len(), 1, "only the handler's row");
        assert_eq!(w.store().count("payrecon_findings").await.unwrap(), 0);
    })
    .await;
}

#[tokio::test]
async fn payment_crossing_the_threshold_between_runs_gets_one_audit_row_per_state() {
    on_backends(|url| async move {
        let Some(w) = World::start(&url).await else {
            return;
        };
        w.orders(&[("T-1", &payee(1), usdt(50))]).await;
        let tx = w.pay(&payee(1), usdt(50)).await;
        w.notify("901", &tx, &payee(1), "50");

        let first = w.run().await;
        assert_eq!(w.order("T-1").await.state, State::Pending);
        assert_eq!(gaps(entry(&first, CG)), [1, 0, 0, 0, 0, 0]);

        w.anvil.mine(CONFS - 1).await; // head - block + 1 = CONFS
        let second = w.run().await;
        assert_eq!(w.order("T-1").await.state, State::Confirmed);
        assert_eq!(
            gaps(entry(&second, CG)),
            [0, 1, 0, 0, 0, 0],
            "{}",
            second.to_json()
        );

        let rows = w.store().transitions().await.unwrap();
        assert_eq!(rows.len(), 2, "{rows:?}");
        assert_eq!(
            (rows[0].from_state, rows[0].to_state),
            (State::Unpaid, State::Pending)
        );
        assert_eq!(
            (rows[1].from_state, rows[1].to_state),
            (State::Pending, State::Confirmed)
        );
        assert_eq!(rows[0].run_id.as_deref(), Some(first.run_id.as_str()));
        assert_eq!(rows[1].run_id.as_deref(), Some(second.run_id.as_str()));
        assert_eq!(w.store().count("payrecon_runs").await.unwrap(), 2);
    })
    .await;
}

#[tokio::test]
async fn amount_beyond_rust_decimal_is_applied_exactly() {
    on_backends(|url| async move {
        let Some(w) = World::start(&url).await else {
            return;
        };
        let huge = U256::from(1u8) << 200;
        w.orders(&[("H-1", &payee(1), huge)]).await;
        let tx = w.pay(&payee(1), huge).await;
        let digits = huge.to_string();
        let (int, frac) = digits.split_at(digits.len() - 6);
        w.notify("1001", &tx, &payee(1), &format!("{int}.{frac}"));

        let report = w.run().await;

        let cg = entry(&report, CG);
        assert_eq!(gaps(cg), [1, 0, 0, 0, 0, 0], "{}", report.to_json());
        assert_eq!((cg.applied, cg.rejected), (1, 0));
        let o = w.order("H-1").await;
        assert_eq!(o.amount_paid.as_deref(), Some(digits.as_str()));
        assert_eq!(o.state, State::Pending);
    })
    .await;
}

#[tokio::test]
async fn chain_sweep_advances_a_confirmed_row_to_final_without_any_provider_record() {
    on_backends(|url| async move {
        let Some(w) = World::start(&url).await else {
            return;
        };
        w.orders(&[("S-1", &payee(1), usdt(12)), ("S-2", &payee(2), usdt(13))])
            .await;
        let tx1 = w.pay(&payee(1), usdt(12)).await;
        let (_, _, li1) = w.where_is(&tx1).await;
        w.seed("S-1", &tx1, li1, usdt(12), State::Confirmed).await;
        w.anvil.mine(70).await;
        // A second row, still only pending on chain: swept, nothing to do.
        let tx2 = w.pay(&payee(2), usdt(13)).await;
        let (_, _, li2) = w.where_is(&tx2).await;
        w.seed("S-2", &tx2, li2, usdt(13), State::Pending).await;

        let report = w.run().await;

        let cg = entry(&report, CG);
        assert_eq!((cg.checked, cg.applied), (0, 0));
        let sweep = entry(&report, "chain");
        assert_eq!(
            (sweep.kind.as_str(), sweep.status.as_str()),
            ("chain", "ok")
        );
        assert_eq!(gaps(sweep), [0, 1, 0, 0, 0, 0], "{}", report.to_json());
        assert_eq!((sweep.checked, sweep.applied), (2, 1));
        let lag = &found(&report, "lagging")[0];
        assert_eq!(
            (lag.provider.as_str(), lag.order_ref.as_deref()),
            ("chain", Some("S-1"))
        );
        assert_eq!(w.order("S-1").await.state, State::Final);
        assert_eq!(w.order("S-2").await.state, State::Pending);
        let rows = w.store().transitions().await.unwrap();
        let last = rows.last().unwrap();
        assert_eq!(
            (last.order_ref.as_str(), last.provider.as_str()),
            ("S-1", "chain")
        );
        assert_eq!(
            (last.from_state, last.to_state),
            (State::Confirmed, State::Final)
        );
        assert_eq!(last.source, "reconcile");
    })
    .await;
}
