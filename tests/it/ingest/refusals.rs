//! Refused deliveries through a real `serve`, for a Chaingateway and a Qvard endpoint: each
//! gets its status, none is stored, the ledger and the audit trail do not move; an authentic
//! delivery sent after them is applied (the consumer was there all along).

use payrecon::domain::State;
use payrecon_testkit::qvard::FakeQvard;

use super::{
    assert_one_webhook_transition, audit, cg_body, cg_sig, providers, qv_sig, wait_applied,
    wait_processed, Daemon, Headers, CG_SECRET, NEVER, QV_KEY, QV_SECRET,
};
use crate::reconcile::{on_backends, payee, usdt, World, CG, CONFS};
use payrecon_testkit::inspect::Inspect;

const QV: &str = "qvard";
/// One byte over the limit.
const OVER: usize = 64 * 1024 + 1;

/// `json` with a `"pad"` string member that makes it exactly `len` bytes long.
fn padded(json: &str, len: usize) -> String {
    let open = json.strip_suffix('}').expect("a JSON object");
    let shell = format!(r#"{open},"pad":""}}"#);
    let pad = "x".repeat(len - shell.len());
    let out = format!(r#"{open},"pad":"{pad}"}}"#);
    assert_eq!(out.len(), len);
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ingest_refused_deliveries_store_and_apply_nothing() {
    on_backends(|url| async move {
        let qvard = FakeQvard::start(QV_KEY).await;
        let p = providers(Some(qvard.base_url()));
        let Some(w) = World::start_with(&url, &p, NEVER).await else {
            return;
        };
        let to = payee(21);
        w.orders(&[("R-1", &to, usdt(25)), ("A-1", &payee(22), usdt(25))])
            .await;
        let tx = w.pay(&to, usdt(25)).await;
        w.anvil.mine(CONFS).await;
        let before = (w.order("R-1").await, w.order("A-1").await);
        let d = Daemon::start(w.another_app(&p, NEVER).await).await;

        // Chaingateway: the MAC covers the body's txid.
        let cg = cg_body(&w, "7101", &tx, &to);
        let other_tx = format!("0x{:064x}", 0xbad_u64);
        let cg_cases: Vec<(&str, Headers, String, u16)> = vec![
            (
                "tampered txid",
                cg_sig(CG_SECRET, &tx),
                cg.replace(&tx, &other_tx),
                400,
            ),
            ("wrong secret", cg_sig("whsec_wrong", &tx), cg.clone(), 400),
            ("missing header", vec![], cg.clone(), 400),
            ("oversized", cg_sig(CG_SECRET, &tx), padded(&cg, OVER), 413),
            (
                "invalid JSON",
                cg_sig(CG_SECRET, &tx),
                cg[..cg.len() - 1].to_string(),
                400,
            ),
        ];
        // Qvard: the MAC covers the raw body.
        let qv = r#"{"id":"A-1","status":"completed"}"#;
        let reserialised = "{\n  \"id\": \"A-1\",\n  \"status\": \"completed\"\n}";
        let broken = r#"{"id":"A-1","status":"#;
        let big = padded(qv, OVER);
        let qv_cases: Vec<(&str, Headers, String, u16)> = vec![
            (
                "tampered",
                qv_sig(QV_SECRET, qv),
                qv.replace("A-1", "A-2"),
                400,
            ),
            ("wrong secret", qv_sig("whsec_wrong", qv), qv.into(), 400),
            ("missing header", vec![], qv.into(), 400),
            ("oversized", qv_sig(QV_SECRET, &big), big.clone(), 413),
            (
                "invalid JSON, valid signature",
                qv_sig(QV_SECRET, broken),
                broken.into(),
                400,
            ),
            (
                "re-serialised by a proxy",
                qv_sig(QV_SECRET, qv),
                reserialised.into(),
                400,
            ),
        ];
        for (provider, cases) in [(CG, &cg_cases), (QV, &qv_cases)] {
            for (what, headers, body, status) in cases {
                let (got, _) = d.post(provider, headers, body.clone()).await;
                assert_eq!(got, *status, "{url}: {provider} {what}");
            }
        }
        for (provider, bad_sig, bad_req, too_large) in [(CG, 3.0, 1.0, 1.0), (QV, 4.0, 1.0, 1.0)] {
            assert_eq!(
                d.webhooks(provider, "bad_signature").await,
                bad_sig,
                "{url} {provider}"
            );
            assert_eq!(
                d.webhooks(provider, "bad_request").await,
                bad_req,
                "{url} {provider}"
            );
            assert_eq!(
                d.webhooks(provider, "too_large").await,
                too_large,
                "{url} {provider}"
            );
            assert_eq!(
                d.webhooks(provider, "accepted").await,
                0.0,
                "{url} {provider}"
            );
            assert_eq!(
                w.store().webhook_delivery_count(provider).await.unwrap(),
                0,
                "{url}"
            );
        }
        assert_eq!(
            (w.order("R-1").await, w.order("A-1").await),
            before,
            "{url}"
        );
        assert!(audit(w.store()).await.is_empty(), "{url}");

        // The authentic Chaingateway delivery: applied, and only it.
        assert_eq!(
            d.post(CG, &cg_sig(CG_SECRET, &tx), cg.clone()).await,
            (200, String::new()),
            "{url}"
        );
        wait_applied(&w, "R-1").await;
        wait_processed(w.store(), CG).await;
        assert_eq!(w.order("R-1").await.state, State::Confirmed, "{url}");
        assert_eq!(w.order("A-1").await, before.1, "{url}");
        assert_one_webhook_transition(&audit(w.store()).await, "R-1", State::Confirmed, CG);
        assert_eq!(
            w.store().webhook_delivery_count(CG).await.unwrap(),
            1,
            "{url}"
        );
        assert_eq!(
            w.store().webhook_delivery_count(QV).await.unwrap(),
            0,
            "{url}"
        );
        d.stop().await;
    })
    .await;
}
