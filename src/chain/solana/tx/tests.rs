use serde_json::{json, Value};

use super::*;

const PAYER: &str = "2tnQ7vx5vGZEjD6JgqxqFZ8nmT3cNxvLX8VVhhnpuTHr";
const SHOP: &str = "r1gsYRWGo6TEQc33B3YhWsvzQ7kTSkHe9pbBdMBFcoJ";
const PAYER_ATA: &str = "8tqAjXXhfGvi6j8NMrQuhwxmFGHqgWjVpGtnTc2UVTWW";
const SHOP_ATA: &str = "GRzmMejbF8VTXDoeNvbs9nfaByRCYxUpdu6jn1DNBFB8";
const USDC: &str = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";

fn keys(ks: &[&str]) -> Value {
    Value::Array(ks.iter().map(|k| json!({ "pubkey": k })).collect())
}

fn token_balance(i: usize, owner: &str, amount: &str) -> Value {
    json!({"accountIndex": i, "mint": USDC, "owner": owner,
           "uiTokenAmount": {"amount": amount, "decimals": 6, "uiAmountString": "x"}})
}

fn tx(v: Value) -> Tx {
    serde_json::from_value(v).expect("a transaction")
}

/// A SOL transfer at top-level instruction 1 (after a memo the node leaves as a string).
#[test]
fn a_sol_transfer_pays_its_destination_at_its_instruction() {
    let t = tx(json!({
        "slot": 34, "blockTime": 1_796_523,
        "meta": {"err": null, "fee": 5000, "preBalances": [2_000_000_000u64, 0, 1],
                 "postBalances": [1_899_995_000u64, 100_000_000, 1], "innerInstructions": []},
        "transaction": {"signatures": ["sig"], "message": {
            "accountKeys": keys(&[PAYER, SHOP, SYSTEM]),
            "instructions": [
                {"programId": "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr", "parsed": "order 7"},
                {"programId": SYSTEM, "parsed": {"type": "transfer",
                  "info": {"source": PAYER, "destination": SHOP, "lamports": 100_000_000}}}]}}
    }));
    let p = t.payments();
    assert_eq!(
        p.payments,
        [Payment {
            index: 65_536,
            wallet: SHOP.into(),
            mint: None,
            amount: U256::from(100_000_000u64)
        }]
    );
    assert!(p.refused.is_empty());
    assert!(!t.failed());
    // surfpool 1.2.0's block time (seconds ÷ 1000) is not believed.
    assert_eq!(t.time(), None);
    assert!(plausible_time(Some(1_796_523_924)).is_some());
}

/// transferChecked into an account the transaction created (no balance before: 0), and a
/// plain transfer (no mint in its info: read from the token balances), both to SHOP's account.
#[test]
fn token_transfers_pay_the_accounts_owner_in_the_accounts_mint() {
    let checked = json!({"programId": TOKEN, "parsed": {"type": "transferChecked", "info": {
        "source": PAYER_ATA, "destination": SHOP_ATA, "mint": USDC, "authority": PAYER,
        "tokenAmount": {"amount": "12345678", "decimals": 6}}}});
    let plain = json!({"programId": TOKEN, "parsed": {"type": "transfer", "info": {
        "source": PAYER_ATA, "destination": SHOP_ATA, "authority": PAYER, "amount": "1000"}}});
    let t = tx(json!({
        "slot": 39,
        "meta": {"err": null, "fee": 5000, "preBalances": [9, 9, 0], "postBalances": [9, 9, 9],
                 "preTokenBalances": [token_balance(1, PAYER, "50000000")],
                 "postTokenBalances": [token_balance(1, PAYER, "37653322"),
                                       token_balance(2, SHOP, "12346678")],
                 "innerInstructions": [{"index": 0, "instructions": [plain]}]},
        "transaction": {"signatures": ["sig"], "message": {
            "accountKeys": keys(&[PAYER, PAYER_ATA, SHOP_ATA]),
            "instructions": [{"programId": "ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL",
                              "parsed": {"type": "createIdempotent", "info": {}}}, checked]}}
    }));
    let p = t.payments();
    let got: Vec<(i64, &str, Option<&str>, u64)> = p
        .payments
        .iter()
        .map(|p| {
            (
                p.index,
                p.wallet.as_str(),
                p.mint.as_deref(),
                p.amount.to::<u64>(),
            )
        })
        .collect();
    // Inner 0 of instruction 0 (index 1), then top-level instruction 1 (index 65536).
    assert_eq!(
        got,
        [
            (1, SHOP, Some(USDC), 1000),
            (65_536, SHOP, Some(USDC), 12_345_678)
        ]
    );
    assert!(p.refused.is_empty(), "{:?}", p.refused);
}

/// A parsed amount the balances do not show is left out, saying why; a failed transaction
/// is marked so (the caller credits nothing of it).
#[test]
fn an_amount_the_balance_does_not_show_is_refused() {
    let t = tx(json!({
        "slot": 40,
        "meta": {"err": {"InstructionError": [0, {"Custom": 1}]}, "fee": 5000,
                 "preBalances": [1_000_000, 0], "postBalances": [995_000, 10]},
        "transaction": {"signatures": ["sig"], "message": {
            "accountKeys": keys(&[PAYER, SHOP]),
            "instructions": [{"programId": SYSTEM, "parsed": {"type": "transfer",
                "info": {"source": PAYER, "destination": SHOP, "lamports": 5_000_000}}}]}}
    }));
    assert!(t.failed());
    let p = t.payments();
    assert!(p.payments.is_empty());
    assert_eq!(p.refused.len(), 1);
    assert!(
        p.refused[0].contains("does not show in its balance (0 → 10)"),
        "{:?}",
        p.refused
    );
}

