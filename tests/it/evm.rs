//! A hand-assembled token contract for anvil (no solc needed) and helpers to send payments.
//!
//! Runtime: calldata = `to` (32-byte word) ++ `amount` (32 bytes) ++ optional `mode` word.
//! Mode 0 emits `LOG3(Transfer, caller, to)` with the amount as data (an ERC-20 transfer);
//! mode 1 emits `LOG4(Transfer, caller, to, amount)` with no data (an ERC-721 transfer);
//! mode 2 reverts.
#![allow(dead_code)]

use payrecon::domain::U256;
use serde_json::json;

use crate::support::Anvil;

const TRANSFER: &str = "ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
/// Gas for every call, so that anvil never estimates (estimation refuses reverting calls).
const GAS: &str = "0x40000";

// Opcodes.
const PUSH1: u8 = 0x60;
const PUSH32: u8 = 0x7f;
const CALLDATALOAD: u8 = 0x35;
const DUP1: u8 = 0x80;
const EQ: u8 = 0x14;
const JUMPI: u8 = 0x57;
const JUMPDEST: u8 = 0x5b;
const MSTORE: u8 = 0x52;
const CALLER: u8 = 0x33;
const LOG3: u8 = 0xa3;
const LOG4: u8 = 0xa4;
const STOP: u8 = 0x00;
const REVERT: u8 = 0xfd;
const CODECOPY: u8 = 0x39;
const RETURN: u8 = 0xf3;

fn push32_transfer() -> Vec<u8> {
    let mut v = vec![PUSH32];
    v.extend(hex::decode(TRANSFER).unwrap());
    v
}

/// The contract's runtime code.
pub fn runtime() -> Vec<u8> {
    let mut log3 = vec![PUSH1, 0x20, CALLDATALOAD, PUSH1, 0x00, MSTORE];
    log3.extend([PUSH1, 0x00, CALLDATALOAD, CALLER]);
    log3.extend(push32_transfer());
    log3.extend([PUSH1, 0x20, PUSH1, 0x00, LOG3, STOP]);

    let mut log4 = vec![
        JUMPDEST,
        PUSH1,
        0x20,
        CALLDATALOAD,
        PUSH1,
        0x00,
        CALLDATALOAD,
        CALLER,
    ];
    log4.extend(push32_transfer());
    log4.extend([PUSH1, 0x00, PUSH1, 0x00, LOG4, STOP]);

    let revert = [JUMPDEST, PUSH1, 0x00, PUSH1, 0x00, REVERT];

    const DISPATCH_LEN: usize = 16;
    let log4_at = (DISPATCH_LEN + log3.len()) as u8;
    let revert_at = log4_at + log4.len() as u8;
    let mut code = vec![PUSH1, 0x40, CALLDATALOAD];
    code.extend([DUP1, PUSH1, 0x02, EQ, PUSH1, revert_at, JUMPI]);
    code.extend([PUSH1, 0x01, EQ, PUSH1, log4_at, JUMPI]);
    assert_eq!(code.len(), DISPATCH_LEN);
    code.extend(log3);
    code.extend(log4);
    code.extend(revert);
    code
}

/// Init code that returns `runtime()`.
pub fn init_code() -> Vec<u8> {
    let runtime = runtime();
    let len = u8::try_from(runtime.len()).expect("runtime under 256 bytes");
    const INIT_LEN: u8 = 12;
    let mut code = vec![PUSH1, len, PUSH1, INIT_LEN, PUSH1, 0x00, CODECOPY];
    code.extend([PUSH1, len, PUSH1, 0x00, RETURN]);
    assert_eq!(code.len(), INIT_LEN as usize);
    code.extend(runtime);
    code
}

/// Deploys the token from anvil's first account; returns its lowercase address.
pub async fn deploy_token(anvil: &Anvil) -> String {
    deploy(anvil, &init_code()).await
}

