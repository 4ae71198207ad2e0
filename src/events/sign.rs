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

/// A receiver's check (the sandbox endpoint, the simulator's merchant): one of the
/// space-separated `v1,<base64>` signatures of `header` matches, compared in constant time.
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
mod tests {
    use super::*;
    use crate::config::decode_secret;

    /// The test vector the Standard Webhooks specification publishes (and every official
    /// library tests against).
    #[test]
    fn the_specification_test_vector() {
        let key = decode_secret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let sig = signature(
            &key,
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1614265330,
            br#"{"test": 2432232314}"#,
        );
        assert_eq!(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }

    #[test]
    fn verify_accepts_the_signature_and_nothing_else() {
        let key = [7u8; 32];
        let sig = signature(&key, "evt_1", 10, b"{}");
        assert!(verify(&key, "evt_1", 10, b"{}", &sig));
        assert!(verify(&key, "evt_1", 10, b"{}", &format!("v1,AAAA {sig}")));
        assert!(!verify(&key, "evt_1", 11, b"{}", &sig));
        assert!(!verify(&[8u8; 32], "evt_1", 10, b"{}", &sig));
        assert!(!verify(&key, "evt_1", 10, b"{}", "v1,!!"));
        assert!(!verify(&key, "evt_1", 10, b"{}", ""));
    }

    #[test]
    fn every_part_is_signed() {
        let key = [7u8; 32];
        let base = signature(&key, "evt_1", 10, b"{}");
        assert_ne!(base, signature(&key, "evt_2", 10, b"{}"));
        assert_ne!(base, signature(&key, "evt_1", 11, b"{}"));
        assert_ne!(base, signature(&key, "evt_1", 10, b"{ }"));
        assert_ne!(base, signature(&[8u8; 32], "evt_1", 10, b"{}"));
    }
}
