//! Decoding tables: receipts and transactions as a node might send them, well-formed or not.

use serde_json::{json, Value};

use super::evm::decode::resolve;
use super::evm::plan_batches;
use super::*;
use crate::domain::{State, U256};

const TOKEN: &str = "0xdac17f958d2ee523a2206206994597c13d831ec7";
const TO: &str = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8";
const FROM: &str = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266";

fn head() -> ChainHead {
    ChainHead {
        number: 100,
        final_block: 80,
        confirmations: 12,
    }
}

fn hash() -> TxHash {
    TxHash::parse(&format!("0x{}", "ab".repeat(32))).unwrap()
}

fn word(addr: &str) -> String {
    format!("0x{:0>64}", addr.trim_start_matches("0x"))
}

fn token_query(log_index: Option<i64>) -> TransferQuery {
    TransferQuery {
        tx_hash: hash(),
        asset: Some(Asset::parse(TOKEN).unwrap()),
        to: Some(Address::parse(TO).unwrap()),
        log_index,
    }
}

fn log(topics: Vec<String>, data: &str, index: u64) -> Value {
    json!({"address": TOKEN, "topics": topics, "data": data, "logIndex": format!("{index:#x}")})
}

fn transfer_log(amount_hex: &str, index: u64) -> Value {
    let topics = vec![TRANSFER_TOPIC.to_string(), word(FROM), word(TO)];
    log(topics, &format!("0x{amount_hex:0>64}"), index)
}

fn receipt(status: &str, logs: Vec<Value>) -> Value {
    json!({"status": status, "blockNumber": "0x5a", "blockHash": format!("0x{}", "cd".repeat(32)), "logs": logs})
}

fn check(query: &TransferQuery, receipt: Value, tx: Option<Value>) -> Lookup {
    let raw = |v: &Value| serde_json::value::to_raw_value(v).unwrap();
    let tx = tx.as_ref().map(raw);
    resolve(
        "ethereum",
        &head(),
        query,
        Some(&raw(&receipt)),
        tx.as_deref(),
    )
}

fn no_transfer(l: Lookup) -> String {
    match l {
        Lookup::NoTransfer(r) => r,
        other => panic!("expected NoTransfer, got {other:?}"),
    }
}

#[test]
fn token_transfers_decode_with_block_level_indexes() {
    let r = receipt("0x1", vec![transfer_log("10", 7), transfer_log("20", 9)]);
    let Lookup::Found(found) = check(&token_query(None), r.clone(), None) else {
        panic!("expected transfers");
    };
    assert_eq!(found.len(), 2);
    assert_eq!(found[0].key.log_index, 7);
    assert_eq!(found[0].amount, U256::from(16));
    assert_eq!(found[1].amount, U256::from(32));
    assert_eq!(found[0].block.number, 90);
    assert_eq!(found[0].state, State::Pending); // 100 - 90 + 1 = 11 < 12
    let Lookup::Found(one) = check(&token_query(Some(9)), r, None) else {
        panic!("expected one transfer");
    };
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].key.log_index, 9);
}

/// The block's time comes with the receipt's logs where the node sends it (execution-apis
/// #639), and only a non-zero one counts: otherwise none, and the engine reads the header.
#[test]
fn block_times_come_from_the_logs_where_present() {
    let timed = |t: Option<&str>| {
        let mut l = transfer_log("10", 7);
        if let Some(t) = t {
            l["blockTimestamp"] = json!(t);
        }
        let Lookup::Found(found) = check(&token_query(None), receipt("0x1", vec![l]), None) else {
            panic!("expected a transfer");
        };
        found[0].block_time
    };
    let t = jiff::Timestamp::from_second(0x6553_f100).unwrap();
    assert_eq!(timed(Some("0x6553f100")), Some(t));
    assert_eq!(timed(Some("0x0")), None);
    assert_eq!(timed(None), None);
}

#[test]
fn receipts_that_are_not_payments_say_why() {
    assert_eq!(
        check(&token_query(None), Value::Null, None),
        Lookup::NotFound
    );
    assert_eq!(
        check(&token_query(None), receipt("0x0", vec![]), None),
        Lookup::Reverted
    );
    let nft = log(
        vec![TRANSFER_TOPIC.to_string(), word(FROM), word(TO), word("01")],
        "0x",
        0,
    );
    let why = no_transfer(check(&token_query(None), receipt("0x1", vec![nft]), None));
    assert!(why.contains("ERC-721"), "{why}");
    let why = no_transfer(check(&token_query(None), receipt("0x1", vec![]), None));
    assert!(why.contains("no Transfer from"), "{why}");
}

