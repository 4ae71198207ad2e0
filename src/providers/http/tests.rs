//! Items read through field pointers: a table of well-formed and malformed items.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use serde_json::{json, Value};

use super::record::read_item;
use super::*;
use crate::domain::{Asset, State, TxHash, U256};

const USDT: &str = "0xdac17f958d2ee523a2206206994597c13d831ec7";

fn settings(unit: AmountUnit) -> HttpSettings {
    HttpSettings {
        name: "p".into(),
        base_url: "http://127.0.0.1:1".into(),
        api_key: None,
        auth_header: "Authorization".into(),
        auth_scheme: "Bearer".into(),
        chains: vec!["ethereum".into(), "polygon".into(), "nile".into()],
        kinds: HashMap::from([("nile".to_string(), crate::domain::ChainKind::Tron)]),
        timeout: Duration::from_secs(1),
        max_retries: 1,
        backoff: Duration::from_millis(1),
        max_concurrency: 1,
        payments: None,
        failed: None,
        fields: FieldPointers {
            event_id: "/id".into(),
            order_ref: Some("/data/order".into()),
            chain: Some("/data/chain".into()),
            tx_hash: Some("/data/tx".into()),
            log_index: Some("/data/log".into()),
            amount: Some("/data/amount".into()),
            asset: Some("/data/asset".into()),
            status: "/status".into(),
            updated_at: "/at".into(),
        },
        amount_unit: unit,
        status_map: BTreeMap::from([
            ("paid".into(), StatusAction::Final),
            ("seen".into(), StatusAction::Pending),
            ("expired".into(), StatusAction::Ignore),
        ]),
        resend: None,
        retry_window: Duration::ZERO,
        preset: None,
        decimals: HashMap::from([
            (format!("ethereum:{USDT}"), 6),
            ("nile:TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t".to_string(), 6),
        ]),
    }
}

fn item(patch: Value) -> Value {
    let mut v = json!({
        "id": "e-1", "status": "paid", "at": "2026-11-01T12:00:00Z",
        "data": {"order": "A-1", "chain": "ethereum", "tx": format!("0x{}", "AB".repeat(32)),
                 "log": 7, "amount": "25.00", "asset": USDT}
    });
    merge(&mut v, patch);
    v
}

fn merge(v: &mut Value, patch: Value) {
    match (v, patch) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, p) in b {
                match a.get_mut(&k) {
                    Some(slot) if p.is_object() => merge(slot, p),
                    _ => {
                        a.insert(k, p);
                    }
                }
            }
        }
        (slot, p) => *slot = p,
    }
}

fn read(unit: AmountUnit, patch: Value) -> Result<Option<ProviderRecord>, Rejected> {
    read_item(&settings(unit), &item(patch), false, None)
}

fn rejected(unit: AmountUnit, patch: Value, want: &str) {
    match read(unit, patch.clone()) {
        Err(r) => assert!(r.reason.contains(want), "{patch}: {}", r.reason),
        Ok(r) => panic!("{patch}: expected a rejection naming {want:?}, got {r:?}"),
    }
}

#[test]
fn a_whole_item_becomes_a_record() {
    let r = read(AmountUnit::Decimal, json!({})).unwrap().unwrap();
    assert_eq!(r.id, "e-1");
    assert_eq!(r.chain, "ethereum");
    assert_eq!(
        r.tx_hash,
        Some(TxHash::parse(&format!("0x{}", "ab".repeat(32))).unwrap())
    );
    assert_eq!(r.log_index, Some(7));
    assert_eq!(r.asset.as_ref().map(Asset::as_str), Some(USDT));
    assert_eq!(r.order_ref.as_deref(), Some("A-1"));
    assert_eq!(r.amount_hint, Some(U256::from(25_000_000u64)));
    assert_eq!(r.status, Some(State::Final));
    assert_eq!(r.created_at.to_string(), "2026-11-01T12:00:00Z");
    assert!(!r.failed);
}

#[test]
fn optional_fields_and_alternative_forms() {
    let d = AmountUnit::Decimal;
    let r = read(d, json!({"id": 42, "at": 1_793_534_400, "data": {"tx": null, "log": "-1", "chain": "Polygon"}}))
        .unwrap()
        .unwrap();
    assert_eq!(
        (r.id.as_str(), r.tx_hash, r.log_index),
        ("42", None, Some(-1))
    );
    assert_eq!(r.chain, "polygon");
    assert_eq!(r.created_at.as_second(), 1_793_534_400);
    assert_eq!(r.amount_hint, None, "no decimals for USDT on polygon");
    let r = read(d, json!({"at": "1793534400", "data": {"asset": null}}))
        .unwrap()
        .unwrap();
    assert_eq!((r.asset, r.amount_hint), (None, None));
    let r = read(d, json!({"data": {"asset": "native", "amount": "1.5"}}))
        .unwrap()
        .unwrap();
    assert_eq!(
        r.amount_hint,
        Some(U256::from(1_500_000_000_000_000_000u128))
    );
    let r = read(AmountUnit::Base, json!({"data": {"amount": 25_000_000}}))
        .unwrap()
        .unwrap();
    assert_eq!(r.amount_hint, Some(U256::from(25_000_000u64)));
    let r = read(AmountUnit::Base, json!({"data": {"amount": "25000000"}}))
        .unwrap()
        .unwrap();
    assert_eq!(r.amount_hint, Some(U256::from(25_000_000u64)));
    assert_eq!(
        read(d, json!({"status": "expired", "data": {"tx": "junk"}})),
        Ok(None)
    );
    assert_eq!(
        read(d, json!({"status": "seen"})).unwrap().unwrap().status,
        Some(State::Pending)
    );
}

