//! A payment in and a drain out between two checks that leave a native balance where it was:
//! bisection over the balance alone would see no change; the address's nonce shows the drain,
//! and between the blocks it sent from, the balance only grows. On the sandbox node (exact
//! fees), SQLite.

use payrecon::app::App;
use payrecon::config::Config;
use payrecon::domain::{State, U256};
use payrecon::engine::Trigger;
use payrecon::store::NewOrder;
use payrecon_testkit::inspect::Inspect as _;
use payrecon_testkit::sandbox::chain::{SandboxChain, TX_FEE_WEI};
use payrecon_testkit::sandbox::chaingateway::FakeChaingateway;
use payrecon_testkit::sandbox::config_toml;

use super::{age_orders, open_of};
use crate::reconcile::{entry, KEY};

fn addr(n: u8) -> payrecon::domain::Address {
    payrecon::domain::Address::parse(&format!("0x{}", format!("{n:02x}").repeat(20))).unwrap()
}

#[tokio::test]
async fn a_payment_and_a_drain_that_leave_the_balance_as_it_was_are_both_found() {
    let now = u64::try_from(jiff::Timestamp::now().as_second()).unwrap();
    let chain = SandboxChain::starting_at(1, now - 1800);
    let rpc_url = chain.serve().await.unwrap();
    let (_cg, cg_url) = FakeChaingateway::start(KEY).await;
    let (_dir, db) = crate::support::sqlite_url();
    let config =
        Config::from_toml(&config_toml(&db, &cg_url, &rpc_url, ""), std::iter::empty()).unwrap();
    let (lookback, treasury) = (config.balances.lookback, config.balances.treasury.clone());
    let app = App::build(config).await.unwrap();
    let due = U256::from(3_000_000_000_000_000u64);
    let order = NewOrder {
        order_ref: "N-1".into(),
        chain: "ethereum".into(),
        pay_to: addr(0x0d).to_string(),
        asset: "native".into(),
        amount_due: due,
    };
    app.engine.store.insert_orders(&[order]).await.unwrap();
    age_orders(&app).await;
    let check = || {
        app.engine
            .check_balances(lookback, &treasury, None, Trigger::Cli)
    };
    // What the address held before its order (its opening), to pay a fee from later.
    chain.fund_native(&addr(0x0d), alloy::primitives::U256::from(10u64.pow(16)));
    chain.mine(70);
    let r = check().await.unwrap();
    let e = entry(&r, "balances");
    assert_eq!((e.checked, e.gaps.total()), (1, 0), "{}", r.to_json());

    // In, then out to a thief less exactly the fee: the balance is 0 again.
    let payer = addr(0xfe);
    chain.fund_native(&payer, alloy::primitives::U256::from(10u64.pow(19)));
    let paid = chain.add_native_transfer(&payer, &addr(0x0d), alloy::primitives::U256::from(due));
    chain.mine_block();
    let out = alloy::primitives::U256::from(due - U256::from(TX_FEE_WEI));
    let drain = chain.add_native_transfer(&addr(0x0d), &addr(0x66), out);
    chain.mine_block();
    // A transaction to itself (a wallet "cancel"): only its fee leaves.
    chain.add_native_transfer(&addr(0x0d), &addr(0x0d), alloy::primitives::U256::ZERO);
    chain.mine(70);
    let r = check().await.unwrap();
    let e = entry(&r, "balances");
    let shown = r.to_json();
    assert_eq!(
        (e.status.as_str(), e.applied, e.gaps.missing),
        ("ok", 1, 1),
        "{shown}"
    );
    assert_eq!(
        (e.gaps.unexpected_outflow, e.gaps.balance_mismatch),
        (1, 0),
        "{shown}"
    );
    let o = app.engine.store.order_by_ref("N-1").await.unwrap().unwrap();
    assert_eq!(o.state, State::Final);
    let drains = open_of(&app, "unexpected_outflow").await;
    assert_eq!(drains.len(), 1);
    assert_eq!(drains[0].tx_hash.as_deref(), Some(drain.as_str()));
    let rows = payrecon_testkit::inspect::Inspect::rows(
        &app.engine.store,
        "SELECT tx_hash FROM payrecon_payments",
    )
    .await
    .unwrap();
    assert_eq!(rows, vec![vec![Some(paid.to_string())]]);
}
