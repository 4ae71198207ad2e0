//! The sandbox chain: parity with anvil through `ChainClient` and alloy's RPC types, batching
//! and scale.

use std::task::{Context, Poll};
use std::time::Instant;

use alloy::rpc::json_rpc::{RequestPacket, ResponsePacket};
use alloy::transports::{TransportError, TransportErrorKind, TransportFut};

use payrecon::chain::{ChainClient, ChainSettings, Finality, Lookup, TransferQuery};
use payrecon::domain::{Asset, U256};
use payrecon_testkit::sandbox::chain::SandboxChain;

use super::{addr, client, native_query, one, settings, token_query};
use crate::evm::{
    deploy_token, send_native, send_nft_like, send_reverting, send_tokens_in_one_block,
};
use crate::support::Anvil;

/// JSON-RPC over one HTTP POST, the transport under alloy's RPC client here (payrecon builds
/// alloy without its HTTP transport; its own is private to the chain client).
#[derive(Clone)]
struct Post(reqwest::Client, String);

impl tower::Service<RequestPacket> for Post {
    type Response = ResponsePacket;
    type Error = TransportError;
    type Future = TransportFut<'static>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), TransportError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: RequestPacket) -> TransportFut<'static> {
        let Post(http, url) = self.clone();
        Box::pin(async move {
            let resp = http.post(url).json(&req).send().await;
            let body = resp
                .and_then(|r| r.error_for_status())
                .map_err(TransportErrorKind::custom)?
                .bytes()
                .await
                .map_err(TransportErrorKind::custom)?;
            serde_json::from_slice(&body)
                .map_err(|e| TransportError::deser_err(e, String::from_utf8_lossy(&body)))
        })
    }
}

/// What a lookup says, without hashes (which differ between nodes).
fn shape(l: &Lookup) -> String {
    match l {
        Lookup::Found(ts) => ts
            .iter()
            .map(|t| format!("{}:{}:{}:{}", t.key.log_index, t.amount, t.to, t.state))
            .collect::<Vec<_>>()
            .join(","),
        Lookup::NoTransfer(why) if why.contains("ERC-721") => "erc721".into(),
        other => format!("{other:?}"),
    }
}

#[tokio::test]
async fn sandbox_answers_like_anvil() {
    use alloy::primitives::{B256, U64};
    use alloy::rpc::types::{Block, BlockNumberOrTag, Transaction, TransactionReceipt};

    let Some(anvil) = Anvil::start().await else {
        return;
    };
    let acc = anvil.accounts().await;
    let (from, to) = (acc[0].clone(), acc[1].clone());
    let token = deploy_token(&anvil).await;
    let (a, b) = (U256::from(5u64), U256::from(1u64) << 200);
    let anvil_txs = send_tokens_in_one_block(&anvil, &token, &from, &[(&to, a), (&to, b)]).await;
    let anvil_native = send_native(&anvil, &from, &to, U256::from(77u64)).await;
    let anvil_reverted = send_reverting(&anvil, &token, &from, &to, a).await;
    let anvil_nft = send_nft_like(&anvil, &token, &from, &to, a).await;

    let sandbox = SandboxChain::new(31337);
    let url = sandbox.serve().await.unwrap();
    sandbox.mine(1); // anvil deployed the token in block 1
    let (tk, fr, t) = (addr(&token), addr(&from), addr(&to));
    let sb_txs = [
        sandbox.add_token_transfer(&tk, &fr, &t, a).0,
        sandbox.add_token_transfer(&tk, &fr, &t, b).0,
    ];
    sandbox.mine_block();
    let sb_native = sandbox.add_native_transfer(&fr, &t, U256::from(77u64));
    sandbox.mine_block();
    let sb_reverted = sandbox.add_reverted(&tk, &fr, &t, a);
    sandbox.mine_block();
    let sb_nft = sandbox.add_nft_transfer(&tk, &fr, &t, a).0;
    sandbox.mine_block();

    let queries = |txs: [&str; 5]| {
        vec![
            token_query(txs[0], &token, &to),
            token_query(txs[1], &token, &to),
            native_query(txs[2], &to),
            token_query(txs[3], &token, &to),
            token_query(txs[4], &token, &to),
        ]
    };
    let anvil_q = queries([
        &anvil_txs[0],
        &anvil_txs[1],
        &anvil_native,
        &anvil_reverted,
        &anvil_nft,
    ]);
    let sb_q = queries([
        sb_txs[0].as_str(),
        sb_txs[1].as_str(),
        sb_native.as_str(),
        sb_reverted.as_str(),
        sb_nft.as_str(),
    ]);
    for mined in [0, 70] {
        anvil.mine(mined).await;
        sandbox.mine(mined);
        for finality in [Finality::Depth, Finality::Finalized, Finality::Safe] {
            let s = |url: &str| ChainSettings {
                finality,
                ..settings(url)
            };
            let (real, fake) = (
                ChainClient::new(s(&anvil.url)).unwrap(),
                ChainClient::new(s(&url)).unwrap(),
            );
            let (real_head, fake_head) = (real.head().await.unwrap(), fake.head().await.unwrap());
            assert_eq!(real_head, fake_head, "{finality:?} after {mined}");
            let real_answers = real.lookup(&real_head, &anvil_q).await.unwrap();
            let fake_answers = fake.lookup(&fake_head, &sb_q).await.unwrap();
            let real_shapes: Vec<_> = real_answers.iter().map(shape).collect();
            let fake_shapes: Vec<_> = fake_answers.iter().map(shape).collect();
            assert_eq!(real_shapes, fake_shapes, "{finality:?} after {mined}");
        }
    }

    // alloy's own RPC types decode the sandbox's objects (what alloy's provider would
    // return; the provider itself is not built: docs/testing.md, "One build of the
    // dependencies").
    let rpc = alloy::rpc::client::RpcClient::new(Post(reqwest::Client::new(), url.clone()), true);
    let chain_id: U64 = rpc.request("eth_chainId", ()).await.unwrap();
    assert_eq!(chain_id, U64::from(31337));
    for tag in [
        BlockNumberOrTag::Latest,
        BlockNumberOrTag::Finalized,
        BlockNumberOrTag::Safe,
    ] {
        let block: Option<Block> = rpc
            .request("eth_getBlockByNumber", (tag, false))
            .await
            .unwrap();
        assert!(block.unwrap().header.number <= sandbox.head());
    }
    let block: Option<Block> = rpc
        .request("eth_getBlockByNumber", (BlockNumberOrTag::Number(2), true))
        .await
        .unwrap();
    let block = block.unwrap();
    assert!(block.transactions.is_full());
    assert_eq!(block.transactions.len(), 2);
    for tx in [&sb_txs[0], &sb_native, &sb_reverted, &sb_nft] {
        let h: B256 = tx.as_str().parse().unwrap();
        let receipt: Option<TransactionReceipt> = rpc
            .request("eth_getTransactionReceipt", (h,))
            .await
            .unwrap();
        assert_eq!(receipt.unwrap().status(), tx != &sb_reverted);
        let found: Option<Transaction> =
            rpc.request("eth_getTransactionByHash", (h,)).await.unwrap();
        assert_eq!(found.map(|t| t.inner.tx_hash().to_owned()), Some(h));
    }
}

