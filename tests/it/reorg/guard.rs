//! A reorg during a run (the chain or the ledger changes between the sweep's read and its
//! write): the re-key statement is guarded by the values read and refuses when the row
//! changed under it or the new key is taken; the conditional apply never moves a state back.

use payrecon::domain::{Attach, BlockRef, PaymentKey, PlannedTransition, State, TxHash, U256};
use payrecon::store::{ApplyContext, ApplyOutcome, NewOrder, Rekey, RekeyOutcome, Source, Store};

use crate::support;
use payrecon_testkit::inspect::Inspect;

fn tx() -> TxHash {
    TxHash::parse(&format!("0x{}", "ab".repeat(32))).unwrap()
}

fn block(n: u64) -> BlockRef {
    BlockRef {
        number: n,
        hash: format!("0x{n:064x}"),
    }
}

fn ctx() -> ApplyContext {
    ApplyContext {
        source: Source::Webhook,
        provider: "merchant".into(),
        run_id: String::new(),
        events: false,
        retries: Default::default(),
    }
}

/// Orders G-1 (log index 1, block 10) and G-2 (log index 2, block 10), both `confirmed`.
async fn ledger(url: &str) -> Store {
    let store = Store::connect(url, 2).await.unwrap();
    store.migrate().await.unwrap();
    let orders: Vec<NewOrder> = ["G-1", "G-2"]
        .iter()
        .map(|r| NewOrder {
            order_ref: r.to_string(),
            chain: "ethereum".into(),
            pay_to: "0x1111111111111111111111111111111111111111".into(),
            asset: "native".into(),
            amount_due: U256::from(5u64),
        })
        .collect();
    store.insert_orders(&orders).await.unwrap();
    for (i, r) in ["G-1", "G-2"].iter().enumerate() {
        let id = store.order_by_ref(r).await.unwrap().unwrap().id;
        let t = PlannedTransition {
            order_id: id,
            order_ref: r.to_string(),
            from: State::Unpaid,
            to: State::Confirmed,
            attach: Some(Attach {
                key: PaymentKey {
                    chain: "ethereum".into(),
                    tx_hash: tx(),
                    log_index: i as i64 + 1,
                },
                amount: U256::from(5u64),
                block: block(10),
            }),
            credit: None,
        };
        assert!(matches!(
            store.apply(&[t], &ctx()).await.unwrap()[0],
            ApplyOutcome::Applied { .. }
        ));
    }
    store
}

fn rekey(id: i64, old_li: i64, old_hash: &str, new_li: i64) -> Rekey {
    Rekey {
        order_id: id,
        chain: "ethereum".into(),
        tx_hash: tx(),
        old_log_index: old_li,
        old_block_hash: Some(old_hash.into()),
        new_log_index: new_li,
        new_block: block(12),
    }
}

#[tokio::test]
async fn the_rekey_statement_refuses_a_changed_row_and_a_taken_key() {
    let (_dir, urls) = support::all_backends().await;
    for url in &urls {
        let store = ledger(url).await;
        let g1 = store.order_by_ref("G-1").await.unwrap().unwrap();
        let h10 = block(10).hash;
        // The row no longer has the block the sweep read (another instance moved it, or the
        // merchant's handler rewrote it): refused.
        let stale = rekey(g1.id, 1, &block(11).hash, 5);
        assert_eq!(
            store.rekey(&stale).await.unwrap(),
            RekeyOutcome::Changed,
            "{url}"
        );
        let stale_li = rekey(g1.id, 3, &h10, 5);
        assert_eq!(
            store.rekey(&stale_li).await.unwrap(),
            RekeyOutcome::Changed,
            "{url}"
        );
        // G-2 holds log index 2: never a unique-index crash, an outcome.
        let collide = rekey(g1.id, 1, &h10, 2);
        assert_eq!(
            store.rekey(&collide).await.unwrap(),
            RekeyOutcome::Collision,
            "{url}"
        );
        assert_eq!(
            store.order_by_ref("G-1").await.unwrap().unwrap(),
            g1,
            "{url}: untouched"
        );
        // The guarded re-key itself: key columns only, state and audit untouched.
        let good = rekey(g1.id, 1, &h10, 5);
        assert_eq!(
            store.rekey(&good).await.unwrap(),
            RekeyOutcome::Rekeyed,
            "{url}"
        );
        let after = store.order_by_ref("G-1").await.unwrap().unwrap();
        assert_eq!(after.state, State::Confirmed);
        assert_eq!(
            (after.log_index, after.block_number, after.block_hash),
            (Some(5), Some(12), Some(block(12).hash)),
            "{url}"
        );
        assert_eq!(store.transitions().await.unwrap().len(), 2, "{url}");
        // A second writer with the same (now stale) read: refused, nothing moves twice.
        assert_eq!(
            store.rekey(&good).await.unwrap(),
            RekeyOutcome::Changed,
            "{url}"
        );
    }
}

#[tokio::test]
async fn a_transition_planned_before_the_ledger_moved_on_never_goes_backwards() {
    let (_dir, urls) = support::all_backends().await;
    for url in &urls {
        let store = ledger(url).await;
        let g1 = store.order_by_ref("G-1").await.unwrap().unwrap();
        // Planned from a read where G-1 was pending; meanwhile it is confirmed, and the
        // chain (after a reorg) only shows it pending: the conditional apply refuses.
        let t = PlannedTransition {
            order_id: g1.id,
            order_ref: "G-1".into(),
            from: State::Unpaid,
            to: State::Pending,
            attach: None,
            credit: None,
        };
        let out = store.apply(&[t], &ctx()).await.unwrap();
        assert_eq!(out, [ApplyOutcome::Backwards], "{url}");
        assert_eq!(
            store.order_by_ref("G-1").await.unwrap().unwrap().state,
            State::Confirmed
        );
        assert_eq!(store.transitions().await.unwrap().len(), 2, "{url}");
    }
}
