//! One JSON item (a list item or a webhook body) read through the field pointers: a record,
//! nothing (its status maps to `ignore`), or a rejection whose reason names the field.

use std::str::FromStr;

use serde_json::Value;

use super::settings::{AmountUnit, HttpSettings, StatusAction};
use crate::domain::amount::decimal_to_base_units;
use crate::domain::{parse_base_units, Asset, ChainKind, TxHash, U256};
use crate::providers::Reason;
use crate::providers::{ProviderRecord, Rejected};

/// Native coins' decimals when `decimals` has no `"chain:native"` entry.
const NATIVE_DECIMALS: u8 = 18;

/// Reads `item`; `fallback_time` stands in for a missing `updated_at` (webhook bodies that
/// carry none), else a missing `updated_at` is a rejection.
pub(super) fn read_item(
    settings: &HttpSettings,
    item: &Value,
    failed: bool,
    fallback_time: Option<jiff::Timestamp>,
) -> Result<Option<ProviderRecord>, Rejected> {
    let id = read_event_id(settings, item)?;
    let reject = |reason: Reason| Rejected {
        id: Some(id.clone()),
        reason: reason.0,
    };
    let status = read_status(settings, item).map_err(&reject)?;
    let Some(status) = status.state() else {
        return Ok(None);
    };
    let chain = read_chain(settings, item).map_err(&reject)?;
    let kind = settings.kinds.get(&chain).copied().unwrap_or_default();
    let order_ref = read_order_ref(settings, item).map_err(&reject)?;
    let tx_hash = read_tx_hash(settings, item, kind).map_err(&reject)?;
    if tx_hash.is_none() && order_ref.is_none() {
        return Err(reject(
            "neither tx_hash nor order_ref is given: the record cannot be matched".into(),
        ));
    }
    let log_index = read_log_index(settings, item).map_err(&reject)?;
    let asset = read_asset(settings, item, kind).map_err(&reject)?;
    let f = &settings.fields;
    let amount_hint = match opt(item, f.amount.as_deref()) {
        None => None,
        Some(v) => read_amount(settings, v, &chain, asset.as_ref())
            .map_err(|e| reject(Reason(format!("amount ({}): {e}", ptr(&f.amount)))))?,
    };
    let created_at = read_updated_at(settings, item, fallback_time).map_err(&reject)?;
    Ok(Some(ProviderRecord {
        id,
        chain,
        tx_hash,
        log_index,
        asset,
        to: None,
        order_ref,
        amount_hint,
        status: Some(status),
        created_at,
        failed,
    }))
}

/// The item's `event_id`: a non-blank string or an integer (a rejection without an id).
fn read_event_id(settings: &HttpSettings, item: &Value) -> Result<String, Rejected> {
    let p = &settings.fields.event_id;
    match item.pointer(p) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.trim().to_string()),
        Some(Value::Number(n)) if n.is_u64() || n.is_i64() => Ok(n.to_string()),
        other => Err(Rejected {
            id: None,
            reason: format!(
                "event_id ({p}): missing or not a string or integer ({})",
                kind(other)
            ),
        }),
    }
}

/// The item's `order_ref`, if any: a non-blank string or an integer.
fn read_order_ref(settings: &HttpSettings, item: &Value) -> Result<Option<String>, Reason> {
    let p = settings.fields.order_ref.as_deref();
    match opt(item, p) {
        None => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.trim().to_string())),
        Some(Value::Number(n)) if n.is_u64() || n.is_i64() => Ok(Some(n.to_string())),
        Some(other) => Err(field_error("order_ref", p, other)),
    }
}

/// The item's `tx_hash`, if any, in the canonical form of the chain's kind.
fn read_tx_hash(
    settings: &HttpSettings,
    item: &Value,
    chain_kind: ChainKind,
) -> Result<Option<TxHash>, Reason> {
    let f = &settings.fields;
    match opt(item, f.tx_hash.as_deref()) {
        None => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => match chain_kind.tx_hash(s.trim()) {
            Ok(h) => Ok(Some(h)),
            Err(e) => Err(Reason(format!(
                "tx_hash ({}): {}",
                ptr(&f.tx_hash),
                e.reason
            ))),
        },
        Some(other) => Err(field_error("tx_hash", f.tx_hash.as_deref(), other)),
    }
}

/// The item's `log_index`, if any: an integer (or a string holding one) of at least -1.
fn read_log_index(settings: &HttpSettings, item: &Value) -> Result<Option<i64>, Reason> {
    let p = settings.fields.log_index.as_deref();
    match opt(item, p) {
        None => Ok(None),
        Some(v) => match integer(v) {
            Some(n) if n >= -1 => Ok(Some(n)),
            _ => Err(field_error("log_index", p, v)),
        },
    }
}

/// The item's `asset`, if any, in the canonical form of the chain's kind.
fn read_asset(
    settings: &HttpSettings,
    item: &Value,
    chain_kind: ChainKind,
) -> Result<Option<Asset>, Reason> {
    let f = &settings.fields;
    match opt(item, f.asset.as_deref()) {
        None => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => match chain_kind.asset(s.trim()) {
            Ok(a) => Ok(Some(a)),
            Err(e) => Err(Reason(format!("asset ({}): {}", ptr(&f.asset), e.reason))),
        },
        Some(other) => Err(field_error("asset", f.asset.as_deref(), other)),
    }
}

/// The item's `updated_at`, or `fallback_time` (when given) for a missing or null one.
fn read_updated_at(
    settings: &HttpSettings,
    item: &Value,
    fallback_time: Option<jiff::Timestamp>,
) -> Result<jiff::Timestamp, Reason> {
    let p = &settings.fields.updated_at;
    match (item.pointer(p), fallback_time) {
        (None | Some(Value::Null), Some(t)) => Ok(t),
        (v, _) => match read_time(v) {
            Some(t) => Ok(t),
            None => Err(Reason(format!("updated_at ({p}): {}", describe_time(v)))),
        },
    }
}

