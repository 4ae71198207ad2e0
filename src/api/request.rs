//! What a request carries, read strictly: the body of `POST /v1/orders` (every bad field named,
//! unknown fields refused, amounts only as strings) and the query of `GET /v1/orders`.

use std::collections::HashMap;

use base64::Engine as _;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::problem::FieldProblem;
use crate::domain::{expected_order, Catalog, ExpectedOrder, OrderInput, State};
use crate::store::OrderPage;

/// The body of `POST /v1/orders`.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OrderRequest {
    /// The shop's order id: 1 to 128 characters, unique.
    #[schema(example = "A-1001")]
    pub order_ref: String,
    /// A configured chain (`[chains.<name>]`).
    #[schema(example = "ethereum")]
    pub chain: String,
    /// The deposit address, by the chain's rules: EVM hex in one case or with a valid EIP-55
    /// checksum, Tron base58check, Bitcoin an address of the chain's network.
    #[schema(example = "0x52908400098527886e0f7030069857d2e4169ee7")]
    pub pay_to: String,
    /// `native`, or a token contract with an `[assets."<chain>:<token>"]` table.
    #[schema(example = "0xdac17f958d2ee523a2206206994597c13d831ec7")]
    pub asset: String,
    /// Base units as a decimal string (never a JSON number): 25 USDT is `"25000000"`.
    #[schema(example = "25000000", pattern = "^[0-9]{1,78}$")]
    pub amount_due: String,
    /// When the order stops taking payments (RFC 3339); a payment in a later block is late.
    #[schema(format = DateTime, example = "2026-12-01T10:15:00Z")]
    #[serde(default)]
    pub expires_at: Option<String>,
    /// Solana only: the Solana Pay reference the checkout put on the transfer (base58 of 32
    /// bytes); a payment carrying it is matched to this order first.
    #[schema(example = "7fQ4dMqsyDzWFMhUasRvZ5aLgKxoqRrdHU2JVQuoTXRs")]
    #[serde(default)]
    pub reference: Option<String>,
}

const FIELDS: [&str; 7] = [
    "order_ref",
    "chain",
    "pay_to",
    "asset",
    "amount_due",
    "expires_at",
    "reference",
];

/// The body read into an order, or every problem with it.
pub fn order(raw: &[u8], catalog: &Catalog) -> Result<ExpectedOrder, Vec<FieldProblem>> {
    let value: Value = serde_json::from_slice(raw).map_err(|e| {
        vec![FieldProblem {
            pointer: Some("#".into()),
            parameter: None,
            detail: format!("not a JSON document: {e}"),
        }]
    })?;
    let Value::Object(map) = value else {
        return Err(vec![FieldProblem {
            pointer: Some("#".into()),
            parameter: None,
            detail: "the body must be a JSON object".into(),
        }]);
    };
    // Every bad field at once: the shape's problems (unknown, missing, not a string) do not
    // stop the checks of the fields that are strings.
    let mut problems = shape(&map);
    let text = |f: &str| map.get(f).and_then(Value::as_str).unwrap_or("");
    let input = OrderInput {
        order_ref: text("order_ref"),
        chain: text("chain"),
        pay_to: text("pay_to"),
        asset: text("asset"),
        amount_due: text("amount_due"),
        expires_at: map.get("expires_at").and_then(Value::as_str),
        reference: map.get("reference").and_then(Value::as_str),
    };
    let shaped: Vec<Option<String>> = problems.iter().map(|p| p.pointer.clone()).collect();
    match expected_order(&input, catalog) {
        Ok(o) if problems.is_empty() => Ok(o),
        Ok(_) => Err(problems),
        Err(errors) => {
            let named = errors
                .into_iter()
                .map(FieldProblem::from)
                .filter(|p| !shaped.contains(&p.pointer));
            problems.extend(named);
            Err(problems)
        }
    }
}

/// Unknown fields, missing ones and wrong JSON types, each named.
fn shape(map: &Map<String, Value>) -> Vec<FieldProblem> {
    let mut problems: Vec<FieldProblem> = map
        .keys()
        .filter(|k| !FIELDS.contains(&k.as_str()))
        .map(|k| FieldProblem::body(&escape(k), "unknown field"))
        .collect();
    for field in FIELDS {
        let optional = field == "expires_at" || field == "reference";
        match map.get(field) {
            None if optional => {}
            None => problems.push(FieldProblem::body(field, "required")),
            Some(Value::String(_)) => {}
            Some(Value::Null) if optional => {}
            Some(Value::Number(_)) if field == "amount_due" => problems.push(FieldProblem::body(
                field,
                "must be a string of base units (\"25000000\"), not a JSON number",
            )),
            Some(v) => problems.push(FieldProblem::body(
                field,
                format!("must be a string, not {}", json_type(v)),
            )),
        }
    }
    problems
}

/// A key as a JSON pointer segment (RFC 6901) in a URI fragment (RFC 3986: what a fragment
/// may not hold is percent-encoded).
fn escape(key: &str) -> String {
    let pointer = key.replace('~', "~0").replace('/', "~1");
    pointer
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/?".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Default and largest page of `GET /v1/orders`.
pub const DEFAULT_LIMIT: i64 = 100;
pub const MAX_LIMIT: i64 = 1_000;

/// The query of `GET /v1/orders` into a page, or every problem with it.
pub fn page(query: &HashMap<String, String>) -> Result<OrderPage, Vec<FieldProblem>> {
    let mut problems = Vec::new();
    let mut page = OrderPage {
        limit: DEFAULT_LIMIT,
        ..OrderPage::default()
    };
    for (k, v) in query {
        match k.as_str() {
            "state" => match State::parse(v) {
                Ok(s) => page.state = Some(s.as_str().to_string()),
                Err(_) => problems.push(FieldProblem::query(
                    k,
                    "must be unpaid, pending, confirmed or final",
                )),
            },
            "updated_since" => match v.parse::<jiff::Timestamp>() {
                Ok(t) => page.updated_since = Some(t),
                Err(_) => problems.push(FieldProblem::query(
                    k,
                    "must be an RFC 3339 timestamp (2026-12-01T10:00:00Z)",
                )),
            },
            "limit" => match v.parse::<i64>() {
                Ok(n) if (1..=MAX_LIMIT).contains(&n) => page.limit = n,
                _ => problems.push(FieldProblem::query(k, "must be an integer from 1 to 1000")),
            },
            "cursor" => match decode_cursor(v) {
                Some(after) => page.after = Some(after),
                None => problems.push(FieldProblem::query(
                    k,
                    "not a cursor this API returned (pass next_cursor as it is)",
                )),
            },
            _ => problems.push(FieldProblem::query(k, "unknown parameter")),
        }
    }
    if problems.is_empty() {
        Ok(page)
    } else {
        problems.sort_by(|a, b| a.parameter.cmp(&b.parameter));
        Err(problems)
    }
}

/// The opaque cursor after `(position, id)`: base64url of `id:position`.
pub fn encode_cursor(position: &str, id: i64) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("{id}:{position}"))
}

fn decode_cursor(s: &str) -> Option<(String, i64)> {
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(s)
        .ok()?;
    let text = String::from_utf8(raw).ok()?;
    let (id, pos) = text.split_once(':')?;
    let id = id.parse().ok()?;
    (!pos.is_empty() && pos.len() <= 64).then(|| (pos.to_string(), id))
}

#[cfg(test)]
mod tests;
