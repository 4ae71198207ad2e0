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