fn read_status(settings: &HttpSettings, item: &Value) -> Result<StatusAction, Reason> {
    let p = &settings.fields.status;
    let text = match item.pointer(p) {
        Some(Value::String(s)) => s.trim().to_string(),
        Some(Value::Number(n)) => n.to_string(),
        other => {
            return Err(Reason(format!(
                "status ({p}): missing or not a string ({})",
                kind(other)
            )))
        }
    };
    let map = &settings.status_map;
    map.get(&text)
        .or_else(|| {
            map.iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(&text))
                .map(|(_, v)| v)
        })
        .copied()
        .ok_or_else(|| {
            Reason(format!(
                "status {text:?} is not in status_map; the record is ignored and counted"
            ))
        })
}

/// The configured chain the item names (case-insensitively), or the provider's only chain
/// when the item names none.
fn read_chain(settings: &HttpSettings, item: &Value) -> Result<String, Reason> {
    let only = || match settings.chains.as_slice() {
        [one] => Some(one.clone()),
        _ => None,
    };
    let p = settings.fields.chain.as_deref();
    match opt(item, p) {
        None => only().ok_or_else(|| {
            Reason(format!(
                "chain ({}): missing, and the provider has several chains",
                ptr(&settings.fields.chain)
            ))
        }),
        Some(Value::String(s)) => settings
            .chains
            .iter()
            .find(|c| c.eq_ignore_ascii_case(s.trim()))
            .cloned()
            .ok_or_else(|| {
                Reason(format!(
                    "unknown chain {s:?} (not among this provider's chains)"
                ))
            }),
        Some(other) => Err(field_error("chain", p, other)),
    }
}

/// `Ok(None)`: a well-formed amount whose base units cannot be known (no asset, or no
/// configured decimals). `Err`: not an amount, or not exactly representable.
fn read_amount(
    settings: &HttpSettings,
    v: &Value,
    chain: &str,
    asset: Option<&Asset>,
) -> Result<Option<U256>, Reason> {
    let text = match v {
        Value::String(s) => s.trim().to_string(),
        Value::Number(n) => n.to_string(),
        other => {
            return Err(Reason(format!(
                "not a number or numeric string ({})",
                kind(Some(other))
            )))
        }
    };
    match settings.amount_unit {
        AmountUnit::Base => parse_base_units(&text)
            .map(Some)
            .map_err(|e| Reason(e.reason)),
        AmountUnit::Decimal => {
            let places = asset.and_then(|a| {
                let key = format!("{chain}:{}", a.as_str());
                match (settings.decimals.get(&key), a) {
                    (Some(d), _) => Some(*d),
                    (None, Asset::Native) => Some(NATIVE_DECIMALS),
                    (None, Asset::Token(_)) => None,
                }
            });
            match places {
                Some(d) => decimal_to_base_units(&text, d)
                    .map(Some)
                    .map_err(|e| Reason(e.reason)),
                None => check_decimal(&text).map(|()| None),
            }
        }
    }
}

/// A non-negative decimal number, whatever its scale.
fn check_decimal(text: &str) -> Result<(), Reason> {
    let d = rust_decimal::Decimal::from_str_exact(text)
        .or_else(|_| rust_decimal::Decimal::from_scientific(text))
        .or_else(|_| rust_decimal::Decimal::from_str(text))
        .map_err(|e| Reason(format!("not a decimal amount {text:?}: {e}")))?;
    if d.is_sign_negative() && !d.is_zero() {
        return Err(Reason(format!("negative amount {text:?}")));
    }
    Ok(())
}

/// RFC 3339 text, or Unix seconds (an integer or a numeric string).
pub(super) fn read_time(v: Option<&Value>) -> Option<jiff::Timestamp> {
    match v? {
        Value::String(s) => {
            let s = s.trim();
            s.parse::<jiff::Timestamp>().ok().or_else(|| {
                s.parse::<i64>()
                    .ok()
                    .and_then(|n| jiff::Timestamp::from_second(n).ok())
            })
        }
        Value::Number(n) => n
            .as_i64()
            .and_then(|n| jiff::Timestamp::from_second(n).ok()),
        _ => None,
    }
}

fn describe_time(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "missing".into(),
        Some(v) => format!("not an RFC 3339 time or Unix seconds: {v}"),
    }
}

/// An integer, or a string holding one.
fn integer(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// The value at an optional pointer; `None` also for a missing or null value.
fn opt<'v>(item: &'v Value, pointer: Option<&str>) -> Option<&'v Value> {
    item.pointer(pointer?).filter(|v| !v.is_null())
}

fn ptr(p: &Option<String>) -> &str {
    p.as_deref().unwrap_or("-")
}

fn field_error(field: &str, pointer: Option<&str>, v: &Value) -> Reason {
    Reason(format!(
        "{field} ({}): malformed value {}",
        pointer.unwrap_or("-"),
        snippet(v)
    ))
}

fn snippet(v: &Value) -> String {
    let text = v.to_string();
    let mut cut: String = text.chars().take(80).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    cut
}

fn kind(v: Option<&Value>) -> &'static str {
    match v {
        None => "absent",
        Some(Value::Null) => "null",
        Some(Value::Bool(_)) => "boolean",
        Some(Value::Number(_)) => "number",
        Some(Value::String(_)) => "string",
        Some(Value::Array(_)) => "array",
        Some(Value::Object(_)) => "object",
    }
}
