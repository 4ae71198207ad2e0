//! Each gap kind of docs/reference.md §8, produced on a real chain and handled as its table
//! says.

use payrecon::domain::{State, U256};
use serde_json::json;

use super::{entry, found, gaps, ghost_hash, on_backends, payee, usdt, World, CG, CONFS};
use crate::evm::{send_nft_like, send_reverting};
use payrecon_testkit::inspect::Inspect;

#[tokio::test]
async fn missing_payment_is_attached_with_its_key_amount_block_and_chain_state() {
    on_backends(|url| async move {
        let Some(w) = World::start(&url).await else {
            return;
        };
        w.orders(&[
            ("M-old", &payee(1), usdt(25)),
            ("M-new", &payee(2), usdt(40)),
        ])
        .await;
        let old = w.pay(&payee(1), usdt(25)).await;
        w.anvil.mine(70).await; // below finalized (head - 64)
        let new = w.pay(&payee(2), usdt(40)).await;
        w.notify("101", &old, &payee(1), "25");
        w.notify("102", &new, &payee(2), "40");

        let report = w.run().await;

        let cg = entry(&report, CG);
        assert_eq!(cg.status, "ok", "{}", report.to_json());
        assert_eq!(gaps(cg), [2, 0, 0, 0, 0, 0]);
        assert_eq!((cg.checked, cg.applied, cg.refused_backwards), (2, 2, 0));
        for (r, tx, amount, state) in [
            ("M-old", &old, "25000000", State::Final),
            ("M-new", &new, "40000000", State::Pending),
        ] {
            let (block, hash, log_index) = w.where_is(tx).await;
            let o = w.order(r).await;
            assert_eq!(o.state, state, "{r}");
            assert_eq!(o.tx_hash.as_deref(), Some(tx.as_str()));
            assert_eq!(o.log_index, Some(log_index));
            assert_eq!(o.amount_paid.as_deref(), Some(amount));
            assert_eq!(o.block_number, Some(block as i64));
            assert_eq!(o.block_hash.as_deref(), Some(hash.as_str()));
        }
        let missing = found(&report, "missing");
        assert_eq!(missing.len(), 2);
        assert!(missing.iter().all(|f| f.action == "applied"));
        assert!(missing
            .iter()
            .any(|f| f.order_ref.as_deref() == Some("M-old")
                && f.local_state.as_deref() == Some("unpaid")
                && f.observed_state.as_deref() == Some("final")));
        // A jump is one audit row.
        let audit = w.audit().await;
        assert_eq!(audit.len(), 2, "{audit:?}");
        assert!(audit.contains(&(
            "M-old".into(),
            State::Unpaid,
            State::Final,
            "reconcile".into()
        )));
        assert!(audit.contains(&(
            "M-new".into(),
            State::Unpaid,
            State::Pending,
            "reconcile".into()
        )));
        assert_eq!(w.store().count("payrecon_findings").await.unwrap(), 2);
    })
    .await;
}

#[tokio::test]
async fn lagging_payment_only_moves_forward() {
    on_backends(|url| async move {
        let Some(w) = World::start(&url).await else {
            return;
        };
        w.orders(&[("L-1", &payee(1), usdt(25)), ("L-2", &payee(2), usdt(30))])
            .await;
        let tx1 = w.pay(&payee(1), usdt(25)).await;
        let tx2 = w.pay(&payee(2), usdt(30)).await;
        let (_, _, li1) = w.where_is(&tx1).await;
        let (_, _, li2) = w.where_is(&tx2).await;
        // The merchant's handler saw both as pending; the second one already as confirmed.
        w.seed("L-1", &tx1, li1, usdt(25), State::Pending).await;
        w.seed("L-2", &tx2, li2, usdt(30), State::Confirmed).await;
        w.anvil.mine(CONFS + 2).await;
        w.notify("201", &tx1, &payee(1), "25");
        w.notify("202", &tx2, &payee(2), "30");

        let report = w.run().await;

        let cg = entry(&report, CG);
        assert_eq!(gaps(cg), [0, 1, 0, 0, 0, 0], "{}", report.to_json());
        assert_eq!((cg.applied, cg.refused_backwards), (1, 0));
        let lag = found(&report, "lagging");
        assert_eq!(lag[0].order_ref.as_deref(), Some("L-1"));
        assert_eq!(lag[0].local_state.as_deref(), Some("pending"));
        assert_eq!(lag[0].observed_state.as_deref(), Some("confirmed"));
        assert_eq!(lag[0].log_index, Some(li1));
        assert_eq!(w.order("L-1").await.state, State::Confirmed);
        assert_eq!(w.order("L-2").await.state, State::Confirmed);
        // The handler's amount stays; nothing re-attached.
        assert_eq!(
            w.order("L-1").await.amount_paid.as_deref(),
            Some("25000000")
        );
        let audit = w.audit().await;
        assert_eq!(audit.len(), 3, "{audit:?}");
        assert_eq!(
            audit[2],
            (
                "L-1".into(),
                State::Pending,
                State::Confirmed,
                "reconcile".into()
            )
        );
    })
    .await;
}

