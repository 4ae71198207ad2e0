//! A held payment re-included in another block (at another log index) is re-keyed: key
//! columns updated in one guarded statement, state kept, one `reorged` finding, no
//! transition; the normal rules advance it later.

use payrecon::domain::State;

use super::{head, nonce, reorg, send, transfer_req, world, CONFS};
use crate::reconcile::{entry, found, gaps, on_backends, payee, usdt, World};

/// Pays `to` from the payer at a fixed fee; `(request, hash, block, log index)`.
async fn pay(w: &World, to: &str) -> (serde_json::Value, String, u64, i64) {
    let req = transfer_req(w, &w.payer, nonce(w, &w.payer).await, to, usdt(10), 2);
    let tx = send(w, req.clone()).await;
    let (block, _, li) = w.where_is(&tx).await;
    (req, tx, block, li)
}

/// Another account's transfer, at a higher fee, to sit before ours in the new block.
async fn other_req(w: &World) -> serde_json::Value {
    let other = w.anvil.accounts().await[1].clone();
    transfer_req(w, &other, nonce(w, &other).await, &payee(99), usdt(1), 5)
}

#[tokio::test]
async fn a_confirmed_payment_reincluded_two_blocks_later_at_another_log_index_is_rekeyed() {
    on_backends(|url| async move {
        let Some(w) = world(&url, 6, "1h").await else {
            return;
        };
        w.orders(&[("RK-1", &payee(1), usdt(10))]).await;
        let (req, tx, block, li) = pay(&w, &payee(1)).await;
        w.anvil.mine(2).await; // 3 confirmations: confirmed
        w.seed("RK-1", &tx, li, usdt(10), State::Confirmed).await;
        let (_, old_hash, _) = w.where_is(&tx).await;
        // Blocks block..block+2 are replaced; the transaction comes back in the third new
        // one (two blocks later), behind another account's transfer.
        reorg(&w, 3, vec![(other_req(&w).await, 2), (req, 2)]).await;
        let (block2, hash2, li2) = w.where_is(&tx).await;
        let receipt = w.anvil.receipt(&tx).await;
        let li2 = i64::from_str_radix(
            receipt["logs"][0]["logIndex"]
                .as_str()
                .unwrap()
                .trim_start_matches("0x"),
            16,
        )
        .unwrap_or(li2);
        assert_eq!(block2, block + 2);
        assert_ne!(hash2, old_hash);
        assert_ne!(li2, li, "re-included at another log index");

        let report = w.run().await;

        let chain = entry(&report, "chain");
        assert_eq!(gaps(chain), [0, 0, 0, 0, 0, 1], "{}", report.to_json());
        assert_eq!((chain.applied, chain.refused_backwards), (0, 0));
        let f = found(&report, "reorged")[0];
        assert_eq!(f.action, "applied", "{f:?}");
        assert_eq!(f.local_state.as_deref(), Some("confirmed"));
        assert_eq!(f.observed_state.as_deref(), Some("pending"));
        assert!(
            f.detail
                .contains(&format!("block {block} ({old_hash}) log index {li}")),
            "{}",
            f.detail
        );
        assert!(
            f.detail
                .contains(&format!("block {block2} ({hash2}) log index {li2}")),
            "{}",
            f.detail
        );
        let o = w.order("RK-1").await;
        assert_eq!(o.state, State::Confirmed);
        assert_eq!(
            (
                o.tx_hash.as_deref(),
                o.log_index,
                o.block_number,
                o.block_hash.as_deref()
            ),
            (
                Some(tx.as_str()),
                Some(li2),
                Some(block2 as i64),
                Some(hash2.as_str())
            )
        );
        assert_eq!(w.audit().await.len(), 1, "no new transition");
        // One exception for the payment (README.md, "Exceptions"), open until it is final
        // again.
        let reorged = || async {
            let f = payrecon::store::ExceptionFilter {
                kind: Some("reorged".into()),
                limit: 10,
                ..Default::default()
            };
            w.store().list_exceptions(&f).await.unwrap()
        };
        let x = reorged().await;
        assert_eq!(x.len(), 1, "{x:?}");
        assert_eq!(
            (
                x[0].status.as_str(),
                x[0].order_ref.as_deref(),
                x[0].tx_hash.as_deref()
            ),
            ("open", Some("RK-1"), Some(tx.as_str()))
        );

        // Confirmed again on the new chain: nothing to do.
        w.anvil.mine(CONFS).await;
        let again = w.run().await;
        assert_eq!(gaps(entry(&again, "chain")), [0; 6], "{}", again.to_json());
        assert_eq!(reorged().await[0].status, "open", "not final yet");
        // Deep enough: final, by the normal rules, from the new position.
        w.anvil.mine(6).await;
        let later = w.run().await;
        let chain = entry(&later, "chain");
        assert_eq!(gaps(chain), [0, 1, 0, 0, 0, 0], "{}", later.to_json());
        assert_eq!(chain.applied, 1);
        assert_eq!(w.order("RK-1").await.state, State::Final);
        // Final in the block the ledger holds: payrecon clears the exception.
        let x = reorged().await;
        assert_eq!(
            (
                x.len(),
                x[0].resolution.as_deref(),
                x[0].resolved_by.as_deref()
            ),
            (1, Some("cleared"), Some("payrecon")),
            "{x:?}"
        );
        let audit = w.audit().await;
        assert_eq!(audit.len(), 2);
        assert_eq!((audit[1].1, audit[1].2), (State::Confirmed, State::Final));
    })
    .await;
}

