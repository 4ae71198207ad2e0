//! Webhook signatures and event ids, per provider scheme. Pure: no IO (the clock is an
//! argument of `verify_at`). Every comparison of a signature is constant-time
//! (`Mac::verify_slice`); no error carries the secret, the signature or the body.

use std::time::Duration;

use base64::Engine as _;
use hmac::{Hmac, Mac};
use jiff::Timestamp;
use serde_json::Value;
use sha2::Sha256;

use axum::http::HeaderMap;

use crate::secret::Secret;

type HmacSha256 = Hmac<Sha256>;

/// Longest event id accepted (it is a key of the inbox table); an id with a control
/// character is refused too.
pub const MAX_EVENT_ID_LEN: usize = 256;

/// How a signature header spells the MAC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// Hex digits, either case.
    Hex,
    /// Standard base64 with padding (RFC 4648 §4).
    Base64,
}

/// What the MAC is computed over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signed {
    /// The raw body bytes, exactly as received.
    Body,
    /// The value at this RFC 6901 pointer into the JSON body: a string's UTF-8 bytes, or a
    /// number's JSON text (`serde_json`'s spelling of it).
    Pointer(String),
}

/// A provider's signature scheme.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scheme {
    /// Header `X-Qvard-Signature` = hex HMAC-SHA256(secret, raw body); body `{"id","status"}`;
    /// event id = `"<id>:<status>"` (each status change of a payment is its own event).
    Qvard,
    /// Header `X-Paymos-Signature` = hex HMAC-SHA256(secret, raw body); event id in header
    /// `X-Webhook-Id`, which must equal the body's `event_id`.
    Paymos,
    /// Header `X-Signature` = base64 HMAC-SHA256(secret, the body's `txid` string); event id =
    /// the body's `id` (string or integer).
    Chaingateway,
    /// Configured. With `timestamp_header`, the header holds Unix seconds, the MAC is
    /// computed over `"{timestamp}.{signed}"` (Stripe's construction) and a timestamp more
    /// than `tolerance` (default 5 min) away from now is refused.
    Http {
        header: String,
        encoding: Encoding,
        signed: Signed,
        /// RFC 6901 pointer to the event id (string or integer) in the JSON body.
        event_id: String,
        timestamp_header: Option<String>,
        tolerance: Option<Duration>,
    },
}

/// `POST /webhooks/{provider}` for one provider.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub provider: String,
    pub secret: Secret,
    pub scheme: Scheme,
}

/// Why a delivery is refused (all of them are a 400). The texts name headers and JSON
/// pointers, never a value from the request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("the signature header {0} is missing")]
    MissingHeader(String),
    #[error("the signature does not match")]
    BadSignature,
    #[error("the timestamp header {0} is not Unix seconds within the tolerance")]
    BadTimestamp(String),
    #[error("the body is not JSON")]
    BadJson,
    #[error("the body has no usable {0}")]
    MissingField(String),
    #[error("the event id header {0} is missing or differs from the body")]
    EventIdMismatch(String),
}

impl VerifyError {
    /// True when the delivery is not authentic (as opposed to authentic but unreadable).
    pub fn is_signature(&self) -> bool {
        matches!(
            self,
            VerifyError::MissingHeader(_)
                | VerifyError::BadSignature
                | VerifyError::BadTimestamp(_)
        )
    }
}

/// Default `tolerance` of a timestamped `Http` scheme.
pub const DEFAULT_TOLERANCE: Duration = Duration::from_secs(300);