#[tokio::test]
async fn sandbox_lookups_batch_and_scale() {
    let sandbox = SandboxChain::new(1);
    let url = sandbox.serve().await.unwrap();
    let (tk, fr) = (
        addr(&format!("0x{}", "11".repeat(20))),
        addr(&format!("0x{}", "22".repeat(20))),
    );
    let n = 20_000u64;
    let payments: Vec<_> = (0..n)
        .map(|i| (addr(&format!("0x{:040x}", i + 1)), U256::from(i)))
        .collect();
    let started = Instant::now();
    let mut added = Vec::new();
    for chunk in payments.chunks(100) {
        added.extend(sandbox.add_token_transfers(&tk, &fr, chunk));
        sandbox.mine_block();
    }
    let add_time = started.elapsed();
    assert_eq!(added[150].1, 50, "block-level log index");

    // 50 lookups in batches of 10: five HTTP requests, answers in order.
    let chain = client(&url);
    let head = chain.head().await.unwrap();
    let before = sandbox.requests();
    let queries: Vec<_> = added[..50]
        .iter()
        .zip(&payments)
        .map(|((tx, _), (to, _))| token_query(tx.as_str(), tk.as_str(), to.as_str()))
        .collect();
    let answers = chain.lookup(&head, &queries).await.unwrap();
    assert_eq!(sandbox.requests() - before, 5);
    for (i, a) in answers.into_iter().enumerate() {
        let t = one(a);
        assert_eq!(
            (t.key.log_index, t.amount),
            ((i % 100) as i64, U256::from(i))
        );
    }

    // All of them in batches of 100.
    let chain = ChainClient::new(ChainSettings {
        batch_size: 100,
        ..settings(&url)
    })
    .unwrap();
    let queries: Vec<_> = added
        .iter()
        .map(|(tx, li)| TransferQuery {
            tx_hash: tx.clone(),
            asset: Some(Asset::Token(tk.clone())),
            to: None,
            log_index: Some(*li),
        })
        .collect();
    let started = Instant::now();
    let answers = chain.lookup(&head, &queries).await.unwrap();
    let lookup_time = started.elapsed();
    assert!(answers
        .iter()
        .all(|a| matches!(a, Lookup::Found(t) if t.len() == 1)));
    eprintln!(
        "sandbox: added {n} transfers in {add_time:?}; looked up {n} receipts in {lookup_time:?} \
         ({} HTTP requests)",
        n / 100
    );
}

/// The sandbox crate keeps its own copy of the ERC-20 `Transfer` topic (it depends on nothing
/// of payrecon's): the one payrecon reads, and keccak256 of the event's signature.
#[test]
fn the_sandbox_transfer_topic_is_payrecons() {
    use payrecon_testkit::sandbox::chain::TRANSFER_TOPIC;
    assert_eq!(TRANSFER_TOPIC, payrecon::chain::TRANSFER_TOPIC);
    let signature = alloy::primitives::keccak256("Transfer(address,address,uint256)");
    assert_eq!(TRANSFER_TOPIC, signature);
}
