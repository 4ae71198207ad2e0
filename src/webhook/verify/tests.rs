//! Each scheme: a correct signature passes; tampering, another secret, a missing header, a
//! truncated or garbage signature and a re-serialised body fail.

use std::time::Duration;

use axum::http::{HeaderMap, HeaderName, HeaderValue};
use jiff::Timestamp;
use serde_json::{json, Value};

use super::*;

const SECRET: &str = "whsec_test_0123456789";

fn secret() -> Secret {
    Secret::new(SECRET)
}

fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.insert(
            HeaderName::from_bytes(k.as_bytes()).unwrap(),
            HeaderValue::from_str(v).unwrap(),
        );
    }
    h
}

fn now() -> Timestamp {
    "2026-11-01T10:00:00Z".parse().unwrap()
}

fn check(scheme: &Scheme, h: &HeaderMap, body: &[u8]) -> Result<(), VerifyError> {
    verify_at(scheme, &secret(), h, body, now())
}

/// The same JSON with other whitespace and key order.
fn reserialise(body: &str) -> String {
    let v: Value = serde_json::from_str(body).unwrap();
    let obj = v.as_object().unwrap();
    let mut keys: Vec<&String> = obj.keys().collect();
    keys.reverse();
    let parts: Vec<String> = keys
        .iter()
        .map(|k| format!("\"{k}\" : {}", obj[*k]))
        .collect();
    format!("{{ {} }}", parts.join(" , "))
}

/// The checks every scheme signing the raw body must pass. `sig_header` and `encoding`
/// describe the scheme; `extra` are headers the scheme needs besides the signature.
fn body_scheme_cases(
    scheme: &Scheme,
    sig_header: &str,
    enc: Encoding,
    body: &str,
    extra: &[(&str, &str)],
) {
    let good = sign(SECRET, body.as_bytes(), enc);
    let with = |sig: &str| {
        let mut pairs = extra.to_vec();
        pairs.push((sig_header, sig));
        headers(&pairs)
    };
    assert_eq!(check(scheme, &with(&good), body.as_bytes()), Ok(()));
    let tampered = body.replace("1", "2");
    assert_ne!(tampered, body);
    assert_eq!(
        check(scheme, &with(&good), tampered.as_bytes()),
        Err(VerifyError::BadSignature)
    );
    let other = sign("another-secret", body.as_bytes(), enc);
    assert_eq!(
        check(scheme, &with(&other), body.as_bytes()),
        Err(VerifyError::BadSignature)
    );
    assert!(matches!(
        check(scheme, &headers(extra), body.as_bytes()),
        Err(VerifyError::MissingHeader(_))
    ));
    assert_eq!(
        check(scheme, &with(&good[..good.len() - 2]), body.as_bytes()),
        Err(VerifyError::BadSignature)
    );
    assert_eq!(
        check(scheme, &with("not a signature!"), body.as_bytes()),
        Err(VerifyError::BadSignature)
    );
    assert_eq!(
        check(scheme, &with(""), body.as_bytes()),
        Err(VerifyError::BadSignature)
    );
    let again = reserialise(body);
    assert_ne!(again, body);
    assert_eq!(
        check(scheme, &with(&good), again.as_bytes()),
        Err(VerifyError::BadSignature)
    );
}

#[test]
fn qvard_signs_the_raw_body_in_hex() {
    let body = r#"{"id":"ord_1001","status":"completed"}"#;
    body_scheme_cases(
        &Scheme::Qvard,
        "X-Qvard-Signature",
        Encoding::Hex,
        body,
        &[],
    );
    // Hex is case-insensitive.
    let upper = sign(SECRET, body.as_bytes(), Encoding::Hex).to_uppercase();
    let h = headers(&[("X-Qvard-Signature", &upper)]);
    assert_eq!(check(&Scheme::Qvard, &h, body.as_bytes()), Ok(()));
    let id = event_id(&Scheme::Qvard, &h, &serde_json::from_str(body).unwrap());
    assert_eq!(id.as_deref(), Ok("ord_1001:completed"));
}

