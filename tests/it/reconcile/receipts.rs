//! A receipt at most once per run: the chain sweep does not read again what a provider's part
//! of the same run read where the ledger holds it, and a record whose payment has been
//! `final` since before `recheck_final` needs no receipt at all. Counted on the sandbox node.

use alloy::primitives::U256 as EvmU256;
use payrecon::app::App;
use payrecon::config::Config;
use payrecon::domain::{Address, State};
use payrecon::store::NewOrder;
use payrecon_testkit::sandbox::chain::SandboxChain;
use payrecon_testkit::sandbox::chaingateway::{notification, FakeChaingateway};
use payrecon_testkit::sandbox::SANDBOX_TOKEN;

use super::{opts, toml_with_chain, KEY};
use crate::cli::harness::{addr, usdt};
use crate::support;
use payrecon_testkit::inspect::Inspect;

const N: u32 = 12;

/// `N` orders paid and listed, final on chain; the JSON-RPC calls of two runs in a row.
async fn two_runs(db_url: &str, recheck_final: &str) -> (u64, u64) {
    let chain = SandboxChain::new(1);
    let rpc_url = chain.serve().await.unwrap();
    let (cg, cg_url) = FakeChaingateway::start(KEY).await;
    let keys = format!(
        "confirmations = 12\nfinality = \"finalized\"\nscan_unpaid = false\n\
         recheck_final = \"{recheck_final}\""
    );
    let toml = toml_with_chain(db_url, &cg_url, &rpc_url, SANDBOX_TOKEN, &keys, "", "");
    let app = App::build(Config::from_toml(&toml, std::iter::empty()).unwrap())
        .await
        .unwrap();
    let store = &app.engine.store;
    store.insert_orders(&sandbox_orders("R", N)).await.unwrap();
    let token = Address::parse(SANDBOX_TOKEN).unwrap();
    let payer = Address::parse("0x00000000000000000000000000000000000000fe").unwrap();
    let payments: Vec<(Address, EvmU256)> = (1..=N)
        .map(|n| (addr(n), EvmU256::from(usdt(25))))
        .collect();
    let txs = chain.add_token_transfers(&token, &payer, &payments);
    chain.mine_block();
    chain.mine(70);
    let created = jiff::Timestamp::now() - jiff::SignedDuration::from_mins(30);
    for (n, (tx, _)) in (1..=N).zip(&txs) {
        let to = addr(n);
        let record = notification(
            &format!("n-{n}"),
            tx.as_str(),
            SANDBOX_TOKEN,
            to.as_str(),
            Some("25"),
            created,
        );
        cg.add_notification("ethereum", record);
    }
    let c0 = chain.calls();
    let first = app.engine.run(&opts()).await.unwrap();
    assert_eq!(first.totals.applied, u64::from(N), "{}", first.to_json());
    let c1 = chain.calls();
    // The run's clock moves on: the payments became final before the next run started.
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let second = app.engine.run(&opts()).await.unwrap();
    assert_eq!(second.totals.applied, 0, "{}", second.to_json());
    assert_eq!(second.totals.checked, u64::from(N), "{}", second.to_json());
    let c2 = chain.calls();
    for n in 1..=N {
        let o = store
            .order_by_ref(&format!("R-{n}"))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(o.state, State::Final);
    }
    (c1 - c0, c2 - c1)
}

/// Orders `{prefix}-1..=n` of 25 of the sandbox token, each to its own address (`addr(n)`).
pub(super) fn sandbox_orders(prefix: &str, n: u32) -> Vec<NewOrder> {
    (1..=n)
        .map(|n| NewOrder {
            order_ref: format!("{prefix}-{n}"),
            chain: "ethereum".into(),
            pay_to: addr(n).to_string(),
            asset: SANDBOX_TOKEN.into(),
            amount_due: usdt(25),
        })
        .collect()
}

#[tokio::test]
async fn a_receipt_is_read_at_most_once_per_run_and_not_for_settled_payments() {
    // Two worlds per backend: `recheck_final` off, and on.
    let (_off_dir, off) = support::all_backends().await;
    let (_on_dir, on) = support::all_backends().await;
    if support::strict() {
        assert_eq!(
            on.len(),
            support::backends_chosen(),
            "strict mode runs SQLite, PostgreSQL and MariaDB (those chosen)"
        );
    }
    for (off_url, on_url) in off.iter().zip(&on) {
        // Without final rechecks, the sweep reads no final row: the floor of a first run.
        let (first_off, second_off) = two_runs(off_url, "0s").await;
        // `recheck_final` on: the sweep would re-read the rows the providers' part just made
        // final; it skips them, so the first run costs the same.
        let (first_on, second_on) = two_runs(on_url, "1h").await;
        assert_eq!(
            first_on, first_off,
            "{on_url}: the sweep read a receipt again"
        );
        // The second run: final since before it started and outside `recheck_final` = 0s,
        // no receipt at all; inside `1h`, each read once, by the provider's part. Neither run
        // reads a block header: the receipts' logs carry their block's time.
        assert_eq!(
            first_off - second_off,
            u64::from(N),
            "{off_url}: a settled payment's receipt was read ({first_off} then {second_off} calls)"
        );
        assert_eq!(
            second_on, first_on,
            "{on_url}: inside recheck_final the second run reads each receipt once, as the first"
        );
    }
}
