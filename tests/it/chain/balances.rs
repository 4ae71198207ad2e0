//! What the balance check reads from a real EVM node (anvil): balances at past blocks in
//! batches, token transfers in and out of a deposit address, and the native coin's changes
//! found by bisection, each explained by the block's transactions and their fees.

use payrecon::chain::ChainClient;
use payrecon::domain::{Asset, U256};

use super::{addr, client};
use crate::evm::{deploy_ledger_token, send_native, send_token};
use crate::support::Anvil;

fn head_of(v: serde_json::Value) -> u64 {
    u64::from_str_radix(v.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
}

#[tokio::test]
async fn balances_token_flows_and_native_changes_explain_a_deposit_address() {
    let Some(anvil) = Anvil::start().await else {
        return;
    };
    let ChainClient::Evm(evm) = client(&anvil.url) else {
        panic!("an EVM client")
    };
    let accounts = anvil.accounts().await;
    let (merchant_payer, deposit, treasury, thief) =
        (&accounts[0], &accounts[2], &accounts[3], &accounts[4]);
    let token = deploy_ledger_token(&anvil).await;
    let start = head_of(anvil.rpc("eth_blockNumber", serde_json::json!([])).await);
    let dep = addr(deposit);
    let tok = addr(&token);
    let holdings = vec![
        (dep.clone(), Asset::Native),
        (dep.clone(), Asset::Token(tok.clone())),
    ];
    let before = evm.balances_at(start, &holdings).await.unwrap();
    assert_eq!(before[1], U256::ZERO);

    let paid_in = send_token(&anvil, &token, merchant_payer, deposit, U256::from(500u32)).await;
    let swept = send_token(&anvil, &token, deposit, treasury, U256::from(200u32)).await;
    let one_eth = U256::from(10u64).pow(U256::from(18u8));
    let native_in = send_native(&anvil, &accounts[1], deposit, one_eth).await;
    let drained = send_native(&anvil, deposit, thief, one_eth / U256::from(2u8)).await;
    let end = head_of(anvil.rpc("eth_blockNumber", serde_json::json!([])).await);
    let after = evm.balances_at(end, &holdings).await.unwrap();
    assert_eq!(after[1], U256::from(300u32), "balanceOf at the end");
    // A past block's balance is the past's.
    assert_eq!(evm.balances_at(start, &holdings).await.unwrap(), before);

    // Tokens: both directions, one log each, spelled as the ledger spells addresses.
    let flows = evm
        .token_flows(
            std::slice::from_ref(&tok),
            std::slice::from_ref(&dep),
            start + 1,
            end,
        )
        .await
        .unwrap();
    let got: Vec<(String, String, String, U256)> = flows
        .iter()
        .map(|f| {
            (
                f.key.tx_hash.to_string(),
                f.from.clone(),
                f.to.clone(),
                f.amount,
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (
                paid_in,
                merchant_payer.to_lowercase(),
                deposit.to_lowercase(),
                U256::from(500u32)
            ),
            (
                swept,
                deposit.to_lowercase(),
                treasury.to_lowercase(),
                U256::from(200u32)
            ),
        ]
    );

    // Native: the blocks where the balance changed (the sweep's gas, the payment in, the
    // drain), and their transactions explain the change to the wei.
    let changes = evm
        .native_changes(&dep, (start, before[0]), (end, after[0]))
        .await
        .unwrap();
    assert_eq!(changes.len(), 3, "{changes:?}");
    let mut seen = Vec::new();
    for (block, was, now) in &changes {
        let flows = evm.native_flows(&dep, *block).await.unwrap();
        let (mut plus, mut minus) = (U256::ZERO, U256::ZERO);
        for f in &flows {
            if f.to == deposit.to_lowercase() {
                plus += f.amount;
            } else {
                minus += f.amount + f.fee;
                assert!(
                    f.fee > U256::ZERO,
                    "a transaction the address sent paid a fee"
                );
            }
            seen.push((f.key.tx_hash.to_string(), f.key.log_index, f.amount));
        }
        assert_eq!(*was + plus - minus, *now, "block {block} explained");
    }
    assert!(seen.contains(&(native_in, -1, one_eth)), "{seen:?}");
    assert!(
        seen.contains(&(drained, -1, one_eth / U256::from(2u8))),
        "{seen:?}"
    );
}