/// Deploys `code` (init code) from anvil's first account; returns its lowercase address.
async fn deploy(anvil: &Anvil, code: &[u8]) -> String {
    let from = anvil.accounts().await[0].clone();
    let data = format!("0x{}", hex::encode(code));
    let tx = anvil
        .rpc(
            "eth_sendTransaction",
            json!([{"from": from, "data": data, "gas": "0x100000"}]),
        )
        .await;
    let receipt = anvil.receipt(tx.as_str().unwrap()).await;
    assert_eq!(
        receipt["status"], "0x1",
        "token deployment failed: {receipt}"
    );
    receipt["contractAddress"].as_str().unwrap().to_lowercase()
}

/// Deploys the balance-keeping token (testkit's `ledger_token_init_code`) from the first
/// account.
pub async fn deploy_ledger_token(anvil: &Anvil) -> String {
    deploy(anvil, &payrecon_testkit::anvil::ledger_token_init_code()).await
}

fn calldata(to: &str, amount: U256, mode: u8) -> String {
    let to_word = format!("{:0>64}", to.trim_start_matches("0x"));
    let mut mode_word = [0u8; 32];
    mode_word[31] = mode;
    format!(
        "0x{to_word}{}{}",
        hex::encode(amount.to_be_bytes::<32>()),
        hex::encode(mode_word)
    )
}

/// Sends a call to the token and returns the tx hash (not waiting for the receipt).
async fn call_token(anvil: &Anvil, token: &str, from: &str, data: String) -> String {
    let tx = json!([{"from": from, "to": token, "data": data, "gas": GAS}]);
    let hash = anvil.rpc("eth_sendTransaction", tx).await;
    hash.as_str().unwrap().to_lowercase()
}

/// An ERC-20-shaped `Transfer(from, to, amount)`; waits for the receipt.
pub async fn send_token(anvil: &Anvil, token: &str, from: &str, to: &str, amount: U256) -> String {
    let tx = call_token(anvil, token, from, calldata(to, amount, 0)).await;
    anvil.receipt(&tx).await;
    tx
}

/// An ERC-721-shaped `Transfer(from, to, token_id)` (4 topics); waits for the receipt.
pub async fn send_nft_like(anvil: &Anvil, token: &str, from: &str, to: &str, id: U256) -> String {
    let tx = call_token(anvil, token, from, calldata(to, id, 1)).await;
    anvil.receipt(&tx).await;
    tx
}

/// A token call that reverts (receipt status 0); waits for the receipt.
pub async fn send_reverting(
    anvil: &Anvil,
    token: &str,
    from: &str,
    to: &str,
    amount: U256,
) -> String {
    let tx = call_token(anvil, token, from, calldata(to, amount, 2)).await;
    anvil.receipt(&tx).await;
    tx
}

/// A plain value transfer of `wei`; waits for the receipt.
pub async fn send_native(anvil: &Anvil, from: &str, to: &str, wei: U256) -> String {
    let tx = json!([{"from": from, "to": to, "value": format!("{wei:#x}")}]);
    let hash = anvil.rpc("eth_sendTransaction", tx).await;
    let hash = hash.as_str().unwrap().to_lowercase();
    anvil.receipt(&hash).await;
    hash
}

/// Several token transfers mined together in ONE block (automine off, send, mine 1, on).
pub async fn send_tokens_in_one_block(
    anvil: &Anvil,
    token: &str,
    from: &str,
    payments: &[(&str, U256)],
) -> Vec<String> {
    anvil.rpc("evm_setAutomine", json!([false])).await;
    let mut hashes = Vec::new();
    for (to, amount) in payments {
        hashes.push(call_token(anvil, token, from, calldata(to, *amount, 0)).await);
    }
    anvil.mine(1).await;
    anvil.rpc("evm_setAutomine", json!([true])).await;
    for h in &hashes {
        anvil.receipt(h).await;
    }
    hashes
}