#[test]
fn paymos_signs_the_raw_body_and_names_the_event_in_a_header() {
    let body = r#"{"event_id":"evt_1","type":"payment.confirmed","amount":"10"}"#;
    let extra = [("X-Webhook-Id", "evt_1")];
    body_scheme_cases(
        &Scheme::Paymos,
        "X-Paymos-Signature",
        Encoding::Hex,
        body,
        &extra,
    );
    let parsed: Value = serde_json::from_str(body).unwrap();
    let id = event_id(&Scheme::Paymos, &headers(&extra), &parsed);
    assert_eq!(id.as_deref(), Ok("evt_1"));
    for h in [headers(&[("X-Webhook-Id", "evt_2")]), headers(&[])] {
        assert!(matches!(
            event_id(&Scheme::Paymos, &h, &parsed),
            Err(VerifyError::EventIdMismatch(_))
        ));
    }
}

#[test]
fn chaingateway_signs_the_txid_in_base64() {
    let txid = format!("0x{}", "ab".repeat(32));
    let body = json!({"id": 4711, "txid": txid, "amount": "1.5"}).to_string();
    let good = sign(SECRET, txid.as_bytes(), Encoding::Base64);
    let s = Scheme::Chaingateway;
    let h = headers(&[("X-Signature", &good)]);
    assert_eq!(check(&s, &h, body.as_bytes()), Ok(()));
    // Only the txid is signed: the rest of the body may be re-serialised.
    assert_eq!(check(&s, &h, reserialise(&body).as_bytes()), Ok(()));
    let other_tx = body.replace("abab", "abac");
    assert_eq!(
        check(&s, &h, other_tx.as_bytes()),
        Err(VerifyError::BadSignature)
    );
    let other = sign("another-secret", txid.as_bytes(), Encoding::Base64);
    assert_eq!(
        check(&s, &headers(&[("X-Signature", &other)]), body.as_bytes()),
        Err(VerifyError::BadSignature)
    );
    assert!(matches!(
        check(&s, &headers(&[]), body.as_bytes()),
        Err(VerifyError::MissingHeader(_))
    ));
    let short = &good[..good.len() - 4];
    assert_eq!(
        check(&s, &headers(&[("X-Signature", short)]), body.as_bytes()),
        Err(VerifyError::BadSignature)
    );
    assert_eq!(
        check(&s, &headers(&[("X-Signature", "%%%")]), body.as_bytes()),
        Err(VerifyError::BadSignature)
    );
    assert_eq!(check(&s, &h, b"not json"), Err(VerifyError::BadJson));
    let no_txid = json!({"id": 1}).to_string();
    assert!(matches!(
        check(&s, &h, no_txid.as_bytes()),
        Err(VerifyError::MissingField(_))
    ));
    let id = event_id(&s, &h, &serde_json::from_str(&body).unwrap());
    assert_eq!(id.as_deref(), Ok("4711"));
}

fn http(signed: Signed, enc: Encoding, timestamp: bool) -> Scheme {
    Scheme::Http {
        header: "X-Hook-Sig".into(),
        encoding: enc,
        signed,
        event_id: "/event/id".into(),
        timestamp_header: timestamp.then(|| "X-Hook-Time".into()),
        tolerance: timestamp.then_some(Duration::from_secs(60)),
    }
}

#[test]
fn http_scheme_signing_the_body() {
    let body = r#"{"event":{"id":17},"status":"paid"}"#;
    for enc in [Encoding::Hex, Encoding::Base64] {
        body_scheme_cases(
            &http(Signed::Body, enc, false),
            "X-Hook-Sig",
            enc,
            body,
            &[],
        );
    }
    let id = event_id(
        &http(Signed::Body, Encoding::Hex, false),
        &headers(&[]),
        &serde_json::from_str(body).unwrap(),
    );
    assert_eq!(id.as_deref(), Ok("17"));
}

