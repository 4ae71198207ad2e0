//! Expected payments registered by a shop (the API, `orders add`, `orders import`): the
//! fields as given, checked by each chain's own rules, into the order payrecon stores. Every
//! bad field is named; nothing is half-accepted.
//!
//! - `order_ref`: 1 to 128 characters, no control character, no space at either end.
//! - `chain`: a configured chain.
//! - `pay_to`: EVM `0x` + 40 hex digits, all lower, all upper, or mixed case with a valid
//!   EIP-55 checksum; Tron base58check (`T…`); Bitcoin an address of the chain's network.
//! - `asset`: `native`, or a token with an `[assets."<chain>:<token>"]` table (spelled by the
//!   same rules as `pay_to`).
//! - `amount_due`: base units, 1 to 78 decimal digits, at least 1, fitting U256.
//! - `expires_at`: RFC 3339 with an offset (kept to the millisecond), or absent.
//! - `reference`: a Solana Pay reference (base58 of 32 bytes) on a Solana chain's order, or
//!   absent; refused on other chains.

use std::collections::{HashMap, HashSet};

use jiff::Timestamp;
use sha3::{Digest, Keccak256};

use super::kind::ChainKind;
use super::model::{parse_base_units, Address, Asset, U256};
use super::solana::SolanaKey;

/// Longest `order_ref` accepted.
pub const MAX_ORDER_REF: usize = 128;

/// The fields of an expected payment as given (JSON strings, flags, CSV cells).
#[derive(Debug, Clone, Copy, Default)]
pub struct OrderInput<'a> {
    pub order_ref: &'a str,
    pub chain: &'a str,
    pub pay_to: &'a str,
    pub asset: &'a str,
    pub amount_due: &'a str,
    pub expires_at: Option<&'a str>,
    pub reference: Option<&'a str>,
}

/// One bad field: its name (a key of the request body, a flag, a CSV column) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    pub field: &'static str,
    pub detail: String,
}

impl FieldError {
    pub fn new(field: &'static str, detail: impl Into<String>) -> FieldError {
        FieldError {
            field,
            detail: detail.into(),
        }
    }
}

/// What can be registered: the configured chains (by kind) and tokens.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    chains: HashMap<String, ChainKind>,
    /// `(chain, canonical token address)`.
    tokens: HashSet<(String, String)>,
    /// The largest `amount_due` the database keeps (`Store::max_amount`), where it is less
    /// than U256's.
    max_amount: Option<U256>,
}

impl Catalog {
    pub fn new(chains: impl IntoIterator<Item = (String, ChainKind)>) -> Catalog {
        Catalog {
            chains: chains.into_iter().collect(),
            tokens: HashSet::new(),
            max_amount: None,
        }
    }

    /// Refuses amounts over `max` (the database's largest, `Store::max_amount`).
    pub fn with_max_amount(mut self, max: Option<U256>) -> Catalog {
        self.max_amount = max;
        self
    }

    /// Adds a token from an `[assets]` key (`"<chain>:<address>"`); keys of unknown chains or
    /// of `native` add nothing.
    pub fn with_asset_key(mut self, key: &str) -> Catalog {
        if let Some((chain, addr)) = key.split_once(':') {
            if let Some(kind) = self.chains.get(chain) {
                if let Ok(Asset::Token(a)) = kind.asset(addr) {
                    self.tokens
                        .insert((chain.to_string(), a.as_str().to_string()));
                }
            }
        }
        self
    }

    /// The configured chains' names, sorted.
    pub fn chain_names(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.chains.keys().map(String::as_str).collect();
        v.sort_unstable();
        v
    }
}

/// An expected payment, every field in payrecon's canonical form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectedOrder {
    pub order_ref: String,
    pub chain: String,
    pub pay_to: Address,
    pub asset: Asset,
    pub amount_due: U256,
    pub expires_at: Option<Timestamp>,
    /// A Solana Pay reference (docs/configuration.md, "Solana"), base58.
    pub reference: Option<String>,
}

/// An order already stored under the same `order_ref`, as read back (ledger spelling).
#[derive(Debug, Clone, Default)]
pub struct StoredOrder<'a> {
    pub chain: &'a str,
    pub pay_to: &'a str,
    pub asset: &'a str,
    pub amount_due: &'a str,
    pub expires_at: Option<Timestamp>,
    pub reference: Option<&'a str>,
}

