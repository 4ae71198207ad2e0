//! A Laravel page of Chaingateway notifications read record by record: a malformed record is
//! a `Rejected` with a reason naming the field, and the rest of the page still counts.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::domain::amount::decimal_to_base_units;
use crate::domain::{Asset, ChainKind, U256};
use crate::providers::Reason;
use crate::providers::{Page, ProviderRecord, Rejected};

/// `type` values that mean the chain's native coin (whatever `contractaddress` says).
const NATIVE_TYPES: &[&str] = &[
    "ETH", "BNB", "MATIC", "POL", "TRX", "BTC", "AVAX", "FTM", "ARB", "OP", "NATIVE",
];

/// Native coins' decimals when `decimals` has no `"chain:native"` entry.
const NATIVE_DECIMALS: u8 = 18;

/// The `data` array of a page body; `Err` when the body is not a page at all.
pub(super) fn page_data(body: &Value) -> Result<&Vec<Value>, Reason> {
    body.get("data")
        .and_then(Value::as_array)
        .ok_or_else(|| Reason::from("the body has no `data` array"))
}

/// More pages than this in one list is taken for a broken body, not a list to walk.
const MAX_PAGES: u64 = 1_000_000;

/// `last_page` of a page body (Laravel answers 1 for an empty list; 0 is accepted too).
pub(super) fn last_page(body: &Value) -> Result<u64, Reason> {
    let last = match body.get("last_page") {
        Some(Value::Number(n)) => n.as_u64(),
        Some(Value::String(s)) => s.trim().parse().ok(),
        _ => None,
    }
    .ok_or_else(|| "the body has no numeric `last_page`".to_string())?;
    if last > MAX_PAGES {
        return Err(Reason(format!(
            "implausible `last_page` {last} (more than {MAX_PAGES})"
        )));
    }
    Ok(last)
}

/// A Laravel length-aware paginator's count field (`total`, `per_page`), when it is there.
pub(super) fn count(body: &Value, field: &str) -> Option<u64> {
    match body.get(field)? {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// Reads every record of `data`; each one is either a record or a rejection.
pub(super) fn read_page(
    data: &[Value],
    chain: &str,
    chain_kind: ChainKind,
    failed: bool,
    decimals: &HashMap<String, u8>,
) -> Page {
    let mut page = Page::default();
    for raw in data {
        match read_record(raw, chain, chain_kind, failed, decimals) {
            Ok(record) => page.records.push(record),
            Err(rejected) => page.rejected.push(rejected),
        }
    }
    page
}

/// One record, field by field.
pub(super) fn read_record(
    raw: &Value,
    chain: &str,
    chain_kind: ChainKind,
    failed: bool,
    decimals: &HashMap<String, u8>,
) -> Result<ProviderRecord, Rejected> {
    let Some(obj) = raw.as_object() else {
        return Err(Rejected {
            id: None,
            reason: format!("record is not an object: {}", kind(raw)),
        });
    };
    let id = match obj.get("id") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_string(),
        Some(Value::Number(n)) if n.is_u64() || n.is_i64() => n.to_string(),
        other => {
            return Err(Rejected {
                id: None,
                reason: format!(
                    "id: missing or not a string or integer ({})",
                    opt_kind(other)
                ),
            })
        }
    };
    let reject = |reason: Reason| Rejected {
        id: Some(id.clone()),
        reason: reason.0,
    };
    // Each chain kind's spellings (a Tron record: base58 addresses, a txid without 0x; its
    // EVM hex form is accepted too).
    let tx_hash = chain_kind
        .tx_hash(string_field(obj, "txid").map_err(&reject)?)
        .map_err(|e| reject(Reason(format!("txid: {}", e.reason))))?;
    let to = chain_kind
        .address("to", string_field(obj, "to").map_err(&reject)?)
        .map_err(|e| reject(Reason(format!("to: {}", e.reason))))?;
    let asset = read_asset(obj, chain_kind).map_err(&reject)?;
    let created_at = match obj.get("created_at") {
        Some(Value::String(s)) => parse_time(s)
            .ok_or_else(|| reject(Reason(format!("created_at: not a timestamp: {s:?}"))))?,
        other => {
            return Err(reject(Reason(format!(
                "created_at: missing ({})",
                opt_kind(other)
            ))))
        }
    };
    check_block_number(obj.get("blocknumber")).map_err(&reject)?;
    let amount_hint = amount_hint(obj.get("amount"), chain, &asset, decimals);
    Ok(ProviderRecord {
        id,
        chain: chain.to_string(),
        tx_hash: Some(tx_hash),
        log_index: None,
        asset: Some(asset),
        to: Some(to),
        order_ref: None,
        amount_hint,
        status: None,
        created_at,
        failed,
    })
}

fn string_field<'a>(obj: &'a Map<String, Value>, field: &str) -> Result<&'a str, Reason> {
    match obj.get(field) {
        Some(Value::String(s)) => Ok(s),
        other => Err(Reason(format!(
            "{field}: missing or not a string ({})",
            opt_kind(other)
        ))),
    }
}

