//! An arbitrary body and header values through `verify_at` for every scheme and through
//! `event_id`: never panics; a body signed with the secret always verifies (Qvard, Paymos,
//! a timestamped body-signed `Http` scheme, and Chaingateway when the body has a `txid`).
//!
//! Input: three lines (signature, `X-Webhook-Id`, timestamp header values), then the body.
#![no_main]

use std::time::Duration;

use http::{HeaderMap, HeaderName, HeaderValue};
use libfuzzer_sys::fuzz_target;
use payrecon::secret::Secret;
use payrecon::webhook::{event_id, sign, verify_at, Encoding, Scheme, Signed};
use serde_json::Value;

const SECRET: &str = "whsec_fuzz_0123456789";
/// 2026-11-01T10:00:00Z.
const NOW: i64 = 1_793_527_200;

fn schemes() -> Vec<Scheme> {
    vec![
        Scheme::Qvard,
        Scheme::Paymos,
        Scheme::Chaingateway,
        Scheme::Http {
            header: "x-sig".into(),
            encoding: Encoding::Hex,
            signed: Signed::Body,
            event_id: "/id".into(),
            timestamp_header: Some("x-ts".into()),
            tolerance: Some(Duration::from_secs(300)),
        },
        Scheme::Http {
            header: "x-sig".into(),
            encoding: Encoding::Base64,
            signed: Signed::Pointer("/data/tx".into()),
            event_id: "/data/0".into(),
            timestamp_header: None,
            tolerance: None,
        },
    ]
}

/// Every signature header of every scheme set to `sig` (when it is a valid header value).
fn headers(sig: &[u8], webhook_id: &[u8], ts: &[u8]) -> HeaderMap {
    let mut h = HeaderMap::new();
    let mut put = |name: &'static str, v: &[u8]| {
        if let Ok(v) = HeaderValue::from_bytes(v) {
            h.insert(HeaderName::from_static(name), v);
        }
    };
    for name in [
        "x-qvard-signature",
        "x-paymos-signature",
        "x-signature",
        "x-sig",
    ] {
        put(name, sig);
    }
    put("x-webhook-id", webhook_id);
    put("x-ts", ts);
    h
}

fn signed_ok(scheme: &Scheme, secret: &Secret, body: &[u8], now: jiff::Timestamp) {
    let (name, sig) = match scheme {
        Scheme::Qvard => ("x-qvard-signature", sign(SECRET, body, Encoding::Hex)),
        Scheme::Paymos => ("x-paymos-signature", sign(SECRET, body, Encoding::Hex)),
        Scheme::Chaingateway => {
            let Ok(Value::Object(json)) = serde_json::from_slice::<Value>(body) else {
                return;
            };
            let Some(Value::String(txid)) = json.get("txid") else {
                return;
            };
            (
                "x-signature",
                sign(SECRET, txid.as_bytes(), Encoding::Base64),
            )
        }
        Scheme::Http {
            signed: Signed::Body,
            ..
        } => {
            let mut msg = format!("{NOW}.").into_bytes();
            msg.extend_from_slice(body);
            ("x-sig", sign(SECRET, &msg, Encoding::Hex))
        }
        Scheme::Http { .. } => return,
    };
    let mut h = HeaderMap::new();
    h.insert(
        HeaderName::from_static(name),
        HeaderValue::from_str(&sig).unwrap(),
    );
    h.insert(
        HeaderName::from_static("x-ts"),
        HeaderValue::from_str(&NOW.to_string()).unwrap(),
    );
    if let Err(e) = verify_at(scheme, secret, &h, body, now) {
        panic!("{scheme:?}: a correctly signed body is refused: {e}");
    }
}

fuzz_target!(|data: &[u8]| {
    let mut parts = data.splitn(4, |&b| b == b'\n');
    let sig = parts.next().unwrap_or_default();
    let webhook_id = parts.next().unwrap_or_default();
    let ts = parts.next().unwrap_or_default();
    let body = parts.next().unwrap_or_default();

    let secret = Secret::new(SECRET);
    let now = jiff::Timestamp::from_second(NOW).unwrap();
    let h = headers(sig, webhook_id, ts);
    let json = serde_json::from_slice::<Value>(body).ok();
    for scheme in schemes() {
        let _ = verify_at(&scheme, &secret, &h, body, now);
        if let Some(json) = &json {
            if let Ok(id) = event_id(&scheme, &h, json) {
                assert!(!id.is_empty() && id.len() <= payrecon::webhook::MAX_EVENT_ID_LEN);
                assert!(!id.chars().any(char::is_control), "{id:?}");
            }
        }
        signed_ok(&scheme, &secret, body, now);
    }
});
