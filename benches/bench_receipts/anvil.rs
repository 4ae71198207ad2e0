//! The benchmark's transfers on the shared anvil driver (`payrecon_testkit::anvil`, which also
//! deploys the hand-assembled token): many transfers sent in JSON-RPC batches and mined.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

pub use payrecon_testkit::anvil::Anvil;

async fn rpc(anvil: &Anvil, method: &str, params: Value) -> anyhow::Result<Value> {
    anvil
        .try_rpc(method, params)
        .await
        .map_err(anyhow::Error::msg)
}

/// `n` token transfers of 1..=n base units to `to`, sent in JSON-RPC batches of 200 with
/// automine off and one block mined per batch; returns the hashes once all are mined.
pub async fn send_transfers(
    anvil: &Anvil,
    token: &str,
    from: &str,
    to: &str,
    n: usize,
) -> anyhow::Result<Vec<String>> {
    rpc(anvil, "evm_setAutomine", json!([false])).await?;
    let nonce = rpc(anvil, "eth_getTransactionCount", json!([from, "pending"])).await?;
    let nonce = u64::from_str_radix(nonce.as_str().unwrap_or("0x0").trim_start_matches("0x"), 16)?;
    let mut hashes = Vec::with_capacity(n);
    for chunk in (1..=n).collect::<Vec<_>>().chunks(200) {
        let calls = chunk
            .iter()
            .map(|i| {
                let data = format!("0x{:0>64}{:064x}", to.trim_start_matches("0x"), i);
                let nonce = format!("{:#x}", nonce + *i as u64 - 1);
                let tx = json!([{"from": from, "to": token, "data": data, "gas": "0x10000", "nonce": nonce}]);
                ("eth_sendTransaction", tx)
            })
            .collect();
        for h in anvil.batch(calls).await.map_err(anyhow::Error::msg)? {
            hashes.push(h.as_str().unwrap_or_default().to_lowercase());
        }
        rpc(anvil, "anvil_mine", json!(["0x1"])).await?;
    }
    rpc(anvil, "evm_setAutomine", json!([true])).await?;
    let deadline = Instant::now() + Duration::from_secs(60);
    let last = hashes.last().cloned().unwrap_or_default();
    while rpc(anvil, "eth_getTransactionReceipt", json!([last]))
        .await?
        .is_null()
    {
        anyhow::ensure!(Instant::now() < deadline, "transfers not mined in 60 s");
        rpc(anvil, "anvil_mine", json!(["0x1"])).await?;
    }
    Ok(hashes)
}