#[tokio::test]
async fn reorgs_of_depth_1_2_and_3_rekey_the_payment_and_keep_its_state() {
    on_backends(|url| async move {
        let Some(w) = world(&url, 64, "1h").await else {
            return;
        };
        for depth in 1..=3u64 {
            let r = format!("DP-{depth}");
            w.orders(&[(&r, &payee(depth), usdt(10))]).await;
            let (req, tx, block, li) = pay(&w, &payee(depth)).await;
            w.anvil.mine(depth - 1).await;
            assert_eq!(head(&w).await, block + depth - 1);
            w.seed(&r, &tx, li, usdt(10), State::Pending).await;
            let (_, old_hash, _) = w.where_is(&tx).await;
            // The last `depth` blocks are replaced; ours lands in the last new one.
            reorg(
                &w,
                depth,
                vec![(other_req(&w).await, depth - 1), (req, depth - 1)],
            )
            .await;
            let (block2, hash2, _) = w.where_is(&tx).await;
            assert_eq!(block2, block + depth - 1, "depth {depth}");
            assert_ne!(hash2, old_hash, "depth {depth}");

            let report = w.run().await;

            // (Earlier depths' payments may advance meanwhile: lagging, not reorged.)
            let chain = entry(&report, "chain");
            assert_eq!(gaps(chain)[5], 1, "depth {depth}: {}", report.to_json());
            let f = found(&report, "reorged")[0];
            assert_eq!(f.order_ref.as_deref(), Some(r.as_str()));
            assert_eq!(f.action, "applied", "depth {depth}: {f:?}");
            let o = w.order(&r).await;
            assert_eq!(o.state, State::Pending, "depth {depth}");
            assert_eq!(
                o.block_hash.as_deref(),
                Some(hash2.as_str()),
                "depth {depth}"
            );
            assert_eq!(o.block_number, Some(block2 as i64), "depth {depth}");
            assert_ne!(
                o.log_index,
                Some(li),
                "depth {depth}: behind the other transfer"
            );
            // Once re-keyed, the next run sees nothing wrong.
            let again = w.run().await;
            assert_eq!(
                gaps(entry(&again, "chain"))[5],
                0,
                "depth {depth}: {}",
                again.to_json()
            );
        }
        // The handler's 3 transitions, then only forward ones (earlier depths confirmed).
        let audit = w.audit().await;
        assert!(audit.iter().all(|a| a.1 < a.2), "{audit:?}");
        assert_eq!(audit.iter().filter(|a| a.3 == "webhook").count(), 3);
    })
    .await;
}

#[tokio::test]
async fn a_dry_run_reports_the_rekey_as_would_apply_and_writes_nothing() {
    on_backends(|url| async move {
        let Some(w) = world(&url, 64, "1h").await else {
            return;
        };
        w.orders(&[("DR-1", &payee(1), usdt(10))]).await;
        let (req, tx, _, li) = pay(&w, &payee(1)).await;
        w.seed("DR-1", &tx, li, usdt(10), State::Pending).await;
        let before = w.order("DR-1").await;
        reorg(&w, 1, vec![(other_req(&w).await, 0), (req, 0)]).await;

        let mut opts = crate::reconcile::opts();
        opts.dry_run = true;
        let report = w.app.engine.run(&opts).await.unwrap();

        let f = found(&report, "reorged")[0];
        assert_eq!(f.action, "would_apply", "{f:?}");
        assert_eq!(w.order("DR-1").await, before, "nothing written");
        assert_eq!(super::reorged_open(&w), 0, "re-keyable: not open");
        let real = w.run().await;
        assert_eq!(found(&real, "reorged")[0].action, "applied");
        assert_ne!(w.order("DR-1").await.block_hash, before.block_hash);
    })
    .await;
}