#[test]
fn http_scheme_signing_a_pointer() {
    let s = http(Signed::Pointer("/data/ref".into()), Encoding::Hex, false);
    let body = r#"{"event":{"id":"e-9"},"data":{"ref":"r-42"}}"#;
    let good = sign(SECRET, b"r-42", Encoding::Hex);
    let h = headers(&[("X-Hook-Sig", &good)]);
    assert_eq!(check(&s, &h, body.as_bytes()), Ok(()));
    let tampered = body.replace("r-42", "r-43");
    assert_eq!(
        check(&s, &h, tampered.as_bytes()),
        Err(VerifyError::BadSignature)
    );
    assert_eq!(check(&s, &h, b"{"), Err(VerifyError::BadJson));
    assert!(matches!(
        check(&s, &h, br#"{"data":{}}"#),
        Err(VerifyError::MissingField(_))
    ));
    // A number is signed as its JSON text.
    let num = r#"{"data":{"ref":1234}}"#;
    let h = headers(&[("X-Hook-Sig", &sign(SECRET, b"1234", Encoding::Hex))]);
    assert_eq!(check(&s, &h, num.as_bytes()), Ok(()));
}

#[test]
fn http_scheme_with_a_timestamp_signs_it_and_bounds_its_age() {
    let s = http(Signed::Body, Encoding::Hex, true);
    let body = r#"{"event":{"id":"e-1"}}"#;
    let at = |t: i64| {
        let stamp = t.to_string();
        let sig = sign(SECRET, format!("{stamp}.{body}").as_bytes(), Encoding::Hex);
        headers(&[("X-Hook-Sig", &sig), ("X-Hook-Time", &stamp)])
    };
    let t = now().as_second();
    assert_eq!(check(&s, &at(t), body.as_bytes()), Ok(()));
    assert_eq!(check(&s, &at(t - 59), body.as_bytes()), Ok(()));
    assert!(matches!(
        check(&s, &at(t - 61), body.as_bytes()),
        Err(VerifyError::BadTimestamp(_))
    ));
    assert!(matches!(
        check(&s, &at(t + 61), body.as_bytes()),
        Err(VerifyError::BadTimestamp(_))
    ));
    // The timestamp is signed: moving it forward breaks the signature.
    let mut h = at(t - 30);
    h.insert(
        "X-Hook-Time",
        HeaderValue::from_str(&t.to_string()).unwrap(),
    );
    assert_eq!(
        check(&s, &h, body.as_bytes()),
        Err(VerifyError::BadSignature)
    );
    // Signed without the timestamp: refused.
    let plain = sign(SECRET, body.as_bytes(), Encoding::Hex);
    let h = headers(&[("X-Hook-Sig", &plain), ("X-Hook-Time", &t.to_string())]);
    assert_eq!(
        check(&s, &h, body.as_bytes()),
        Err(VerifyError::BadSignature)
    );
    let h = headers(&[("X-Hook-Sig", &plain)]);
    assert!(matches!(
        check(&s, &h, body.as_bytes()),
        Err(VerifyError::MissingHeader(_))
    ));
    let h = headers(&[("X-Hook-Sig", &plain), ("X-Hook-Time", "yesterday")]);
    assert!(matches!(
        check(&s, &h, body.as_bytes()),
        Err(VerifyError::BadTimestamp(_))
    ));
    let h = headers(&[
        ("X-Hook-Sig", &plain),
        ("X-Hook-Time", "-9223372036854775808"),
    ]);
    assert!(matches!(
        check(&s, &h, body.as_bytes()),
        Err(VerifyError::BadTimestamp(_))
    ));
}

#[test]
fn event_ids_are_bounded_and_present() {
    let h = headers(&[]);
    for body in [
        json!({"status": "completed"}),
        json!({"id": "", "status": "x"}),
        json!({"id": 1}),
        json!({"id": {"x": 1}, "status": "x"}),
    ] {
        assert!(event_id(&Scheme::Qvard, &h, &body).is_err(), "{body}");
    }
    let long = json!({"id": "x".repeat(MAX_EVENT_ID_LEN + 1)});
    assert!(event_id(&Scheme::Chaingateway, &h, &long).is_err());
    assert!(event_id(&Scheme::Chaingateway, &h, &json!([1, 2])).is_err());
    for id in ["a\u{0}b", "line\nbreak"] {
        assert!(
            event_id(&Scheme::Chaingateway, &h, &json!({ "id": id })).is_err(),
            "{id:?}"
        );
    }
}

#[test]
fn errors_never_echo_the_secret_or_the_signature() {
    let body = br#"{"id":"a","status":"b"}"#;
    let sig = sign(SECRET, b"other", Encoding::Hex);
    let e = check(
        &Scheme::Qvard,
        &headers(&[("X-Qvard-Signature", &sig)]),
        body,
    )
    .unwrap_err();
    let text = format!("{e} {e:?}");
    assert!(!text.contains(SECRET) && !text.contains(&sig), "{text}");
}
