//! Reorgs on the real node: the last `d` blocks replaced (`anvil_reorg`) or rolled back
//! (`anvil_rollback`) and new ones mined. Each account's dropped transactions are all given
//! again (same hashes: legacy, fixed nonce and fee; in the rollback, their raw bytes from
//! `eth_getRawTransactionByHash` are resent), all dropped, or the first one replaced by a
//! transfer to a stray address with the same nonce. Re-included ones sometimes sit behind
//! another account's higher-fee transfer, so their log index changes too.

use std::collections::BTreeMap;

use rand::rngs::StdRng;
use rand::Rng;
use serde_json::{json, Value};

use super::node::{request, Anvil};
use super::world::stray;
use super::Count;

/// A dropped transaction, as the replaced block held it.
struct Dropped {
    hash: String,
    nonce: u64,
    req: Value,
}

/// The transactions of blocks `from..=to`, by sender (in nonce order).
async fn dropped(anvil: &Anvil, from: u64, to: u64) -> BTreeMap<String, Vec<Dropped>> {
    let mut by: BTreeMap<String, Vec<Dropped>> = BTreeMap::new();
    for n in from..=to {
        let b = anvil
            .rpc("eth_getBlockByNumber", json!([format!("{n:#x}"), true]))
            .await;
        for t in b["transactions"].as_array().into_iter().flatten() {
            let sender = t["from"].as_str().unwrap_or_default().to_lowercase();
            let req = json!({"from": sender, "to": t["to"], "data": t["input"],
                "value": t["value"], "gas": t["gas"], "gasPrice": t["gasPrice"],
                "nonce": t["nonce"]});
            let nonce = t["nonce"]
                .as_str()
                .and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok())
                .unwrap_or(0);
            let hash = t["hash"].as_str().unwrap_or_default().to_lowercase();
            by.entry(sender)
                .or_default()
                .push(Dropped { hash, nonce, req });
        }
    }
    for v in by.values_mut() {
        v.sort_by_key(|d| d.nonce);
    }
    by
}

/// What becomes of one sender's dropped transactions.
enum Fate {
    Again,
    Gone,
    Replaced,
}

/// One reorg of depth 1..=`max_depth` (never below `floor`); returns its depth, or None
/// when the chain is too short.
pub async fn reorg(
    anvil: &Anvil,
    rng: &mut StdRng,
    token: &str,
    accounts: &[String],
    floor: u64,
    max_depth: u64,
    count: &Count,
) -> Option<u64> {
    let head = anvil.head().await;
    let room = head.saturating_sub(floor).min(max_depth);
    if room == 0 {
        return None;
    }
    let d = rng.gen_range(1..=room);
    let by = dropped(anvil, head - d + 1, head).await;
    let rollback = rng.gen_bool(0.4);
    // A sender with nothing dropped pays a stray at a higher fee, ahead of the re-included.
    let idle: Vec<&String> = accounts.iter().filter(|a| !by.contains_key(*a)).collect();
    let front = match (rng.gen_bool(0.6), idle.is_empty()) {
        (true, false) => {
            let who = idle[rng.gen_range(0..idle.len())].clone();
            let nonce = anvil.nonce(&who).await;
            let to = stray(rng);
            Some(request(&who, nonce, 5, &to, 1_000_000, Some(token)))
        }
        _ => None,
    };
    // (request, raw bytes, block offset) of what the new blocks hold, in order.
    let mut again: Vec<(Value, Option<String>, u64)> = Vec::new();
    let offset = rng.gen_range(0..d);
    for (sender, txs) in &by {
        let fate = match rng.gen_range(0..10) {
            0..=4 => Fate::Again,
            5..=7 => Fate::Gone,
            _ => Fate::Replaced,
        };
        count.dropped.add(txs.len() as u64);
        match fate {
            Fate::Again => {
                for t in txs {
                    let raw = match rollback {
                        true => anvil
                            .rpc("eth_getRawTransactionByHash", json!([t.hash]))
                            .await
                            .as_str()
                            .map(str::to_string),
                        false => None,
                    };
                    again.push((t.req.clone(), raw, offset));
                }
            }
            Fate::Gone => {}
            Fate::Replaced => {
                count.replaced.add(1);
                let to = stray(rng);
                let req = request(sender, txs[0].nonce, 7, &to, 2_000_000, Some(token));
                again.push((req, None, offset));
            }
        }
    }
    if let Some(f) = front {
        again.insert(0, (f, None, offset));
    }
    if rollback {
        count.rollbacks.add(1);
        anvil.rpc("anvil_rollback", json!([d])).await;
        anvil.rpc("evm_setAutomine", json!([false])).await;
        for (req, raw, _) in &again {
            match raw {
                Some(raw) => anvil.rpc("eth_sendRawTransaction", json!([raw])).await,
                None => anvil.rpc("eth_sendTransaction", json!([req])).await,
            };
        }
        anvil.rpc("evm_mine", json!([])).await;
        anvil.rpc("evm_setAutomine", json!([true])).await;
        anvil.mine(rng.gen_range(0..d)).await;
    } else {
        let txs: Vec<Value> = again.iter().map(|(r, _, o)| json!([r, o])).collect();
        anvil.rpc("anvil_reorg", json!([d, txs])).await;
    }
    Some(d)
}
