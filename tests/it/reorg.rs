//! Reorgs on a real anvil (docs/how-it-works.md, "Reorgs"): a held payment re-included elsewhere is
//! re-keyed and keeps its state; one that is gone or replaced stays, is flagged every run and
//! counted in `payrecon_reorged_open`; young `final` rows are rechecked; the re-key statement
//! refuses when the row changed under it. Both backends wherever the ledger is involved.
//!
//! The chain here uses `finality = "depth"` (so that `final` can be reorganised away on
//! anvil) with 2 confirmations; reorgs are made with `anvil_reorg`, which replaces the last
//! `depth` blocks and drops their transactions unless they are given again.

use payrecon::domain::U256;
use serde_json::{json, Value};

use crate::reconcile::World;

mod gone;
mod guard;
mod rekey;
mod unrecorded;

/// Confirmations for `pending -> confirmed` on this chain.
pub(crate) const CONFS: u64 = 2;

/// A world whose chain has `finality = "depth"`, `final_depth` and `recheck_final`.
pub(crate) async fn world(db_url: &str, final_depth: u64, recheck_final: &str) -> Option<World> {
    let chain = format!(
        "confirmations = {CONFS}\nfinality = \"depth\"\nfinal_depth = {final_depth}\nrecheck_final = \"{recheck_final}\""
    );
    World::start_on_chain(db_url, &chain, "", "").await
}

/// The next nonce of `who`.
pub(crate) async fn nonce(w: &World, who: &str) -> u64 {
    let n = w
        .anvil
        .rpc("eth_getTransactionCount", json!([who, "latest"]))
        .await;
    u64::from_str_radix(n.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
}

/// A legacy token transfer request with a fixed nonce and gas price: anvil signs it the same
/// way every time, so it can be given again (same hash) after a reorg dropped it.
pub(crate) fn transfer_req(
    w: &World,
    from: &str,
    nonce: u64,
    to: &str,
    amount: U256,
    gwei: u64,
) -> Value {
    let data = format!(
        "0x{:0>64}{}{:064x}",
        to.trim_start_matches("0x"),
        hex::encode(amount.to_be_bytes::<32>()),
        0
    );
    json!({"from": from, "to": w.token, "data": data, "gas": "0x40000",
        "gasPrice": format!("{:#x}", gwei * 1_000_000_000), "nonce": format!("{nonce:#x}")})
}

/// Sends a request (automine) and waits for its receipt; the lowercase hash.
pub(crate) async fn send(w: &World, req: Value) -> String {
    let hash = w.anvil.rpc("eth_sendTransaction", json!([req])).await;
    let hash = hash.as_str().unwrap().to_lowercase();
    w.anvil.receipt(&hash).await;
    hash
}

/// `anvil_reorg`: replaces the last `depth` blocks; `txs` are `(request, block offset)`.
pub(crate) async fn reorg(w: &World, depth: u64, txs: Vec<(Value, u64)>) {
    let txs: Vec<Value> = txs.into_iter().map(|(t, o)| json!([t, o])).collect();
    w.anvil.rpc("anvil_reorg", json!([depth, txs])).await;
}

pub(crate) async fn head(w: &World) -> u64 {
    let n = w.anvil.rpc("eth_blockNumber", json!([])).await;
    u64::from_str_radix(n.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
}

/// Whether the chain has a receipt for `tx`.
pub(crate) async fn has_receipt(w: &World, tx: &str) -> bool {
    !w.anvil
        .rpc("eth_getTransactionReceipt", json!([tx]))
        .await
        .is_null()
}

/// The value of `payrecon_reorged_open{chain="ethereum"}`.
pub(crate) fn reorged_open(w: &World) -> i64 {
    let text = w.app.engine.metrics.encode();
    let line = text
        .lines()
        .find(|l| l.starts_with("payrecon_reorged_open{chain=\"ethereum\"}"))
        .unwrap_or_else(|| panic!("no reorged_open gauge in\n{text}"));
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

/// The value of `payrecon_gaps_total{provider="chain",chain="ethereum",kind="reorged"}`.
pub(crate) fn reorged_total(w: &World) -> u64 {
    let text = w.app.engine.metrics.encode();
    let prefix = "payrecon_gaps_total{provider=\"chain\",chain=\"ethereum\",kind=\"reorged\"}";
    let line = text.lines().find(|l| l.starts_with(prefix)).unwrap();
    line.rsplit(' ').next().unwrap().parse().unwrap()
}
