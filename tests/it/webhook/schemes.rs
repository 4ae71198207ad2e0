//! Each signature scheme end to end: a signed delivery is stored under the scheme's event id;
//! the same delivery with a broken signature is refused.

use std::time::Duration;

use payrecon::webhook::{sign, Encoding, Scheme, Signed};
use serde_json::json;

use super::{endpoint, qvard, Hook, SECRET};
use crate::support;

fn http_scheme() -> Scheme {
    Scheme::Http {
        header: "X-Hook-Signature".into(),
        encoding: Encoding::Base64,
        signed: Signed::Body,
        event_id: "/data/event/id".into(),
        timestamp_header: Some("X-Hook-Timestamp".into()),
        tolerance: Some(Duration::from_secs(300)),
    }
}

fn pointer_scheme() -> Scheme {
    Scheme::Http {
        header: "X-Ref-Signature".into(),
        encoding: Encoding::Hex,
        signed: Signed::Pointer("/data/ref".into()),
        event_id: "/data/event/id".into(),
        timestamp_header: None,
        tolerance: None,
    }
}

#[tokio::test]
async fn webhook_every_scheme_end_to_end() {
    let (_dir, urls) = support::all_backends().await;
    for url in &urls {
        let endpoints = vec![
            endpoint("qvard", Scheme::Qvard),
            endpoint("paymos", Scheme::Paymos),
            endpoint("cg", Scheme::Chaingateway),
            endpoint("generic", http_scheme()),
            endpoint("byref", pointer_scheme()),
        ];
        let mut hook = Hook::start(url, endpoints, 16).await;

        let body = r#"{"id":"ord_7","status":"completed"}"#;
        assert_eq!(hook.post("qvard", &qvard(body), body).await.0, 200, "{url}");

        let body = r#"{"event_id":"evt_42","type":"payment.confirmed"}"#;
        let sig = sign(SECRET, body.as_bytes(), Encoding::Hex);
        let mut headers = vec![
            ("X-Paymos-Signature", sig),
            ("X-Webhook-Id", "evt_42".to_string()),
        ];
        assert_eq!(hook.post("paymos", &headers, body).await.0, 200, "{url}");
        headers[1].1 = "evt_43".into();
        assert_eq!(
            hook.post("paymos", &headers, body).await.0,
            400,
            "{url} id mismatch"
        );

        let txid = format!("0x{}", "cd".repeat(32));
        let body = json!({"id": 9001, "txid": txid, "to": "0xabc"}).to_string();
        let sig = sign(SECRET, txid.as_bytes(), Encoding::Base64);
        assert_eq!(
            hook.post("cg", &[("X-Signature", sig.clone())], body.clone())
                .await
                .0,
            200,
            "{url}"
        );
        let other_tx = body.replace("cdcd", "cdce");
        assert_eq!(
            hook.post("cg", &[("X-Signature", sig)], other_tx).await.0,
            400,
            "{url}"
        );

        let body = r#"{"data":{"event":{"id":"g-1"}}}"#;
        let now = jiff::Timestamp::now().as_second();
        let stamped = |t: i64| {
            let msg = format!("{t}.{body}");
            vec![
                (
                    "X-Hook-Signature",
                    sign(SECRET, msg.as_bytes(), Encoding::Base64),
                ),
                ("X-Hook-Timestamp", t.to_string()),
            ]
        };
        assert_eq!(
            hook.post("generic", &stamped(now - 600), body).await.0,
            400,
            "{url} stale"
        );
        assert_eq!(
            hook.post("generic", &stamped(now), body).await.0,
            200,
            "{url}"
        );

        let body = r#"{"data":{"event":{"id":77},"ref":"r-1"}}"#;
        let sig = sign(SECRET, b"r-1", Encoding::Hex);
        assert_eq!(
            hook.post("byref", &[("X-Ref-Signature", sig)], body)
                .await
                .0,
            200,
            "{url}"
        );

        let mut got: Vec<(String, String)> = hook
            .drain_sink()
            .into_iter()
            .map(|e| (e.provider, e.event_id))
            .collect();
        got.sort();
        let want = [
            ("byref", "77"),
            ("cg", "9001"),
            ("generic", "g-1"),
            ("paymos", "evt_42"),
            ("qvard", "ord_7:completed"),
        ];
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(p, e)| (p.to_string(), e.to_string()))
            .collect();
        assert_eq!(got, want, "{url}");
        for (provider, _) in &want {
            assert_eq!(hook.stored(provider).await, 1, "{url} {provider}");
            assert_eq!(hook.counted(provider, "accepted"), 1.0, "{provider}");
        }
        assert_eq!(hook.counted("paymos", "bad_request"), 1.0);
        assert_eq!(hook.counted("cg", "bad_signature"), 1.0);
        assert_eq!(hook.counted("generic", "bad_signature"), 1.0);
    }
}
