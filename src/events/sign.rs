//! Standard Webhooks 1.0 signing: `v1,<base64 HMAC-SHA256("{id}.{timestamp}.{body}")>` keyed
//! with the base64-decoded part of the `whsec_` secret. Pure; the official libraries verify it.

use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The MAC over `"{id}.{timestamp}.{body}"` (None only for a key HMAC refuses, which no
/// length is).
fn mac(key: &[u8], id: &str, timestamp: i64, body: &[u8]) -> Option<Hmac<Sha256>> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).ok()?;
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    Some(mac)
}

/// The `webhook-signature` header value of one attempt.
pub fn signature(key: &[u8], id: &str, timestamp: i64, body: &[u8]) -> String {
    let Some(mac) = mac(key, id, timestamp, body) else {
        return String::new();
    };
    format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
    )
}

/// A receiver's check (the simulator's merchant; the demo's endpoint uses the official
/// library): one of the space-separated `v1,<base64>` signatures of `header` matches,
/// compared in constant time.
pub fn verify(key: &[u8], id: &str, timestamp: i64, body: &[u8], header: &str) -> bool {
    header.split_whitespace().any(|sig| {
        let Some(b64) = sig.strip_prefix("v1,") else {
            return false;
        };
        let (Ok(given), Some(mac)) = (
            base64::engine::general_purpose::STANDARD.decode(b64),
            mac(key, id, timestamp, body),
        ) else {
            return false;
        };
        mac.verify_slice(&given).is_ok()
    })
}

#[cfg(test)]
mod tests;
