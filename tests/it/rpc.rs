//! Resilient RPC and finality modes at the library level: failover between `rpc_urls`,
//! bounded attempts, `max_requests_per_second`, the start-of-run check (`preflight`), and
//! `finalized`/`safe`/`depth` on one anvil chain. The CLI side is in `rpc/cli.rs`.

use std::time::{Duration, Instant};

use payrecon::chain::{ChainClient, ChainError, ChainSettings, Finality, Lookup, TransferQuery};
use payrecon::domain::{Address, Asset, State, TxHash, U256};
use payrecon_testkit::sandbox::chain::SandboxChain;

use crate::evm::send_native;
use crate::support::Anvil;

mod cli;

fn settings(urls: &[&str]) -> ChainSettings {
    ChainSettings {
        kind: payrecon::domain::ChainKind::Evm,
        api_url: None,
        api_key: None,
        name: "ethereum".into(),
        rpc_urls: urls.iter().map(|u| u.to_string()).collect(),
        chain_id: None,
        max_requests_per_second: None,
        confirmations: 12,
        finality: Finality::Depth,
        final_depth: 64,
        batch_size: 10,
        timeout: Duration::from_secs(5),
        max_retries: 2,
        recheck_final: Duration::from_secs(3600),
        scan_unpaid: false,
        log_range: 2000,
        max_amount: None,
    }
}

fn client(s: ChainSettings) -> ChainClient {
    ChainClient::new(s).unwrap()
}

/// A loopback URL with nothing listening (connection refused): a privileged port that no
/// test binds (a free ephemeral port could be taken by another test's server meanwhile).
pub fn dead_url(n: u16) -> String {
    format!("http://127.0.0.1:{n}")
}

async fn sandbox(chain_id: u64) -> (SandboxChain, String) {
    let s = SandboxChain::new(chain_id);
    let url = s.serve().await.unwrap();
    s.mine(10);
    (s, url)
}

#[tokio::test]
async fn a_refused_first_url_fails_over_once_and_the_second_keeps_serving() {
    let (node, url) = sandbox(1).await;
    let dead = dead_url(1);
    let chain = client(settings(&[&dead, &url]));
    assert_eq!(chain.head().await.unwrap().number, 10);
    assert_eq!(chain.failovers(), 1);
    // Sticky: later requests go straight to the working URL, no new switch.
    for _ in 0..3 {
        assert_eq!(chain.chain_id().await.unwrap(), 1);
    }
    assert_eq!(chain.failovers(), 1);
    assert_eq!(node.requests(), 4);
}

#[tokio::test]
async fn server_errors_on_one_url_are_served_by_the_other_for_calls_and_batches() {
    let (a, url_a) = sandbox(1).await;
    let (b, url_b) = sandbox(1).await;
    let chain = client(settings(&[&url_a, &url_b]));
    a.fail_next(1);
    assert_eq!(chain.head().await.unwrap().number, 10);
    assert_eq!((a.requests(), b.requests()), (1, 1), "the 500, then B");
    assert_eq!(chain.failovers(), 1);

    // A batch of receipts: B now answers 500, so it goes back to A (wrapping around).
    let token = Address::parse("0xdac17f958d2ee523a2206206994597c13d831ec7").unwrap();
    let from = Address::parse("0x00000000000000000000000000000000000000fe").unwrap();
    let to = Address::parse("0x00000000000000000000000000000000000000aa").unwrap();
    let (tx, li) = a.add_token_transfer(&token, &from, &to, U256::from(7u64));
    a.mine(1);
    b.add_token_transfer(&token, &from, &to, U256::from(7u64));
    b.mine(1);
    b.fail_next(1);
    let head = chain.head().await.unwrap(); // 500 from B -> A
    let q = TransferQuery {
        tx_hash: tx,
        asset: Some(Asset::Token(token)),
        to: Some(to),
        log_index: Some(li),
    };
    let answer = chain.lookup(&head, &[q]).await.unwrap().remove(0);
    assert!(
        matches!(answer, Lookup::Found(ref t) if t.len() == 1),
        "{answer:?}"
    );
    assert_eq!(chain.failovers(), 2);
    assert_eq!((a.requests(), b.requests()), (3, 2));
}

#[tokio::test]
async fn all_urls_down_fail_after_bounded_attempts_without_credentials() {
    let urls = [
        "http://u:secretpw1@127.0.0.1:1/v3/key1secret".to_string(),
        "http://127.0.0.1:2/".to_string(),
    ];
    let chain = client(settings(&[&urls[0], &urls[1]])); // max_retries 2: 3 attempts
    let started = Instant::now();
    let err = chain.head().await.unwrap_err();
    let text = err.to_string();
    eprintln!("{text}");
    assert!(matches!(err, ChainError::Rpc { .. }), "{err:?}");
    assert!(text.contains("3 attempts over 2 URLs"), "{text}");
    for secret in ["secretpw1", "key1secret"] {
        assert!(!text.contains(secret), "{text}");
        assert!(!format!("{err:?}").contains(secret));
    }
    assert!(started.elapsed() < Duration::from_secs(5), "bounded");
}

