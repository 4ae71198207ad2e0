//! Standard Webhooks 1.0 signing: `v1,<base64 HMAC-SHA256("{id}.{timestamp}.{body}")>` keyed
//! with the base64-decoded part of the `whsec_` secret. Pure; the official libraries verify it.

use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The `webhook-signature` header value of one attempt.
pub fn signature(key: &[u8], id: &str, timestamp: i64, body: &[u8]) -> String {
    // HMAC takes a key of any length: `new_from_slice` cannot fail for it.
    let mut mac = match Hmac::<Sha256>::new_from_slice(key) {
        Ok(m) => m,
        Err(_) => return String::new(),
    };
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    let sig = mac.finalize().into_bytes();
    format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(sig)
    )
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
    fn every_part_is_signed() {
        let key = [7u8; 32];
        let base = signature(&key, "evt_1", 10, b"{}");
        assert_ne!(base, signature(&key, "evt_2", 10, b"{}"));
        assert_ne!(base, signature(&key, "evt_1", 11, b"{}"));
        assert_ne!(base, signature(&key, "evt_1", 10, b"{ }"));
        assert_ne!(base, signature(&[8u8; 32], "evt_1", 10, b"{}"));
    }
}
