//! Exceptions (README.md, "Exceptions") through the real binary on SQLite and PostgreSQL: one
//! row per problem across runs, cleared by payrecon when the condition goes away, settled by
//! `payrecon exceptions accept|attach|dismiss` through the run's apply path (source
//! `operator`, its audit row and event), safe when two people act at once and when a process
//! is killed mid-decision; and `payrecon export`, read back with a real CSV parser.

use alloy::primitives::U256 as EvmU256;
use payrecon::domain::Address;
use payrecon::store::NewOrder;
use payrecon_testkit::sandbox::chaingateway::notification;
use payrecon_testkit::sandbox::SANDBOX_TOKEN;
use serde_json::Value;

use crate::cli::harness::{addr, payrecon, scalar, usdt, World};

mod beside_serve;
mod decide;
mod export;
mod lifecycle;
mod race;

/// An order `X-<i>` due `due` USDT to `addr(i)`.
pub(crate) async fn order(w: &World, i: u32, due: u64) -> String {
    let r = format!("X-{i}");
    w.store
        .insert_orders(&[NewOrder {
            order_ref: r.clone(),
            chain: "ethereum".into(),
            pay_to: addr(i).to_string(),
            asset: SANDBOX_TOKEN.into(),
            amount_due: usdt(due),
        }])
        .await
        .unwrap();
    r
}

/// `amount` base units of USDT to `addr(i)` on chain (final after the blocks mined here),
/// listed by the provider as notification `id`; returns the transaction hash.
pub(crate) fn pay_units(w: &World, i: u32, amount: u64, id: &str) -> String {
    pay_mined(w, i, amount, id, 70)
}

/// As `pay_units`, with `after` blocks mined on top of the transfer's.
pub(crate) fn pay_mined(w: &World, i: u32, amount: u64, id: &str, after: u64) -> String {
    let (tx, _) = w.chain.add_token_transfer(
        &Address::parse(SANDBOX_TOKEN).unwrap(),
        &Address::parse("0x00000000000000000000000000000000000000fe").unwrap(),
        &addr(i),
        EvmU256::from(amount),
    );
    w.chain.mine_block();
    w.chain.mine(after);
    let created = jiff::Timestamp::now() - jiff::SignedDuration::from_mins(30);
    let whole = format!("{}.{:06}", amount / 1_000_000, amount % 1_000_000);
    w.cg.add_notification(
        "ethereum",
        notification(
            id,
            tx.as_str(),
            SANDBOX_TOKEN,
            addr(i).as_str(),
            Some(&whole),
            created,
        ),
    );
    tx.as_str().to_string()
}

/// `whole` USDT to `addr(i)`, listed as notification `id`.
pub(crate) fn pay(w: &World, i: u32, whole: u64, id: &str) -> String {
    pay_units(w, i, whole * 1_000_000, id)
}

/// Every exception (`--status all`) as JSON.
pub(crate) async fn all(config: &std::path::Path) -> Vec<Value> {
    let out = payrecon(
        config,
        &["exceptions", "--status", "all", "--format", "json"],
    )
    .await;
    out.assert_code(0);
    out.json().as_array().unwrap().clone()
}

/// The one exception of `kind` whose order is `order_ref` (or whose transaction is, for a
/// payment to no order).
pub(crate) fn one<'a>(xs: &'a [Value], kind: &str, key: &str) -> &'a Value {
    let found: Vec<&Value> = xs
        .iter()
        .filter(|x| x["kind"] == kind && (x["order_ref"] == key || x["tx_hash"] == key))
        .collect();
    assert_eq!(found.len(), 1, "one {kind} exception of {key} in {xs:?}");
    found[0]
}

pub(crate) fn id(x: &Value) -> String {
    x["id"].as_i64().unwrap().to_string()
}

/// Rows of `table` matching `cond`.
pub(crate) async fn count(w: &World, table: &str, cond: &str) -> i64 {
    scalar(
        &w.db_url,
        &format!("SELECT COUNT(*) FROM {table} WHERE {cond}"),
    )
    .await
}