/// Checks the signature of a raw body against the clock.
pub fn verify(
    scheme: &Scheme,
    secret: &Secret,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<(), VerifyError> {
    verify_at(scheme, secret, headers, body, Timestamp::now())
}

/// `verify` with `now` given (tests).
pub fn verify_at(
    scheme: &Scheme,
    secret: &Secret,
    headers: &HeaderMap,
    body: &[u8],
    now: Timestamp,
) -> Result<(), VerifyError> {
    match scheme {
        Scheme::Qvard => check_mac(
            secret,
            None,
            body,
            header(headers, "x-qvard-signature")?,
            Encoding::Hex,
        ),
        Scheme::Paymos => check_mac(
            secret,
            None,
            body,
            header(headers, "x-paymos-signature")?,
            Encoding::Hex,
        ),
        Scheme::Chaingateway => {
            let sig = header(headers, "x-signature")?;
            let json = parse_json(body)?;
            let txid = match json.get("txid") {
                Some(Value::String(s)) => s.clone(),
                _ => return Err(VerifyError::MissingField("txid".into())),
            };
            check_mac(secret, None, txid.as_bytes(), sig, Encoding::Base64)
        }
        Scheme::Http {
            header: name,
            encoding,
            signed,
            timestamp_header,
            tolerance,
            ..
        } => {
            let sig = header(headers, name)?;
            let stamp = match timestamp_header {
                Some(th) => Some(check_timestamp(
                    headers,
                    th,
                    tolerance.unwrap_or(DEFAULT_TOLERANCE),
                    now,
                )?),
                None => None,
            };
            match signed {
                Signed::Body => check_mac(secret, stamp.as_deref(), body, sig, *encoding),
                Signed::Pointer(p) => {
                    let json = parse_json(body)?;
                    let text =
                        scalar_at(&json, p).ok_or_else(|| VerifyError::MissingField(p.clone()))?;
                    check_mac(secret, stamp.as_deref(), text.as_bytes(), sig, *encoding)
                }
            }
        }
    }
}

/// The event id of an authentic delivery (its dedup key in the inbox).
pub fn event_id(scheme: &Scheme, headers: &HeaderMap, body: &Value) -> Result<String, VerifyError> {
    let id = match scheme {
        Scheme::Qvard => {
            let id = scalar_at(body, "/id")
                .filter(|id| !id.is_empty())
                .ok_or_else(|| VerifyError::MissingField("id".into()))?;
            let status = match body.get("status") {
                Some(Value::String(s)) if !s.is_empty() => s,
                _ => return Err(VerifyError::MissingField("status".into())),
            };
            format!("{id}:{status}")
        }
        Scheme::Paymos => {
            let in_body = scalar_at(body, "/event_id")
                .ok_or_else(|| VerifyError::MissingField("event_id".into()))?;
            let in_header = headers
                .get("x-webhook-id")
                .and_then(|v| v.to_str().ok())
                .map(str::trim);
            if in_header != Some(in_body.as_str()) {
                return Err(VerifyError::EventIdMismatch("X-Webhook-Id".into()));
            }
            in_body
        }
        Scheme::Chaingateway => {
            scalar_at(body, "/id").ok_or_else(|| VerifyError::MissingField("id".into()))?
        }
        Scheme::Http { event_id, .. } => {
            scalar_at(body, event_id).ok_or_else(|| VerifyError::MissingField(event_id.clone()))?
        }
    };
    // Control characters (NUL above all: PostgreSQL text refuses it) make no event id.
    if id.is_empty() || id.len() > MAX_EVENT_ID_LEN || id.chars().any(char::is_control) {
        return Err(VerifyError::MissingField("event id".into()));
    }
    Ok(id)
}

/// The string at `pointer`, or the JSON text of the number there; None otherwise.
fn scalar_at(json: &Value, pointer: &str) -> Option<String> {
    match json.pointer(pointer)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn parse_json(body: &[u8]) -> Result<Value, VerifyError> {
    serde_json::from_slice(body).map_err(|_| VerifyError::BadJson)
}

fn header<'h>(headers: &'h HeaderMap, name: &str) -> Result<&'h [u8], VerifyError> {
    headers
        .get(name)
        .map(|v| v.as_bytes())
        .ok_or_else(|| VerifyError::MissingHeader(name.to_string()))
}

/// The timestamp header's text when it is Unix seconds within `tolerance` of `now`.
fn check_timestamp(
    headers: &HeaderMap,
    name: &str,
    tolerance: Duration,
    now: Timestamp,
) -> Result<String, VerifyError> {
    let bad = || VerifyError::BadTimestamp(name.to_string());
    let text = headers
        .get(name)
        .ok_or_else(|| VerifyError::MissingHeader(name.to_string()))?
        .to_str()
        .map_err(|_| bad())?
        .trim();
    let secs: i64 = text.parse().map_err(|_| bad())?;
    let skew = secs.abs_diff(now.as_second());
    if skew > tolerance.as_secs() {
        return Err(bad());
    }
    Ok(text.to_string())
}

/// Decodes `sig` and compares it, in constant time, with HMAC-SHA256(secret, [stamp "."] msg).
fn check_mac(
    secret: &Secret,
    stamp: Option<&str>,
    msg: &[u8],
    sig: &[u8],
    encoding: Encoding,
) -> Result<(), VerifyError> {
    let sig = trim_ascii(sig);
    let decoded = match encoding {
        Encoding::Hex => hex::decode(sig).ok(),
        Encoding::Base64 => base64::engine::general_purpose::STANDARD.decode(sig).ok(),
    }
    .ok_or(VerifyError::BadSignature)?;
    let mut mac = HmacSha256::new_from_slice(secret.expose().as_bytes())
        .map_err(|_| VerifyError::BadSignature)?;
    if let Some(stamp) = stamp {
        mac.update(stamp.as_bytes());
        mac.update(b".");
    }
    mac.update(msg);
    // verify_slice refuses a truncated tag (it compares the full length), in constant time.
    mac.verify_slice(&decoded)
        .map_err(|_| VerifyError::BadSignature)
}

fn trim_ascii(b: &[u8]) -> &[u8] {
    let start = b
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(b.len());
    let end = b
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &b[start..end]
}

/// HMAC-SHA256 of `msg` under `secret`, for senders (the sandbox, tests).
pub fn sign(secret: &str, msg: &[u8], encoding: Encoding) -> String {
    let mut mac = match HmacSha256::new_from_slice(secret.as_bytes()) {
        Ok(m) => m,
        Err(_) => return String::new(),
    };
    mac.update(msg);
    let tag = mac.finalize().into_bytes();
    match encoding {
        Encoding::Hex => hex::encode(tag),
        Encoding::Base64 => base64::engine::general_purpose::STANDARD.encode(tag),
    }
}

#[cfg(test)]
mod tests;
