//! Solana faults a real local cluster cannot show on request (docs/configuration.md, "Solana"),
//! against the stand-in node (`testkit::solana`): JSON-RPC batches used where the node takes
//! them; a signature the cluster forgets before `finalized` is `reorged`, never moved back;
//! 429s are retried after their `Retry-After`; a node whose history is pruned fails the run
//! with the reason, never reads as "gone". The scan reads each account on from its cursor: a
//! run with nothing new reads no transaction.

use payrecon::domain::{SolanaKey, State};
use payrecon_testkit::sandbox::solana::{base58, SandboxSolana};

use super::SolWorld;
use crate::reconcile::{entry, found, on_backends, opts};

fn key(n: u8) -> String {
    SolanaKey::from_bytes([n; 32]).to_string()
}

fn sig(n: u8) -> String {
    let mut b = [n; 64];
    b[0] = 0x5a;
    base58(&b)
}

#[tokio::test]
async fn a_forgotten_signature_is_reorged_429s_are_retried_and_pruned_history_fails() {
    on_backends(|db| async move {
        let node = SandboxSolana::start().await.expect("the sandbox node");
        let w = SolWorld::start(&db, &node.url).await;
        let (payer, shop, other) = (key(1), key(2), key(3));
        w.order("F-1", &shop, "native", 1_000_000_000).await;
        let a = sig(10);
        node.pay_sol(&a, 990, &payer, &shop, 1_000_000_000);

        let report = w.run().await;
        let row = w.row("F-1").await;
        assert_eq!(row.state, State::Confirmed, "{db}: {}", report.to_json());
        assert_eq!(
            (row.tx_hash.as_deref(), row.log_index),
            (Some(a.as_str()), Some(0))
        );
        // Read in a batch (the node takes them): no single getTransaction beside it.
        let (_, batches, _) = node.requests();
        assert!(batches >= 1, "{db}: the transactions were read in a batch");
        assert_eq!(node.calls("getTransaction"), 1, "{db}");

        // The fork is dropped before finalized: reorged, the state kept.
        node.forget(&a);
        let report = w.run().await;
        let reorged = found(&report, "reorged");
        assert_eq!(reorged.len(), 1, "{db}: {}", report.to_json());
        assert_eq!(reorged[0].tx_hash.as_deref(), Some(a.as_str()));
        assert_eq!(w.row("F-1").await.state, State::Confirmed, "{db}");

        // A 429 (Retry-After: 1) is retried within max_retries; the run is whole.
        node.refuse(1);
        let report = w.run().await;
        assert_eq!(
            entry(&report, "chain").status,
            "ok",
            "{db}: {}",
            report.to_json()
        );
        assert_eq!(node.requests().2, 1, "{db}: one request refused");
        // The retry waited what the 429 asked for (Retry-After: 1), not the 100 ms backoff.
        let gap = node.retried_after().expect("a request after the refusal");
        assert!(
            gap >= std::time::Duration::from_millis(990),
            "{db}: {gap:?}"
        );

        // A signature the node has a status for but no transaction: the history is pruned.
        w.order("P-1", &other, "native", 5).await;
        let b = sig(11);
        node.pay_sol(&b, 995, &payer, &other, 5);
        node.prune(&b);
        let report = w.run().await;
        let chain = entry(&report, "chain");
        assert_eq!(chain.status, "failed", "{db}: {}", report.to_json());
        let error = chain.error.as_deref().unwrap_or_default();
        assert!(error.contains("pruned"), "{db}: {error}");
        assert_eq!(w.row("P-1").await.state, State::Unpaid, "{db}");
    })
    .await;
}

/// `payrecon_scan_cursors` (docs/configuration.md, "Solana"): once an account's newest
/// transaction is finalized and resolved, a run with nothing new lists each watched account
/// once (an empty page after its cursor) and reads no transaction; a new payment is the only
/// transaction read; a backfill (`run --since`) reads the whole window again. A final row is
/// not read again (`recheck_final` is 0s on Solana).
#[tokio::test]
async fn a_run_with_nothing_new_reads_one_page_per_account_and_no_transaction() {
    on_backends(|db| async move {
        let node = SandboxSolana::start().await.expect("the sandbox node");
        let w = SolWorld::start(&db, &node.url).await;
        let (payer, a, b) = (key(1), key(4), key(5));
        w.order("K-1", &a, "native", 1_000_000_000).await;
        w.order("K-2", &b, "native", 2_000_000_000).await;
        // Paid, not yet finalized (finalized slot 968); and b's older outgoing transaction.
        node.pay_sol(&sig(20), 990, &payer, &a, 1_000_000_000);
        node.pay_sol(&sig(21), 960, &b, &payer, 7);
        let count = || {
            (
                node.calls("getSignaturesForAddress"),
                node.calls("getTransaction"),
            )
        };

        let dry = payrecon::engine::RunOptions {
            dry_run: true,
            ..opts()
        };
        w.app.engine.run(&dry).await.expect("a dry run");
        w.run().await;
        assert_eq!(w.row("K-1").await.state, State::Confirmed, "{db}");
        node.advance(40);
        let report = w.run().await;
        assert_eq!(
            w.row("K-1").await.state,
            State::Final,
            "{db}: {}",
            report.to_json()
        );

        // Nothing new: K-2's wallet listed once, after its cursor; no transaction read.
        let before = count();
        let report = w.run().await;
        assert_eq!(
            entry(&report, "chain").status,
            "ok",
            "{db}: {}",
            report.to_json()
        );
        let (lists, reads) = count();
        assert_eq!((lists - before.0, reads - before.1), (1, 0), "{db}");

        // A backfill reads the window again: b's old transaction once more.
        let backfill = payrecon::engine::RunOptions {
            backfill: true,
            ..opts()
        };
        w.app.engine.run(&backfill).await.expect("a backfill");
        let again = count();
        assert_eq!((again.0 - lists, again.1 - reads), (1, 1), "{db}");

        // A new payment to b: the one transaction read.
        node.pay_sol(&sig(22), 1_020, &payer, &b, 2_000_000_000);
        let report = w.run().await;
        let k2 = w.row("K-2").await;
        assert_eq!(k2.state, State::Confirmed, "{db}: {}", report.to_json());
        assert_eq!(k2.tx_hash.as_deref(), Some(sig(22).as_str()), "{db}");
        assert_eq!(count().1 - again.1, 1, "{db}");
    })
    .await;
}