/// Lamports moved into a token account (its rent, by an inner System transfer) are not
/// tokens: the token payment into that account still shows. A move between two accounts of
/// one wallet, and SOL sent to itself, pay nothing.
#[test]
fn rent_is_not_tokens_and_a_wallet_paying_itself_pays_nothing() {
    const OTHER_ATA: &str = "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin";
    let rent = json!({"programId": SYSTEM, "parsed": {"type": "transfer", "info": {
        "source": PAYER, "destination": SHOP_ATA, "lamports": 2_039_280}}});
    let pay = json!({"programId": TOKEN_2022, "parsed": {"type": "transferChecked", "info": {
        "source": PAYER_ATA, "destination": SHOP_ATA, "mint": USDC,
        "tokenAmount": {"amount": "700", "decimals": 6}}}});
    let shuffle = json!({"programId": TOKEN, "parsed": {"type": "transfer", "info": {
        "source": PAYER_ATA, "destination": OTHER_ATA, "amount": "5"}}});
    let to_self = json!({"programId": SYSTEM, "parsed": {"type": "transfer", "info": {
        "source": PAYER, "destination": PAYER, "lamports": 1}}});
    let t = tx(json!({
        "meta": {"err": null, "fee": 5000, "preBalances": [9_000_000, 0, 0, 0],
                 "postBalances": [6_955_720, 0, 2_039_280, 0],
                 "preTokenBalances": [token_balance(1, PAYER, "1000"),
                                      token_balance(3, PAYER, "0")],
                 "postTokenBalances": [token_balance(1, PAYER, "295"),
                                       token_balance(2, SHOP, "700"),
                                       token_balance(3, PAYER, "5")],
                 "innerInstructions": [{"index": 0, "instructions": [rent]}]},
        "transaction": {"signatures": ["first", "second"], "message": {
            "accountKeys": keys(&[PAYER, PAYER_ATA, SHOP_ATA, OTHER_ATA]),
            "instructions": [{"programId": "ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL",
                              "parsed": {"type": "create", "info": {}}},
                             pay, shuffle, to_self]}}
    }));
    assert_eq!(t.first_signature(), Some("first"));
    let p = t.payments();
    let got: Vec<(i64, &str, Option<&str>)> = p
        .payments
        .iter()
        .map(|p| (p.index, p.wallet.as_str(), p.mint.as_deref()))
        .collect();
    // The rent (inner 0 of 0) pays SHOP_ATA's own address in SOL; the token payment at 1.
    assert_eq!(
        got,
        [(1, SHOP_ATA, None), (65_536, SHOP, Some(USDC))],
        "{:?}",
        p.refused
    );
    assert!(p.refused.is_empty(), "{:?}", p.refused);
}

/// Token-2022 transfer fees: `transferCheckedWithFee` credits the amount less its fee (what the
/// recipient's account keeps); `transferChecked` on a fee-bearing mint credits what arrived;
/// the classic Token program withholds nothing, so the same shortfall there is refused.
#[test]
fn a_token_2022_transfer_fee_is_not_credited() {
    let with_fee = |program: &str, kind: &str| {
        json!({"programId": program, "parsed": {"type": kind, "info": {
            "source": PAYER_ATA, "destination": SHOP_ATA, "mint": USDC, "authority": PAYER,
            "tokenAmount": {"amount": "10000000", "decimals": 6},
            "feeAmount": {"amount": "10000", "decimals": 6}}}})
    };
    let paid = |ix: Value| {
        tx(json!({
            "meta": {"err": null, "fee": 5000, "preBalances": [9, 9, 9], "postBalances": [9, 9, 9],
                     "preTokenBalances": [token_balance(1, PAYER, "50000000"),
                                          token_balance(2, SHOP, "5")],
                     "postTokenBalances": [token_balance(1, PAYER, "40000000"),
                                           token_balance(2, SHOP, "9990005")]},
            "transaction": {"signatures": ["sig"], "message": {
                "accountKeys": keys(&[PAYER, PAYER_ATA, SHOP_ATA]), "instructions": [ix]}}
        }))
        .payments()
    };
    for kind in ["transferCheckedWithFee", "transferChecked"] {
        let p = paid(with_fee(TOKEN_2022, kind));
        let got: Vec<(i64, &str, u64)> = p
            .payments
            .iter()
            .map(|p| (p.index, p.wallet.as_str(), p.amount.to::<u64>()))
            .collect();
        assert_eq!(got, [(0, SHOP, 9_990_000)], "{kind}: {:?}", p.refused);
    }
    let classic = paid(with_fee(TOKEN, "transferChecked"));
    assert!(classic.payments.is_empty());
    assert!(
        classic.refused[0].contains("does not show in its balance (5 → 9990005)"),
        "{:?}",
        classic.refused
    );
    // A fee larger than the amount is no transfer at all.
    let mut over = with_fee(TOKEN_2022, "transferCheckedWithFee");
    over["parsed"]["info"]["feeAmount"]["amount"] = json!("10000001");
    assert!(paid(over).payments.is_empty());
}