#[tokio::test]
async fn failed_notification_is_applied_and_resent_once() {
    on_backends(|url| async move {
        let Some(w) = World::start(&url).await else {
            return;
        };
        w.orders(&[("F-1", &payee(1), usdt(15))]).await;
        let tx = w.pay(&payee(1), usdt(15)).await;
        w.notify("301", &tx, &payee(1), "15");
        assert!(w.cg.mark_failed("ethereum", "301"));

        let report = w.run().await;

        let cg = entry(&report, CG);
        assert_eq!(gaps(cg), [1, 0, 1, 0, 0, 0], "{}", report.to_json());
        assert_eq!(cg.checked, 1, "one record on both lists is one payment key");
        assert_eq!(
            (cg.applied, cg.resends.requested, cg.resends.skipped),
            (1, 1, 0)
        );
        assert_eq!(report.totals.resends_requested, 1);
        assert_eq!(
            w.cg.retries(),
            vec![("ethereum".to_string(), "301".to_string())]
        );
        let f = found(&report, "failed_notification");
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].action, "resend_requested");
        assert_eq!(f[0].order_ref.as_deref(), Some("F-1"));
        assert_eq!(w.order("F-1").await.state, State::Pending);

        // Still on the failed list: inside the cooldown it is not requested again.
        let again = w.run().await;
        let cg = entry(&again, CG);
        assert_eq!((cg.resends.requested, cg.resends.skipped), (0, 1));
        assert_eq!(
            found(&again, "failed_notification")[0].action,
            "resend_skipped"
        );
        assert_eq!(w.cg.retries().len(), 1);
        assert_eq!(w.audit().await.len(), 1);
    })
    .await;
}

#[tokio::test]
async fn amounts_decide_paid_a_short_payment_is_held_until_a_top_up_covers_it() {
    on_backends(|url| async move {
        let Some(w) = World::start(&url).await else {
            return;
        };
        w.orders(&[("U-1", &payee(1), usdt(25)), ("O-1", &payee(2), usdt(25))])
            .await;
        let under = w.pay(&payee(1), usdt(20)).await;
        let over = w.pay(&payee(2), usdt(30)).await;
        w.notify("401", &under, &payee(1), "20");
        w.notify("402", &over, &payee(2), "30");

        let report = w.run().await;

        let cg = entry(&report, CG);
        assert_eq!(gaps(cg), [1, 0, 0, 2, 0, 0], "{}", report.to_json());
        assert_eq!(cg.applied, 1);
        let u = w.order("U-1").await;
        let o = w.order("O-1").await;
        assert_eq!(
            (u.state, u.tx_hash.as_deref(), u.amount_paid.as_deref()),
            (State::Unpaid, None, Some("20000000"))
        );
        assert_eq!(
            (o.state, o.amount_paid.as_deref()),
            (State::Pending, Some("30000000"))
        );
        let mm = found(&report, "amount_mismatch");
        let detail = |r: &str| {
            mm.iter()
                .find(|f| f.order_ref.as_deref() == Some(r))
                .map(|f| (f.action.clone(), f.detail.clone()))
                .unwrap()
        };
        assert_eq!(
            detail("U-1"),
            (
                "held".to_string(),
                "underpaid: paid 20000000 of 25000000, short 5000000; held until covered"
                    .to_string()
            )
        );
        assert_eq!(
            detail("O-1"),
            (
                "applied".to_string(),
                "overpaid: paid 30000000 of 25000000, excess 5000000".to_string()
            )
        );
        let rows = w.store().findings().await.unwrap();
        assert_eq!(
            rows.iter().filter(|f| f.kind == "amount_mismatch").count(),
            2
        );
        let held = |n: u32| format!("payrecon_orders_held{{reason=\"underpaid\"}} {n}");
        let m = w.app.engine.metrics.encode();
        assert!(m.contains(&held(1)), "{m}");

        // A second run sees the short payment again: still held, credited once.
        let again = w.run().await;
        assert_eq!(entry(&again, CG).applied, 0);
        let u = w.order("U-1").await;
        assert_eq!(
            (u.state, u.amount_paid.as_deref()),
            (State::Unpaid, Some("20000000"))
        );
        assert_eq!(found(&again, "amount_mismatch")[0].action, "held");

        // The top-up covers it: the order moves, keyed by the top-up, paid in full.
        let top_up = w.pay(&payee(1), usdt(5)).await;
        w.notify("403", &top_up, &payee(1), "5");
        let report = w.run().await;
        let cg = entry(&report, CG);
        assert_eq!(gaps(cg), [1, 0, 0, 0, 0, 0], "{}", report.to_json());
        assert_eq!(cg.applied, 1);
        let u = w.order("U-1").await;
        assert_eq!(
            (u.state, u.tx_hash.clone(), u.amount_paid.as_deref()),
            (State::Pending, Some(top_up.to_string()), Some("25000000"))
        );
        assert!(w.app.engine.metrics.encode().contains(&held(0)));
    })
    .await;
}

