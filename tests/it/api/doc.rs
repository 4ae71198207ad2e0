//! The OpenAPI document: generated from the code, committed as `docs/openapi.json` (bless with
//! `PAYRECON_BLESS=1`), served as it is, and valid by a real validator
//! (`openapi-spec-validator`, PyPI).

use std::process::Command;

use crate::support;

const COMMITTED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/openapi.json");

#[test]
fn the_committed_document_is_what_the_code_generates() {
    let generated = payrecon::api::doc::json();
    if std::env::var_os("PAYRECON_BLESS").is_some() {
        std::fs::write(COMMITTED, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(COMMITTED).unwrap_or_default();
    assert!(
        committed == generated,
        "docs/openapi.json differs from what the code generates; \
         run `PAYRECON_BLESS=1 cargo nextest run --cargo-profile bench --test it api::doc` and commit it"
    );
    let doc: serde_json::Value = serde_json::from_str(&generated).unwrap();
    assert_eq!(doc["openapi"], "3.1.0");
    for path in ["/v1/orders", "/v1/orders/{order_ref}", "/v1/openapi.json"] {
        assert!(doc["paths"][path].is_object(), "{path} is documented");
    }
    let post = &doc["paths"]["/v1/orders"]["post"]["responses"];
    for status in ["200", "201", "401", "409", "413", "415", "422", "503"] {
        assert!(
            post[status].is_object(),
            "POST /v1/orders documents {status}"
        );
    }
    let schema = &doc["components"]["schemas"]["OrderRequest"];
    assert_eq!(schema["additionalProperties"], false, "{schema}");
}

#[test]
fn the_document_is_valid_openapi_3_1() {
    let probe = Command::new("python3")
        .args(["-c", "import openapi_spec_validator"])
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        support::skip(
            "python3 with openapi-spec-validator (pip install openapi-spec-validator) is missing",
        );
        return;
    }
    let dir = payrecon_testkit::tmp::dir().unwrap();
    let file = dir.path().join("openapi.json");
    std::fs::write(&file, payrecon::api::doc::json()).unwrap();
    let script = "import json,sys\n\
                  from openapi_spec_validator import validate, OpenAPIV31SpecValidator\n\
                  validate(json.load(open(sys.argv[1])), cls=OpenAPIV31SpecValidator)\n\
                  print('valid')";
    let out = Command::new("python3")
        .args(["-c", script])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "valid",
        "openapi-spec-validator refused the document:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The validator can fail: a document without `info` is refused.
    let mut broken: serde_json::Value = serde_json::from_str(&payrecon::api::doc::json()).unwrap();
    broken.as_object_mut().unwrap().remove("info");
    std::fs::write(&file, broken.to_string()).unwrap();
    let out = Command::new("python3")
        .args(["-c", script])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        !out.status.success(),
        "a document without info must be refused"
    );
}
