//! The demo's merchant endpoint (the sandbox crate's `merchant`) checks signatures with the
//! official Standard Webhooks library: what payrecon's signer signs is accepted, a signature
//! over another body, a stale timestamp (the library's tolerance is five minutes) and a
//! request without headers are refused, and every one is kept to show.

use payrecon::events::sign::signature;
use payrecon_testkit::sandbox::merchant::{SandboxMerchant, SANDBOX_EVENTS_SECRET};

const EVENT: &str = r#"{"type":"order.final","data":{"order_ref":"A-1","from_state":"confirmed","to_state":"final"}}"#;

#[tokio::test]
async fn the_sandbox_merchant_accepts_payrecons_signatures_and_refuses_others() {
    let (merchant, url) = SandboxMerchant::start().await.unwrap();
    let key = payrecon::config::decode_secret(SANDBOX_EVENTS_SECRET).unwrap();
    let now = jiff::Timestamp::now().as_second();
    let client = reqwest::Client::new();
    let cases: [(&str, i64, &str, u16); 4] = [
        ("msg_1", now, EVENT, 200),
        ("msg_2", now, "{}", 400),
        ("msg_3", now - 3600, EVENT, 400),
        ("", 0, "", 400),
    ];
    for (id, ts, signed, status) in cases {
        let mut req = client.post(&url).body(EVENT);
        if !id.is_empty() {
            req = req
                .header("webhook-id", id)
                .header("webhook-timestamp", ts.to_string())
                .header(
                    "webhook-signature",
                    signature(&key, id, ts, signed.as_bytes()),
                );
        }
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status().as_u16(), status, "{id}");
    }
    let received = merchant.received();
    let seen: Vec<_> = received
        .iter()
        .map(|e| (e.id.as_str(), e.signature_ok))
        .collect();
    assert_eq!(
        seen,
        [
            ("msg_1", true),
            ("msg_2", false),
            ("msg_3", false),
            ("", false)
        ]
    );
    let first = &received[0];
    assert_eq!(
        (first.kind.as_str(), first.order_ref.as_str()),
        ("order.final", "A-1")
    );
    assert_eq!(first.summary, "confirmed -> final");
}
