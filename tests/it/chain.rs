//! The chain client against a real anvil node and against the sandbox chain.

use std::time::{Duration, Instant};

use payrecon::chain::{ChainClient, ChainError, ChainSettings, Finality, Lookup, TransferQuery};
use payrecon::domain::{Address, Asset, ChainTransfer, State, TxHash, U256};
use payrecon_testkit::sandbox::chain::{SandboxChain, Tags};

use crate::evm::{
    deploy_token, send_native, send_nft_like, send_reverting, send_token, send_tokens_in_one_block,
};
use crate::support::Anvil;

mod balances;
mod sandbox;

fn settings(url: &str) -> ChainSettings {
    ChainSettings {
        kind: payrecon::domain::ChainKind::Evm,
        api_url: None,
        api_key: None,
        name: "anvil".into(),
        rpc_urls: vec![url.into()],
        chain_id: None,
        max_requests_per_second: None,
        confirmations: 3,
        finality: Finality::Depth,
        final_depth: 10,
        batch_size: 10,
        timeout: Duration::from_secs(5),
        max_retries: 2,
        recheck_final: Duration::from_secs(3600),
        scan_unpaid: false,
        log_range: 2000,
        max_amount: None,
    }
}

fn client(url: &str) -> ChainClient {
    ChainClient::new(settings(url)).unwrap()
}

fn hash(s: &str) -> TxHash {
    TxHash::parse(s).unwrap()
}

fn addr(s: &str) -> Address {
    Address::parse(s).unwrap()
}

fn token_query(tx: &str, token: &str, to: &str) -> TransferQuery {
    TransferQuery {
        tx_hash: hash(tx),
        asset: Some(Asset::Token(addr(token))),
        to: Some(addr(to)),
        log_index: None,
    }
}

fn native_query(tx: &str, to: &str) -> TransferQuery {
    TransferQuery {
        tx_hash: hash(tx),
        asset: Some(Asset::Native),
        to: Some(addr(to)),
        log_index: None,
    }
}

/// Looks up one query at the current head.
async fn lookup_one(chain: &ChainClient, q: TransferQuery) -> Lookup {
    let head = chain.head().await.unwrap();
    chain.lookup(&head, &[q]).await.unwrap().remove(0)
}

fn found(l: Lookup) -> Vec<ChainTransfer> {
    match l {
        Lookup::Found(t) => t,
        other => panic!("expected transfers, got {other:?}"),
    }
}

fn one(l: Lookup) -> ChainTransfer {
    let mut t = found(l);
    assert_eq!(t.len(), 1, "{t:?}");
    t.remove(0)
}