#[tokio::test]
async fn unknown_payments_never_credit_anything() {
    on_backends(|url| async move {
        let Some(w) = World::start(&url).await else {
            return;
        };
        // An unpaid order waits at payee(1) for exactly what the bad records claim.
        w.orders(&[("K-1", &payee(1), usdt(9))]).await;
        let reverted = send_reverting(&w.anvil, &w.token, &w.payer, &payee(1), usdt(9)).await;
        let nft = send_nft_like(&w.anvil, &w.token, &w.payer, &payee(1), usdt(9)).await;
        let ghost = ghost_hash(1);
        let stray = w.pay(&payee(99), usdt(7)).await;
        w.notify("501", &reverted, &payee(1), "9");
        w.notify("502", &nft, &payee(1), "9");
        w.notify("503", &ghost, &payee(1), "9");
        w.notify("504", &stray, &payee(99), "7");

        let report = w.run().await;

        let cg = entry(&report, CG);
        assert_eq!(gaps(cg), [0, 0, 0, 0, 4, 0], "{}", report.to_json());
        assert_eq!((cg.checked, cg.applied, cg.rejected), (4, 0, 0));
        let unknown = found(&report, "unknown_payment");
        assert!(unknown
            .iter()
            .all(|f| f.action == "none" && f.order_ref.is_none()));
        let by_tx = |tx: &str| {
            unknown
                .iter()
                .find(|f| f.tx_hash.as_deref() == Some(tx))
                .unwrap()
        };
        assert!(
            by_tx(&reverted).detail.contains("reverted"),
            "{}",
            by_tx(&reverted).detail
        );
        assert_eq!(by_tx(&stray).observed_state.as_deref(), Some("pending"));
        assert!(by_tx(&stray).log_index.is_some());
        assert_eq!(by_tx(&ghost).observed_state, None);
        let k = w.order("K-1").await;
        assert_eq!(
            (k.state, k.tx_hash, k.amount_paid),
            (State::Unpaid, None, None)
        );
        assert!(w.audit().await.is_empty());
        let rows = w.store().findings().await.unwrap();
        assert_eq!(rows.len(), 4);
        assert!(rows
            .iter()
            .all(|f| f.kind == "unknown_payment" && f.action == "none"));
    })
    .await;
}

#[tokio::test]
async fn reorged_ledger_row_is_flagged_and_never_moved() {
    on_backends(|url| async move {
        let Some(w) = World::start(&url).await else {
            return;
        };
        w.orders(&[("R-1", &payee(1), usdt(10))]).await;
        let ghost = ghost_hash(7);
        w.seed("R-1", &ghost, 3, usdt(10), State::Pending).await;

        let report = w.run().await;

        let sweep = entry(&report, "chain");
        assert_eq!(sweep.kind, "chain");
        assert_eq!(gaps(sweep), [0, 0, 0, 0, 0, 1], "{}", report.to_json());
        assert_eq!((sweep.checked, sweep.applied), (1, 0));
        let r = &found(&report, "reorged")[0];
        assert_eq!(r.order_ref.as_deref(), Some("R-1"));
        assert_eq!(r.tx_hash.as_deref(), Some(ghost.as_str()));
        assert_eq!(
            (r.log_index, r.local_state.as_deref()),
            (Some(3), Some("pending"))
        );
        assert_eq!(r.action, "none");
        assert_eq!(w.order("R-1").await.state, State::Pending);
        assert_eq!(w.audit().await.len(), 1, "only the handler's row");
    })
    .await;
}