#[test]
fn malformed_receipts_never_panic() {
    let short = transfer_log("", 0).as_object().cloned().map(|mut o| {
        o.insert("data".into(), json!("0x0102"));
        Value::Object(o)
    });
    let why = no_transfer(check(
        &token_query(None),
        receipt("0x1", vec![short.unwrap()]),
        None,
    ));
    assert!(why.contains("not 32"), "{why}");
    let cases = [
        json!({"status": 1, "blockNumber": "0x1", "blockHash": "0x12", "logs": []}),
        json!({"status": "0x1", "blockNumber": "zz", "blockHash": format!("0x{}", "cd".repeat(32))}),
        json!("a string"),
        json!({"status": "0x1", "blockNumber": "0x1", "blockHash": format!("0x{}", "cd".repeat(32)), "logs": [{"address": 5}]}),
    ];
    for c in cases {
        no_transfer(check(&token_query(None), c, None));
    }
    let native = TransferQuery {
        asset: Some(Asset::Native),
        log_index: None,
        ..token_query(None)
    };
    no_transfer(check(
        &native,
        receipt("0x1", vec![]),
        Some(json!({"to": TO, "value": [1]})),
    ));
    no_transfer(check(&native, receipt("0x1", vec![]), None));
}

#[test]
fn native_transfers_have_log_index_minus_one() {
    let native = TransferQuery {
        asset: Some(Asset::Native),
        log_index: None,
        ..token_query(None)
    };
    let tx = json!({"to": TO, "value": "0x2386f26fc10000"});
    let Lookup::Found(found) = check(&native, receipt("0x1", vec![]), Some(tx)) else {
        panic!("expected a native transfer");
    };
    assert_eq!(found[0].key.log_index, -1);
    assert_eq!(found[0].amount, U256::from(10_000_000_000_000_000u64));
    let zero = json!({"to": TO, "value": "0x0"});
    no_transfer(check(&native, receipt("0x1", vec![]), Some(zero)));
    let elsewhere = json!({"to": FROM, "value": "0x1"});
    no_transfer(check(&native, receipt("0x1", vec![]), Some(elsewhere)));
}

#[test]
fn batches_never_split_a_transaction() {
    let hashes: Vec<TxHash> = (0..5u8)
        .map(|i| TxHash::parse(&format!("0x{}", format!("{i:02x}").repeat(32))).unwrap())
        .collect();
    let refs: Vec<&TxHash> = hashes.iter().collect();
    let native = |h: &TxHash| h == &hashes[1];
    let sizes = |size| -> Vec<usize> {
        plan_batches(&refs, native, size)
            .iter()
            .map(Vec::len)
            .collect()
    };
    assert_eq!(sizes(2), vec![1, 1, 2, 1]);
    assert_eq!(sizes(1), vec![1, 1, 1, 1, 1]);
    assert_eq!(sizes(10), vec![5]);
}

fn transfer_of(amount: U256, log_index: i64) -> ChainTransfer {
    ChainTransfer {
        key: crate::domain::PaymentKey {
            chain: "ethereum".into(),
            tx_hash: hash(),
            log_index,
        },
        to: Address::parse(TO).unwrap(),
        asset: Asset::parse(TOKEN).unwrap(),
        amount,
        block: crate::domain::BlockRef {
            number: 90,
            hash: format!("0x{}", "cd".repeat(32)),
        },
        state: State::Confirmed,
        block_time: None,
    }
}

#[test]
fn transfers_over_the_ledgers_largest_amount_are_not_answered_as_payments() {
    let max = U256::from(999u64);
    let (ok, big) = (transfer_of(max, 1), transfer_of(max + U256::from(1u8), 2));
    // One of two over the limit: the other is the answer.
    assert_eq!(
        within(Lookup::Found(vec![ok.clone(), big.clone()]), max),
        Lookup::Found(vec![ok.clone()])
    );
    // Only one, over it: no transfer, saying why (the amount and the digits kept).
    match within(Lookup::Found(vec![big]), max) {
        Lookup::NoTransfer(why) => {
            assert!(why.contains("1000 base units"), "{why}");
            assert!(why.contains("3 digits at most"), "{why}");
        }
        other => panic!("{other:?}"),
    }
    // Within it, and other answers, pass as they are.
    assert_eq!(
        within(Lookup::Found(vec![ok.clone()]), max),
        Lookup::Found(vec![ok])
    );
    assert_eq!(within(Lookup::Reverted, max), Lookup::Reverted);
}
