//! Every payment credited on an EVM chain carries its block's time, also where its order does
//! not expire: the console's payment-to-event delay counts from it (docs/operations.md, "The
//! operator console") and the export places the payment by it. It comes with the logs'
//! `blockTimestamp` where the node sends it (no header read), else from the block headers in
//! one batched request. A node that cannot give it fails the part, and the payment is credited
//! all the same, without it. On the sandbox node, every backend.

use alloy::primitives::U256 as EvmU256;
use payrecon::app::App;
use payrecon::config::Config;
use payrecon::domain::{Address, State};
use payrecon::store::Store;
use payrecon_testkit::sandbox::chain::SandboxChain;
use payrecon_testkit::sandbox::chaingateway::{notification, FakeChaingateway};
use payrecon_testkit::sandbox::SANDBOX_TOKEN;

use super::receipts::sandbox_orders;
use super::{entry, opts, toml_with_chain, CG, KEY};
use crate::cli::harness::{addr, usdt};
use crate::support;
use payrecon_testkit::inspect::Inspect;

/// Pays order `n` (its own address) in a new block, makes it final and lists it; returns the
/// block's number.
fn pay(chain: &SandboxChain, cg: &FakeChaingateway, n: u32) -> u64 {
    let token = Address::parse(SANDBOX_TOKEN).unwrap();
    let payer = Address::parse("0x00000000000000000000000000000000000000fe").unwrap();
    let txs = chain.add_token_transfers(&token, &payer, &[(addr(n), EvmU256::from(usdt(25)))]);
    let block = chain.mine_block();
    chain.mine(70);
    let created = jiff::Timestamp::now() - jiff::SignedDuration::from_mins(5);
    let to = addr(n);
    let record = notification(
        &format!("n-{n}"),
        txs[0].0.as_str(),
        SANDBOX_TOKEN,
        to.as_str(),
        Some("25"),
        created,
    );
    cg.add_notification("ethereum", record);
    block
}

/// Each exported payment's order and block time.
async fn block_times(store: &Store) -> Vec<(String, Option<jiff::Timestamp>)> {
    let now = jiff::Timestamp::now();
    let day = jiff::SignedDuration::from_hours(24);
    let mut out = Vec::new();
    store
        .export_payments(now - day, now + day, |r| {
            out.push((r.order_ref, r.block_time));
            Ok(())
        })
        .await
        .unwrap();
    out.sort();
    out
}

async fn scenario(db_url: &str) {
    // Blocks 12 s apart from an hour ago, so that they fall in the export's window.
    let genesis = jiff::Timestamp::now().as_second() - 3600;
    let chain = SandboxChain::starting_at(1, u64::try_from(genesis).unwrap());
    let rpc_url = chain.serve().await.unwrap();
    let (cg, cg_url) = FakeChaingateway::start(KEY).await;
    let keys = "confirmations = 12\nfinality = \"finalized\"\nscan_unpaid = false";
    let toml = toml_with_chain(db_url, &cg_url, &rpc_url, SANDBOX_TOKEN, keys, "", "");
    let app = App::build(Config::from_toml(&toml, std::iter::empty()).unwrap())
        .await
        .unwrap();
    let store = &app.engine.store;
    store.insert_orders(&sandbox_orders("T", 3)).await.unwrap();
    let time_of = |block: u64| {
        jiff::Timestamp::from_second(genesis + 12 * i64::try_from(block).unwrap()).unwrap()
    };

    // No order expires: the credit's block time is taken all the same, from the receipt's
    // logs: the node fails every batch of block headers, and none is read.
    chain.fail_batches_of(Some("eth_getBlockByNumber"));
    let first = pay(&chain, &cg, 1);
    let report = app.engine.run(&opts()).await.unwrap();
    assert_eq!(entry(&report, CG).status, "ok", "{}", report.to_json());
    let want = vec![("T-1".to_string(), Some(time_of(first)))];
    assert_eq!(block_times(store).await, want, "{db_url}");

    // A node whose logs carry no `blockTimestamp`, and which answers everything but the batch
    // of block headers: the payment is credited without its time, and the part says it failed.
    chain.set_log_times(false);
    let second = pay(&chain, &cg, 2);
    assert!(second > first);
    let report = app.engine.run(&opts()).await.unwrap();
    let part = entry(&report, CG);
    assert_eq!(part.status, "failed", "{}", report.to_json());
    let error = part.error.as_deref().unwrap_or_default();
    assert!(error.contains("reading block times"), "{error}");
    assert!(
        !report.to_json().contains(KEY),
        "{db_url}: the API key leaked"
    );
    let order = store.order_by_ref("T-2").await.unwrap().unwrap();
    assert_eq!(order.state, State::Final, "{db_url}: the credit was lost");
    let mut want = want;
    want.push(("T-2".to_string(), None));
    assert_eq!(block_times(store).await, want, "{db_url}");

    // The headers back: the time of a payment whose logs carry none is read from them.
    chain.fail_batches_of(None);
    let third = pay(&chain, &cg, 3);
    let report = app.engine.run(&opts()).await.unwrap();
    assert_eq!(entry(&report, CG).status, "ok", "{}", report.to_json());
    want.push(("T-3".to_string(), Some(time_of(third))));
    assert_eq!(block_times(store).await, want, "{db_url}");
}

#[tokio::test]
async fn a_credit_carries_its_blocks_time_and_a_node_that_cannot_give_it_fails_the_part() {
    let (_dir, urls) = support::all_backends().await;
    if support::strict() {
        assert_eq!(
            urls.len(),
            support::backends_chosen(),
            "strict mode runs SQLite, PostgreSQL and MariaDB (those chosen)"
        );
    }
    for url in &urls {
        scenario(url).await;
    }
}