#[tokio::test]
async fn provider_record_for_a_held_payment_the_chain_lost_is_reorged_not_unknown() {
    on_backends(|url| async move {
        let Some(w) = World::start(&url).await else {
            return;
        };
        w.orders(&[("R-2", &payee(2), usdt(10))]).await;
        let ghost = ghost_hash(8);
        w.seed("R-2", &ghost, 0, usdt(10), State::Pending).await;
        // The provider still lists the payment the ledger holds; the chain no longer has it.
        w.notify("2001", &ghost, &payee(2), "10");

        let report = w.run().await;

        let cg = entry(&report, CG);
        assert_eq!(gaps(cg), [0, 0, 0, 0, 0, 1], "{}", report.to_json());
        assert_eq!(cg.applied, 0);
        let r = found(&report, "reorged");
        let mine: Vec<_> = r.iter().filter(|f| f.provider == CG).collect();
        assert_eq!(mine.len(), 1, "{}", report.to_json());
        assert_eq!(mine[0].order_ref.as_deref(), Some("R-2"));
        assert_eq!(mine[0].local_state.as_deref(), Some("pending"));
        assert!(found(&report, "unknown_payment").is_empty());
        assert_eq!(w.order("R-2").await.state, State::Pending);
        assert_eq!(w.audit().await.len(), 1);
    })
    .await;
}

/// A legacy token transfer with a fixed nonce and gas price: the same signed transaction
/// (same hash) can be sent again after a revert, to be re-included in another block.
async fn fixed_transfer(w: &World, nonce: u64, to: &str, amount: U256) -> String {
    let data = format!(
        "0x{:0>64}{}{:064x}",
        to.trim_start_matches("0x"),
        hex::encode(amount.to_be_bytes::<32>()),
        0
    );
    let tx = json!([{"from": w.payer, "to": w.token, "data": data, "gas": "0x40000",
        "gasPrice": "0x77359400", "nonce": format!("{nonce:#x}")}]);
    let hash = w.anvil.rpc("eth_sendTransaction", tx).await;
    let hash = hash.as_str().unwrap().to_lowercase();
    w.anvil.receipt(&hash).await;
    hash
}

#[tokio::test]
async fn a_held_payment_reincluded_in_another_block_is_reorged_then_rekeyed_by_the_sweep() {
    on_backends(|url| async move {
        let Some(w) = World::start(&url).await else {
            return;
        };
        w.orders(&[("RG-1", &payee(1), usdt(10))]).await;
        let nonce = w
            .anvil
            .rpc("eth_getTransactionCount", json!([w.payer, "latest"]))
            .await;
        let nonce =
            u64::from_str_radix(nonce.as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
        let snapshot = w.anvil.rpc("evm_snapshot", json!([])).await;
        let tx = fixed_transfer(&w, nonce, &payee(1), usdt(10)).await;
        let (block, hash, li) = w.where_is(&tx).await;
        // The handler recorded the payment in its first block.
        w.seed("RG-1", &tx, li, usdt(10), State::Pending).await;
        // Reorg: that block is dropped, the same transaction lands one block later.
        assert_eq!(
            w.anvil.rpc("evm_revert", json!([snapshot])).await,
            json!(true)
        );
        w.anvil.mine(1).await;
        assert_eq!(fixed_transfer(&w, nonce, &payee(1), usdt(10)).await, tx);
        let (block2, hash2, _) = w.where_is(&tx).await;
        assert_eq!(block2, block + 1);
        assert_ne!(hash2, hash);
        w.anvil.mine(CONFS).await; // confirmed on the new chain
        w.notify("2101", &tx, &payee(1), "10");

        let report = w.run().await;

        // The provider path flags it and leaves it alone; the chain sweep re-keys it to its
        // new block (guarded by the old values) and then advances it by the normal rules.
        let cg = entry(&report, CG);
        assert_eq!(gaps(cg), [0, 0, 0, 0, 0, 1], "{}", report.to_json());
        assert_eq!(cg.applied, 0);
        let chain = entry(&report, "chain");
        assert_eq!(gaps(chain), [0, 1, 0, 0, 0, 1], "{}", report.to_json());
        assert_eq!(chain.applied, 1);
        let o = w.order("RG-1").await;
        assert_eq!(o.state, State::Confirmed);
        assert_eq!(
            (o.block_number, o.block_hash.as_deref()),
            (Some(block2 as i64), Some(hash2.as_str()))
        );
        assert_eq!(w.audit().await.len(), 2);
        // The next run finds nothing more.
        let again = w.run().await;
        assert_eq!(gaps(entry(&again, "chain")), [0; 6], "{}", again.to_json());
        assert_eq!(gaps(entry(&again, CG)), [0; 6], "{}", again.to_json());
        assert_eq!(w.audit().await.len(), 2);
    })
    .await;
}