#[test]
fn malformed_items_are_rejected_with_the_field_named() {
    let d = AmountUnit::Decimal;
    rejected(
        d,
        json!({"status": "refunded"}),
        "status \"refunded\" is not in status_map",
    );
    rejected(d, json!({"status": null}), "status (/status): missing");
    rejected(
        d,
        json!({"data": {"chain": "tron"}}),
        "unknown chain \"tron\"",
    );
    rejected(d, json!({"data": {"tx": "0x12"}}), "tx_hash (/data/tx)");
    rejected(
        d,
        json!({"data": {"tx": null, "order": null}}),
        "neither tx_hash nor order_ref",
    );
    rejected(d, json!({"data": {"log": -2}}), "log_index");
    rejected(d, json!({"data": {"log": "7a"}}), "log_index");
    rejected(d, json!({"data": {"asset": "usdt"}}), "asset (/data/asset)");
    rejected(
        d,
        json!({"data": {"amount": "25.0000001"}}),
        "more than 6 decimal places",
    );
    rejected(d, json!({"data": {"amount": "1e80"}}), "amount");
    rejected(
        d,
        json!({"data": {"amount": "abc", "asset": null}}),
        "not a decimal amount",
    );
    rejected(d, json!({"data": {"amount": "-1"}}), "negative");
    rejected(d, json!({"data": {"amount": true}}), "amount");
    rejected(
        AmountUnit::Base,
        json!({"data": {"amount": "25.5"}}),
        "not an amount in base units",
    );
    rejected(
        AmountUnit::Base,
        json!({"data": {"amount": "9".repeat(78)}}),
        "does not fit",
    );
    rejected(
        d,
        json!({"at": "yesterday"}),
        "updated_at (/at): not an RFC 3339",
    );
    rejected(d, json!({"at": null}), "updated_at (/at): missing");
    let r = read(d, json!({"id": null})).unwrap_err();
    assert_eq!(r.id, None);
    assert!(r.reason.starts_with("event_id (/id)"), "{}", r.reason);
    let r = read(d, json!({"status": "refunded"})).unwrap_err();
    assert_eq!(r.id.as_deref(), Some("e-1"));
}

#[test]
fn one_chain_needs_no_chain_field_and_webhooks_may_lack_a_time() {
    let mut s = settings(AmountUnit::Decimal);
    s.chains = vec!["ethereum".into()];
    s.fields.chain = None;
    let body = json!({"id": "A-9", "status": "paid", "data": {"order": "A-9"}});
    let now: jiff::Timestamp = "2026-11-02T00:00:00Z".parse().unwrap();
    let r = read_item(&s, &body, false, Some(now)).unwrap().unwrap();
    assert_eq!((r.chain.as_str(), r.created_at), ("ethereum", now));
    assert_eq!((r.tx_hash, r.order_ref.as_deref()), (None, Some("A-9")));
    assert!(read_item(&s, &body, false, None).is_err());
    s.chains.push("polygon".into());
    let r = read_item(&s, &body, false, Some(now)).unwrap_err();
    assert!(r.reason.contains("several chains"), "{}", r.reason);
}

/// An item of a Tron chain (`nile`) is read in Tron's spellings (docs/configuration.md,
/// "Tron"): a base58 or `41…` asset, a txid with or without `0x`; an EVM-only spelling of a
/// Tron asset with a bad checksum is rejected.
#[test]
fn a_tron_item_is_read_in_tron_spellings() {
    let id = "ab".repeat(32);
    let tron = |asset: &str, tx: &str| json!({"data": {"chain": "nile", "asset": asset, "tx": tx, "amount": "25.00"}});
    for (asset, tx) in [
        ("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", id.clone()),
        (
            "41a614f803b6fd780986a42c78ec9c7f77e6ded13c",
            format!("0x{id}"),
        ),
    ] {
        let r = read(AmountUnit::Decimal, tron(asset, &tx))
            .unwrap()
            .unwrap();
        assert_eq!(r.tx_hash.as_ref().map(TxHash::as_str), Some(id.as_str()));
        assert_eq!(
            r.asset.as_ref().map(Asset::as_str),
            Some("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t")
        );
        assert_eq!(
            r.amount_hint,
            Some(U256::from(25_000_000u64)),
            "decimals by the base58 key"
        );
    }
    rejected(
        AmountUnit::Decimal,
        tron("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6u", &id),
        "checksum",
    );
}
