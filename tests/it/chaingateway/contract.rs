//! The contract test against Prism serving Chaingateway's own OpenAPI document.
//! (Fetch speed is measured by `benches/bench_backfill.rs`, not here.)

use std::time::Duration;

use payrecon::domain::{Address, Asset};
use payrecon::providers::{ListKind, StatusClass};

use super::*;

/// Contract test: the client against Prism mocking Chaingateway's own OpenAPI document
/// (`../shared/chaingateway-openapi.yaml` beside the repository, or `CHAINGATEWAY_OPENAPI`).
/// Skipped (failed under `PAYRECON_TEST_STRICT=1`) unless `PRISM_BIN` is set (`npm install @stoplight/prism-cli@5`, then
/// `PRISM_BIN=$PWD/node_modules/.bin/prism`). The resend is not checked: the document gives
/// it no response, and Prism answers 500 for it.
#[tokio::test]
async fn contract_with_the_openapi_document_via_prism() {
    let Ok(bin) = std::env::var("PRISM_BIN") else {
        crate::support::skip("PRISM_BIN is not set (Chaingateway OpenAPI contract test)");
        return;
    };
    let spec = std::env::var("CHAINGATEWAY_OPENAPI").unwrap_or_else(|_| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../shared/chaingateway-openapi.yaml"
        )
        .into()
    });
    assert!(
        std::path::Path::new(&spec).is_file(),
        "{spec} not found: run from a checkout with shared/ beside it, or set CHAINGATEWAY_OPENAPI"
    );
    let port = crate::support::free_port();
    let mut prism = Prism(
        std::process::Command::new(bin)
            .args(["mock", "-h", "127.0.0.1", "-p", &port.to_string(), &spec])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::inherit())
            .spawn()
            .expect("spawn prism"),
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        if let Ok(Some(status)) = prism.0.try_wait() {
            panic!("prism exited before listening: {status}");
        }
        assert!(
            std::time::Instant::now() < deadline,
            "prism did not listen within 60 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (c, seen) = client(settings(&format!("http://127.0.0.1:{port}/api/v2")));

    for list in [ListKind::All, ListKind::Failed] {
        let pages = read_all(&c, list).await.unwrap();
        assert_eq!(pages.len(), 1);
        assert!(pages[0].rejected.is_empty(), "{:?}", pages[0].rejected);
        let r = &pages[0].records[0];
        assert_eq!(r.id, "9ba28088-81d8-4aab-b711-650525081fe1");
        assert_eq!(
            r.tx_hash.as_ref().unwrap().as_str(),
            "0x8bb1ff22f084fe5098288a17dd6641f02cfcd9a4e923a342aa45dc78e178fc15"
        );
        assert_eq!(r.asset, Some(Asset::Token(Address::parse(USDT).unwrap())));
        assert_eq!(
            r.to.as_ref().unwrap().as_str(),
            "0x238a879d973e127193b1a2fdc4f6410cd5289da5"
        );
        assert_eq!(r.amount_hint, None);
        assert_eq!(r.created_at.to_string(), "2024-05-05T19:33:52Z");
        assert_eq!(r.failed, list == ListKind::Failed);
    }
    assert_eq!(c.block_number("bsc").await.unwrap(), 19_151_363);
    assert_eq!(c.block_number("tron").await.unwrap(), 44_776_190);
    assert!(seen
        .lock()
        .unwrap()
        .iter()
        .all(|s| *s == StatusClass::Ok2xx));
}

struct Prism(std::process::Child);

impl Drop for Prism {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