impl ExpectedOrder {
    /// The fields in which `stored` differs from this order (empty: the same order, so
    /// registering it again is idempotent). Values are compared in canonical form.
    pub fn differences(&self, stored: &StoredOrder<'_>) -> Vec<&'static str> {
        let mut d = Vec::new();
        if stored.chain != self.chain {
            d.push("chain");
        }
        if !same_spelling(stored.pay_to, self.pay_to.as_str()) {
            d.push("pay_to");
        }
        if !same_spelling(stored.asset, self.asset.as_str()) {
            d.push("asset");
        }
        if parse_base_units(stored.amount_due).ok() != Some(self.amount_due) {
            d.push("amount_due");
        }
        if stored.expires_at != self.expires_at {
            d.push("expires_at");
        }
        if stored.reference != self.reference.as_deref() {
            d.push("reference");
        }
        d
    }
}

/// EVM hex (and `native`) compare in any case; base58 and bech32 as stored.
fn same_spelling(stored: &str, canonical: &str) -> bool {
    if canonical.starts_with("0x") || canonical == "native" {
        stored.eq_ignore_ascii_case(canonical)
    } else {
        stored == canonical
    }
}

/// Checks every field of `input`; `Err` names each bad one (in the order of the fields).
pub fn expected_order(
    input: &OrderInput<'_>,
    catalog: &Catalog,
) -> Result<ExpectedOrder, Vec<FieldError>> {
    let mut errors = Vec::new();
    let order_ref = order_ref(input.order_ref).map_err(|e| errors.push(e)).ok();
    let kind = match catalog.chains.get(input.chain) {
        Some(k) => Some(*k),
        None => {
            let known = catalog.chain_names().join(", ");
            errors.push(FieldError::new(
                "chain",
                format!(
                    "{:?} is not a configured chain (configured: {known})",
                    input.chain
                ),
            ));
            None
        }
    };
    let pay_to = kind.and_then(|k| {
        address(k, "pay_to", input.pay_to)
            .map_err(|e| errors.push(e))
            .ok()
    });
    let asset = kind.and_then(|k| {
        asset(k, input.chain, input.asset, catalog)
            .map_err(|e| errors.push(e))
            .ok()
    });
    let amount_due = amount(input.amount_due)
        .and_then(|a| amount_within(a, catalog.max_amount).map(|()| a))
        .map_err(|e| errors.push(e))
        .ok();
    let expires_at = match input.expires_at.map(expiry).transpose() {
        Ok(t) => t,
        Err(e) => {
            errors.push(e);
            None
        }
    };
    let reference = match (kind, input.reference) {
        (_, None) => None,
        (Some(ChainKind::Solana), Some(r)) => SolanaKey::parse("reference", r)
            .map(|k| k.to_string())
            .map_err(|e| errors.push(FieldError::new("reference", e.reason)))
            .ok(),
        (Some(_), Some(_)) => {
            errors.push(FieldError::new(
                "reference",
                "only an order on a Solana chain has one (a Solana Pay reference)",
            ));
            None
        }
        (None, Some(_)) => None,
    };
    match (order_ref, pay_to, asset, amount_due) {
        (Some(order_ref), Some(pay_to), Some(asset), Some(amount_due)) if errors.is_empty() => {
            Ok(ExpectedOrder {
                order_ref,
                chain: input.chain.to_string(),
                pay_to,
                asset,
                amount_due,
                expires_at,
                reference,
            })
        }
        _ => Err(errors),
    }
}

fn order_ref(s: &str) -> Result<String, FieldError> {
    let bad = |d: &str| Err(FieldError::new("order_ref", d));
    if s.is_empty() {
        return bad("must not be empty");
    }
    if s.chars().count() > MAX_ORDER_REF {
        return bad("must be at most 128 characters");
    }
    if s.chars().any(char::is_control) {
        return bad("must not contain control characters");
    }
    if s.trim() != s {
        return bad("must not begin or end with white space");
    }
    Ok(s.to_string())
}

/// An address by the chain's rules, stricter than the ledger's reading: an EVM address in
/// mixed case must carry a valid EIP-55 checksum, and a Tron address must be base58check.
fn address(kind: ChainKind, field: &'static str, s: &str) -> Result<Address, FieldError> {
    let err = |d: String| FieldError::new(field, d);
    match kind {
        ChainKind::Evm => {
            let a = Address::parse(s).map_err(|e| err(e.reason))?;
            if !checksum_ok(&s.trim()[2..]) {
                return Err(err(format!(
                    "{s:?} is in mixed case with an invalid EIP-55 checksum (write it all lower case, or with its checksum)"
                )));
            }
            Ok(a)
        }
        ChainKind::Tron if !s.starts_with('T') => Err(err(format!(
            "{s:?} is not a Tron address in base58check (T…)"
        ))),
        _ => kind.address(field, s).map_err(|e| err(e.reason)),
    }
}

fn asset(kind: ChainKind, chain: &str, s: &str, catalog: &Catalog) -> Result<Asset, FieldError> {
    if s == "native" {
        return Ok(Asset::Native);
    }
    if let ChainKind::Bitcoin(_) = kind {
        return Err(FieldError::new(
            "asset",
            "Bitcoin has only \"native\" (no tokens)",
        ));
    }
    // What this chain takes, named in every refusal: `native` and its configured tokens.
    let mut known: Vec<&str> = catalog
        .tokens
        .iter()
        .filter(|(c, _)| c == chain)
        .map(|(_, t)| t.as_str())
        .collect();
    known.sort_unstable();
    let takes = std::iter::once("\"native\"".to_string())
        .chain(known.iter().map(|t| format!("{t:?}")))
        .collect::<Vec<_>>()
        .join(", ");
    let token = address(kind, "asset", s)
        .map_err(|e| FieldError::new("asset", format!("{}; {chain} takes {takes}", e.detail)))?;
    if !catalog
        .tokens
        .contains(&(chain.to_string(), token.as_str().to_string()))
    {
        return Err(FieldError::new(
            "asset",
            format!(
                "{s:?} is not a configured asset of {chain}, which takes {takes} (add \
                 [assets.\"{chain}:{token}\"] for another)"
            ),
        ));
    }
    Ok(Asset::Token(token))
}

fn amount(s: &str) -> Result<U256, FieldError> {
    let detail = "must be an amount in base units: a string of 1 to 78 decimal digits that fits 256 bits (\"25000000\")";
    let v = parse_base_units(s)
        .ok()
        .filter(|_| s.trim() == s)
        .ok_or_else(|| FieldError::new("amount_due", detail))?;
    if v.is_zero() {
        return Err(FieldError::new("amount_due", "must be at least 1"));
    }
    Ok(v)
}

/// `amount_due` is at most `max`, the largest amount the database keeps (MariaDB/MySQL's
/// `DECIMAL(65,0)`); no limit where `None`.
pub fn amount_within(amount: U256, max: Option<U256>) -> Result<(), FieldError> {
    match max {
        Some(max) if amount > max => Err(FieldError::new(
            "amount_due",
            format!(
                "is more than this database keeps: at most {} digits ({max} base units)",
                max.to_string().len()
            ),
        )),
        _ => Ok(()),
    }
}

fn expiry(s: &str) -> Result<Timestamp, FieldError> {
    s.parse::<Timestamp>()
        .ok()
        .and_then(|t| Timestamp::from_millisecond(t.as_millisecond()).ok())
        .ok_or_else(|| {
            FieldError::new(
                "expires_at",
                format!("{s:?} is not an RFC 3339 timestamp with an offset (2026-12-01T10:00:00Z)"),
            )
        })
}

/// EIP-55: all lower case, all upper case, or each letter upper exactly where the nibble of
/// keccak256(lower-case hex) at its position is 8 or more.
fn checksum_ok(digits: &str) -> bool {
    let has_lower = digits.bytes().any(|b| b.is_ascii_lowercase());
    let has_upper = digits.bytes().any(|b| b.is_ascii_uppercase());
    if !(has_lower && has_upper) {
        return true;
    }
    let hash = Keccak256::digest(digits.to_ascii_lowercase().as_bytes());
    digits.bytes().enumerate().all(|(i, b)| {
        let nibble = (hash[i / 2] >> if i % 2 == 0 { 4 } else { 0 }) & 0x0f;
        !b.is_ascii_alphabetic() || b.is_ascii_uppercase() == (nibble >= 8)
    })
}

#[cfg(test)]
mod tests;