/// Native for a native coin `type` or an absent contract; otherwise the contract address.
fn read_asset(obj: &Map<String, Value>, chain_kind: ChainKind) -> Result<Asset, Reason> {
    let native_type = obj.get("type").and_then(Value::as_str).is_some_and(|t| {
        NATIVE_TYPES
            .iter()
            .any(|n| n.eq_ignore_ascii_case(t.trim()))
    });
    match obj.get("contractaddress") {
        _ if native_type => Ok(Asset::Native),
        None | Some(Value::Null) => Ok(Asset::Native),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(Asset::Native),
        Some(Value::String(s)) => chain_kind
            .address("contractaddress", s)
            .map(Asset::Token)
            .map_err(|e| Reason(format!("contractaddress: {}", e.reason))),
        Some(other) => Err(Reason(format!(
            "contractaddress: not a string ({})",
            kind(other)
        ))),
    }
}

/// `blocknumber` may be absent, null or empty; when given it must be a non-negative integer.
fn check_block_number(value: Option<&Value>) -> Result<(), Reason> {
    let ok = match value {
        None | Some(Value::Null) => true,
        Some(Value::Number(n)) => n.is_u64(),
        Some(Value::String(s)) => {
            let s = s.trim();
            s.is_empty() || (s.len() <= 20 && s.parse::<u64>().is_ok())
        }
        Some(_) => false,
    };
    if ok {
        Ok(())
    } else {
        Err(Reason(format!(
            "blocknumber: not a block number: {}",
            value.unwrap_or(&Value::Null)
        )))
    }
}

/// The provider's decimal amount in base units, or `None` when absent, unreadable, or of a
/// token whose decimals are not configured. Never a rejection: the chain has the real amount.
fn amount_hint(
    value: Option<&Value>,
    chain: &str,
    asset: &Asset,
    decimals: &HashMap<String, u8>,
) -> Option<U256> {
    let text = match value? {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => return None,
    };
    let key = format!("{chain}:{}", asset.as_str());
    let places = match (decimals.get(&key), asset) {
        (Some(d), _) => *d,
        (None, Asset::Native) => NATIVE_DECIMALS,
        (None, Asset::Token(_)) => return None,
    };
    decimal_to_base_units(&text, places).ok()
}

/// RFC 3339 (`2024-05-05T19:33:52.000000Z`, `…+02:00`) or Laravel's zone-less
/// `2024-05-05 19:33:52` (UTC, the Laravel default).
pub(super) fn parse_time(s: &str) -> Option<jiff::Timestamp> {
    let s = s.trim();
    if let Ok(ts) = s.parse::<jiff::Timestamp>() {
        return Some(ts);
    }
    let civil: jiff::civil::DateTime = s.parse().ok()?;
    civil
        .to_zoned(jiff::tz::TimeZone::UTC)
        .ok()
        .map(|z| z.timestamp())
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn opt_kind(v: Option<&Value>) -> &'static str {
    v.map_or("absent", kind)
}

#[cfg(test)]
mod tests;