#[tokio::test]
async fn max_requests_per_second_spaces_the_requests() {
    let (node, url) = sandbox(1).await;
    let chain = client(ChainSettings {
        max_requests_per_second: Some(20),
        ..settings(&[&url])
    });
    let started = Instant::now();
    for _ in 0..10 {
        chain.chain_id().await.unwrap();
    }
    let took = started.elapsed();
    assert_eq!(node.requests(), 10);
    assert!(
        took >= Duration::from_millis(450),
        "10 requests at 20/s took {took:?}"
    );
    // Concurrent requests share the one budget.
    let started = Instant::now();
    let calls = (0..10).map(|_| chain.chain_id());
    for r in futures::future::join_all(calls).await {
        r.unwrap();
    }
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(450), "concurrent: {took:?}");
    eprintln!("10 concurrent requests at 20/s: {took:?}");
}

#[tokio::test]
async fn preflight_checks_the_chain_id_of_every_url() {
    let (_a, url_a) = sandbox(1).await;
    let (_b, url_b) = sandbox(11155111).await;
    let creds = url_b.replace("http://", "http://user:hunter2pw@");

    let ok = client(ChainSettings {
        chain_id: Some(1),
        ..settings(&[&url_a])
    });
    let p = ok.preflight().await.unwrap();
    assert_eq!((p.chain_id, p.head.number), (Some(1), 10));
    assert!(p.unreachable.is_empty());

    let wrong = client(ChainSettings {
        chain_id: Some(1),
        ..settings(&[&url_a, &creds])
    });
    let err = wrong.preflight().await.unwrap_err();
    match &err {
        ChainError::ChainIdMismatch {
            chain,
            expected,
            actual,
            url,
        } => {
            assert_eq!(
                (chain.as_str(), *expected, *actual),
                ("ethereum", 1, 11155111)
            );
            assert_eq!(url, &url_b);
        }
        other => panic!("expected a mismatch, got {other:?}"),
    }
    let text = err.to_string();
    assert!(
        text.contains(&url_b) && !text.contains("hunter2pw"),
        "{text}"
    );
    assert!(err.is_misconfiguration());

    let disagree = client(settings(&[&url_a, &url_b]));
    let err = disagree.preflight().await.unwrap_err();
    assert!(
        matches!(err, ChainError::ChainIdsDisagree { .. }),
        "{err:?}"
    );

    // A dead backup URL: the chain passes, the URL is listed as unreachable.
    let dead = dead_url(1);
    let backup_down = client(ChainSettings {
        chain_id: Some(1),
        ..settings(&[&url_a, &dead])
    });
    let p = backup_down.preflight().await.unwrap();
    assert_eq!(p.unreachable.len(), 1);
    assert!(p.unreachable[0].contains(&dead), "{:?}", p.unreachable);

    // All down: an outage, not a misconfiguration.
    let down = client(settings(&[&dead]));
    let err = down.preflight().await.unwrap_err();
    assert!(!err.is_misconfiguration(), "{err:?}");
}

#[tokio::test]
async fn finalized_safe_and_depth_give_the_expected_states_on_one_anvil_chain() {
    let Some(anvil) = Anvil::start().await else {
        return;
    };
    let acc = anvil.accounts().await;
    anvil.mine(60).await;
    let tx = send_native(&anvil, &acc[0], &acc[1], U256::from(1_000u64)).await;
    anvil.mine(40).await; // the transfer is at head - 40: 41 confirmations
    let q = TransferQuery {
        tx_hash: TxHash::parse(&tx).unwrap(),
        asset: Some(Asset::Native),
        to: Some(Address::parse(&acc[1]).unwrap()),
        log_index: None,
    };
    let cases = [
        (Finality::Finalized, 64, State::Confirmed), // finalized = head - 64
        (Finality::Safe, 64, State::Final),          // safe = head - 32
        (Finality::Depth, 50, State::Confirmed),
        (Finality::Depth, 41, State::Final),
        (Finality::Depth, 30, State::Final),
    ];
    for (finality, final_depth, want) in cases {
        let chain = client(ChainSettings {
            finality,
            final_depth,
            ..settings(&[&anvil.url])
        });
        let head = chain.head().await.unwrap();
        let block = anvil.receipt(&tx).await["blockNumber"]
            .as_str()
            .unwrap()
            .to_string();
        let block = u64::from_str_radix(block.trim_start_matches("0x"), 16).unwrap();
        assert_eq!(head.number - block, 40);
        match chain
            .lookup(&head, std::slice::from_ref(&q))
            .await
            .unwrap()
            .remove(0)
        {
            Lookup::Found(t) => assert_eq!(
                t[0].state, want,
                "{finality:?} final_depth {final_depth}: head {head:?}"
            ),
            other => panic!("{other:?}"),
        }
    }
}