fn hex_u64(v: &serde_json::Value) -> u64 {
    u64::from_str_radix(v.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
}

#[tokio::test]
async fn token_transfers_in_one_block_carry_block_level_log_indexes() {
    let Some(anvil) = Anvil::start().await else {
        return;
    };
    let acc = anvil.accounts().await;
    let token = deploy_token(&anvil).await;
    let payments = [
        (acc[1].as_str(), U256::from(25_000_000u64)),
        (acc[2].as_str(), U256::from(7u64)),
        (acc[1].as_str(), U256::from(1_000u64)),
    ];
    let txs = send_tokens_in_one_block(&anvil, &token, &acc[0], &payments).await;
    let chain = client(&anvil.url);
    let head = chain.head().await.unwrap();
    let queries: Vec<_> = txs
        .iter()
        .zip(&payments)
        .map(|(tx, (to, _))| token_query(tx, &token, to))
        .collect();
    let answers = chain.lookup(&head, &queries).await.unwrap();
    let mut indexes = Vec::new();
    for ((tx, (to, amount)), answer) in txs.iter().zip(&payments).zip(answers) {
        let t = one(answer);
        let receipt = anvil.receipt(tx).await;
        assert_eq!(
            t.key.log_index as u64,
            hex_u64(&receipt["logs"][0]["logIndex"])
        );
        assert_eq!(t.key.tx_hash.as_str(), tx);
        assert_eq!(t.key.chain, "anvil");
        assert_eq!(t.amount, *amount);
        assert_eq!(t.to.as_str(), *to);
        assert_eq!(t.asset, Asset::Token(addr(&token)));
        assert_eq!(t.block.hash, receipt["blockHash"].as_str().unwrap());
        assert_eq!(t.block.number, hex_u64(&receipt["blockNumber"]));
        indexes.push(t.key.log_index);
    }
    assert_eq!(indexes, vec![0, 1, 2], "block-level, not per transaction");
}

#[tokio::test]
async fn amounts_above_2_pow_96_decode_exactly() {
    let Some(anvil) = Anvil::start().await else {
        return;
    };
    let acc = anvil.accounts().await;
    let token = deploy_token(&anvil).await;
    let huge = U256::from(1u64) << 200;
    let tx = send_token(&anvil, &token, &acc[0], &acc[3], huge + U256::from(1u64)).await;
    let t = one(lookup_one(&client(&anvil.url), token_query(&tx, &token, &acc[3])).await);
    assert_eq!(t.amount, huge + U256::from(1u64));
}

#[tokio::test]
async fn native_transfer_has_log_index_minus_one() {
    let Some(anvil) = Anvil::start().await else {
        return;
    };
    let acc = anvil.accounts().await;
    let wei = U256::from(1_500_000_000_000_000_000u64);
    let tx = send_native(&anvil, &acc[0], &acc[4], wei).await;
    let chain = client(&anvil.url);
    let t = one(lookup_one(&chain, native_query(&tx, &acc[4])).await);
    assert_eq!(t.key.log_index, -1);
    assert_eq!(t.amount, wei);
    assert_eq!(t.asset, Asset::Native);
    let elsewhere = lookup_one(&chain, native_query(&tx, &acc[5])).await;
    assert!(matches!(elsewhere, Lookup::NoTransfer(_)), "{elsewhere:?}");
}

#[tokio::test]
async fn reverted_unknown_and_erc721_are_not_payments() {
    let Some(anvil) = Anvil::start().await else {
        return;
    };
    let acc = anvil.accounts().await;
    let token = deploy_token(&anvil).await;
    let chain = client(&anvil.url);
    let reverted = send_reverting(&anvil, &token, &acc[0], &acc[1], U256::from(5u64)).await;
    assert_eq!(anvil.receipt(&reverted).await["status"], "0x0");
    let nft = send_nft_like(&anvil, &token, &acc[0], &acc[1], U256::from(42u64)).await;
    let unknown = format!("0x{}", "ab".repeat(32));
    let head = chain.head().await.unwrap();
    let answers = chain
        .lookup(
            &head,
            &[
                token_query(&reverted, &token, &acc[1]),
                token_query(&unknown, &token, &acc[1]),
                token_query(&nft, &token, &acc[1]),
                // A real ERC-20 transfer's hash asked about another token.
                token_query(&nft, &acc[9], &acc[1]),
            ],
        )
        .await
        .unwrap();
    assert_eq!(answers[0], Lookup::Reverted);
    assert_eq!(answers[1], Lookup::NotFound);
    match &answers[2] {
        Lookup::NoTransfer(why) => assert!(why.contains("ERC-721"), "{why}"),
        other => panic!("expected NoTransfer, got {other:?}"),
    }
    match &answers[3] {
        Lookup::NoTransfer(why) => assert!(why.contains("no Transfer from"), "{why}"),
        other => panic!("expected NoTransfer, got {other:?}"),
    }
}

#[tokio::test]
async fn states_follow_confirmations_depth_and_finalized_tag() {
    let Some(anvil) = Anvil::start().await else {
        return;
    };
    let acc = anvil.accounts().await;
    let token = deploy_token(&anvil).await;
    let tx = send_token(&anvil, &token, &acc[0], &acc[1], U256::from(9u64)).await;
    let q = token_query(&tx, &token, &acc[1]);
    let depth = client(&anvil.url); // confirmations 3, final_depth 10
    let finalized = ChainClient::new(ChainSettings {
        finality: Finality::Finalized,
        ..settings(&anvil.url)
    })
    .unwrap();
    let safe = ChainClient::new(ChainSettings {
        finality: Finality::Safe,
        ..settings(&anvil.url)
    })
    .unwrap();

    assert_eq!(
        one(lookup_one(&depth, q.clone()).await).state,
        State::Pending
    );
    anvil.mine(2).await; // 3 confirmations
    assert_eq!(
        one(lookup_one(&depth, q.clone()).await).state,
        State::Confirmed
    );
    anvil.mine(6).await; // 9
    assert_eq!(
        one(lookup_one(&depth, q.clone()).await).state,
        State::Confirmed
    );
    anvil.mine(1).await; // 10 = final_depth
    assert_eq!(one(lookup_one(&depth, q.clone()).await).state, State::Final);
    assert_eq!(
        one(lookup_one(&finalized, q.clone()).await).state,
        State::Confirmed
    );

    anvil.mine(70).await;
    let head = finalized.head().await.unwrap();
    assert_eq!(
        head.final_block,
        head.number - 64,
        "anvil finalizes head - 64"
    );
    assert_eq!(safe.head().await.unwrap().final_block, head.number - 32);
    assert_eq!(
        one(lookup_one(&finalized, q.clone()).await).state,
        State::Final
    );
}

#[tokio::test]
async fn fifty_lookups_in_batches_of_ten_answer_in_order() {
    let Some(anvil) = Anvil::start().await else {
        return;
    };
    let acc = anvil.accounts().await;
    let token = deploy_token(&anvil).await;
    let mut queries = Vec::new();
    let mut expected = Vec::new();
    for i in 0..50u64 {
        let to = &acc[1 + (i as usize % 5)];
        if i % 5 == 4 {
            queries.push(token_query(
                &format!("0x{:064x}", 0xdead0000 + i),
                &token,
                to,
            ));
            expected.push(None);
        } else if i % 7 == 3 {
            let tx = send_native(&anvil, &acc[0], to, U256::from(i + 1)).await;
            queries.push(native_query(&tx, to));
            expected.push(Some((-1i64, i + 1)));
        } else {
            let tx = send_token(&anvil, &token, &acc[0], to, U256::from(1000 + i)).await;
            queries.push(token_query(&tx, &token, to));
            expected.push(Some((0, 1000 + i)));
        }
    }
    let chain = client(&anvil.url);
    let head = chain.head().await.unwrap();
    let answers = chain.lookup(&head, &queries).await.unwrap();
    assert_eq!(answers.len(), 50);
    for (i, (answer, want)) in answers.into_iter().zip(expected).enumerate() {
        match want {
            None => assert_eq!(answer, Lookup::NotFound, "query {i}"),
            Some((index, amount)) => {
                let t = one(answer);
                assert_eq!(
                    (t.key.log_index, t.amount),
                    (index, U256::from(amount)),
                    "query {i}"
                );
                assert_eq!(t.key.tx_hash, queries[i].tx_hash, "query {i}");
            }
        }
    }
}

#[tokio::test]
async fn server_errors_are_retried_then_succeed() {
    let sandbox = SandboxChain::new(31337);
    let url = sandbox.serve().await.unwrap();
    sandbox.mine(5);
    sandbox.fail_next(2);
    let chain = client(&url);
    let head = chain.head().await.unwrap();
    assert_eq!(head.number, 5);
    assert_eq!(sandbox.requests(), 3, "two 500s, then the answer");
    sandbox.fail_next(3);
    match chain.chain_id().await {
        Err(ChainError::Rpc { reason, .. }) => assert!(reason.contains("500"), "{reason}"),
        other => panic!("expected an RPC error after 2 retries, got {other:?}"),
    }
    assert_eq!(chain.chain_id().await.unwrap(), 31337);
}

#[tokio::test]
async fn unreachable_node_fails_after_bounded_retries_without_the_password() {
    let chain = client("http://user:secretpw@127.0.0.1:1/");
    let started = Instant::now();
    let err = chain.head().await.unwrap_err();
    let text = err.to_string();
    eprintln!("{text}");
    assert!(matches!(err, ChainError::Rpc { .. }), "{err:?}");
    assert!(!text.contains("secretpw"), "{text}");
    assert!(!format!("{err:?}").contains("secretpw"));
    assert!(text.contains("3 attempts"), "{text}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "bounded retries"
    );
}

#[tokio::test]
async fn a_node_without_the_finalized_tag_says_to_use_depth() {
    let sandbox = SandboxChain::new(1);
    let url = sandbox.serve().await.unwrap();
    for (tags, finality, tag) in [
        (Tags::Null, Finality::Finalized, "finalized"),
        (Tags::Refused, Finality::Finalized, "finalized"),
        (Tags::Refused, Finality::Safe, "safe"),
    ] {
        sandbox.set_tags(tags);
        let chain = ChainClient::new(ChainSettings {
            finality,
            ..settings(&url)
        })
        .unwrap();
        let err = chain.head().await.unwrap_err();
        match &err {
            ChainError::TagUnsupported { tag: t, chain } => {
                assert_eq!((*t, chain.as_str()), (tag, "anvil"), "{tags:?}")
            }
            other => panic!("{tags:?}: expected TagUnsupported, got {other:?}"),
        }
        assert!(err.to_string().contains("depth"), "{err}");
    }
    let requests = sandbox.requests();
    sandbox.set_tags(Tags::Refused);
    let _ = client(&url).head().await.unwrap(); // depth needs no tag
    assert_eq!(sandbox.requests() - requests, 1);
}
