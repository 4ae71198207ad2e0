//! Solana faults a real local cluster cannot show on request (SPEC §18), against the
//! stand-in node (`testkit::solana`): JSON-RPC batches used where the node takes them; a
//! signature the cluster forgets before `finalized` is `reorged`, never moved back; 429s are
//! retried; a node whose history is pruned fails the run with the reason, never reads as "gone".

use payrecon::domain::{SolanaKey, State};
use payrecon::sandbox::solana::{base58, SandboxSolana};

use super::SolWorld;
use crate::reconcile::{entry, found, on_backends};

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
