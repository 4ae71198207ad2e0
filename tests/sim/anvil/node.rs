//! The simulator's transactions on the shared anvil driver (`payrecon_testkit::anvil`, which
//! also deploys the hand-assembled token): legacy requests anvil signs the same way every time.

use serde_json::{json, Value};

pub use payrecon_testkit::anvil::Anvil;

/// A legacy request with a fixed nonce and gas price: anvil signs it the same way every
/// time, so `anvil_reorg` can include it again (same hash). `token` None: native `amount`.
pub fn request(
    from: &str,
    nonce: u64,
    gwei: u64,
    to: &str,
    amount: u128,
    token: Option<&str>,
) -> Value {
    let price = format!("{:#x}", gwei * 1_000_000_000);
    let nonce = format!("{nonce:#x}");
    match token {
        Some(token) => {
            let data = format!("0x{:0>64}{amount:064x}", to.trim_start_matches("0x"));
            json!({"from": from, "to": token, "data": data, "gas": "0x20000",
                "gasPrice": price, "nonce": nonce})
        }
        None => json!({"from": from, "to": to, "value": format!("{amount:#x}"),
            "gas": "0x5208", "gasPrice": price, "nonce": nonce}),
    }
}
