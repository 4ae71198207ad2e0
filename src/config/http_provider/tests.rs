use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use super::*;
use crate::providers::http::{AmountUnit, StatusAction};

const QVARD: &str = r#"
kind = "http"
preset = "qvard"
base_url = "https://api.qvard.example/"
api_key = "qk_live_123456"
chains = ["ethereum"]
"#;

const GENERIC: &str = r#"
kind = "http"
base_url = "http://127.0.0.1:1"
chains = ["ethereum", "polygon"]
status_map = { paid = "final" }

[payments]
path = "/p?page={page}"
pagination = "page"
items = "/items"

[fields]
event_id = "/id"
chain = "/chain"
tx_hash = "/tx"
status = "/status"
updated_at = "/at"
"#;

fn chains() -> BTreeMap<String, ()> {
    BTreeMap::from([("ethereum".into(), ()), ("polygon".into(), ())])
}

fn load(text: &str) -> Result<HttpSettings, ConfigError> {
    let table: toml::Table = text.parse().unwrap();
    let decimals = HashMap::from([("ethereum:native".to_string(), 18u8)]);
    parse("q", table, &chains(), &decimals)
}

fn error_of(text: &str) -> String {
    match load(text) {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn the_qvard_preset_alone_is_a_whole_configuration() {
    let s = load(QVARD).unwrap();
    assert_eq!(s.base_url, "https://api.qvard.example");
    assert_eq!(
        s.api_key.as_ref().map(|k| k.expose()),
        Some("qk_live_123456")
    );
    assert_eq!(
        (s.auth_header.as_str(), s.auth_scheme.as_str()),
        ("Authorization", "Bearer")
    );
    assert_eq!(s.retry_window, Duration::from_secs(360));
    assert_eq!(s.timeout, Duration::from_secs(10));
    assert_eq!(s.amount_unit, AmountUnit::Decimal);
    let p = s.payments.as_ref().unwrap();
    assert_eq!(
        p.pagination,
        Pagination::Cursor {
            next: "/next_cursor".into()
        }
    );
    assert_eq!(p.time_format, TimeFormat::Unix);
    assert!(s.failed.is_none());
    assert_eq!(s.fields.event_id, "/id");
    assert_eq!(s.fields.order_ref.as_deref(), Some("/id"));
    assert_eq!(s.status_map.get("completed"), Some(&StatusAction::Final));
    assert_eq!(
        s.resend.as_ref().unwrap().path,
        "/v1/payments/{id}/resend-webhook"
    );
    assert_eq!(s.preset.as_deref(), Some("qvard"));
    assert_eq!(s.decimals.get("ethereum:native"), Some(&18));
}

#[test]
fn the_paymos_preset_fills_the_failed_list() {
    let s = load(&QVARD.replace("\"qvard\"", "\"paymos\"")).unwrap();
    let f = s.failed.as_ref().unwrap();
    assert_eq!(
        f.pagination,
        Pagination::Page {
            first: 1,
            has_more: Some("/has_more".into())
        }
    );
    assert_eq!(f.time_format, TimeFormat::Rfc3339);
    assert!(s.payments.is_none());
    assert_eq!(s.retry_window, Duration::from_secs(16 * 3600));
    assert_eq!(s.status_map.get("expired"), Some(&StatusAction::Ignore));
    assert_eq!(s.amount_unit, AmountUnit::Base);
}

#[test]
fn user_keys_override_the_preset() {
    let text = format!(
        "{QVARD}retry_window = \"0\"\n[fields]\ntx_hash = \"/payment/tx\"\n[status_map]\nrefunded = \"ignore\"\n[payments]\npagination = \"offset\"\nlimit = 50\n"
    );
    let s = load(&text).unwrap();
    assert_eq!(s.retry_window, Duration::ZERO);
    assert_eq!(s.fields.tx_hash.as_deref(), Some("/payment/tx"));
    assert_eq!(
        s.fields.status, "/status",
        "the preset's other pointers stay"
    );
    assert_eq!(s.status_map.get("refunded"), Some(&StatusAction::Ignore));
    assert_eq!(s.status_map.get("completed"), Some(&StatusAction::Final));
    let p = s.payments.unwrap();
    assert_eq!(p.pagination, Pagination::Offset { limit: 50 });
    assert!(p.path.starts_with("/v1/payments"));
}

#[test]
fn a_generic_provider_without_preset() {
    let s = load(GENERIC).unwrap();
    assert!(s.api_key.is_none());
    assert_eq!(s.retry_window, Duration::ZERO);
    assert_eq!(s.amount_unit, AmountUnit::Base);
    assert_eq!(
        s.payments.unwrap().pagination,
        Pagination::Page {
            first: 1,
            has_more: None
        }
    );
}

/// A change to `GENERIC` (this text, by that), and what its error must say.
const ERRORS: &[(&str, &str, &str)] = &[
    (
        "tx_hash = \"/tx\"",
        "tx_hsh = \"/tx\"",
        "providers.q.fields.tx_hsh: unknown field",
    ),
    (
        "status = \"/status\"\n",
        "",
        "providers.q.fields.status: required",
    ),
    (
        "pagination = \"page\"",
        "pagination = \"pages\"",
        "providers.q.payments.pagination",
    ),
    (
        "pagination = \"page\"",
        "",
        "providers.q.payments.pagination: required",
    ),
    (
        "tx_hash = \"/tx\"",
        "tx_hash = \"tx\"",
        "providers.q.fields.tx_hash: \"tx\" is not a JSON pointer",
    ),
    (
        "chain = \"/chain\"\n",
        "",
        "providers.q.fields.chain: required",
    ),
    (
        "tx_hash = \"/tx\"\n",
        "",
        "providers.q.fields.order_ref: required",
    ),
    (
        "\"polygon\"]",
        "\"tron\"]",
        "providers.q.chains: chain \"tron\"",
    ),
    (
        "paid = \"final\"",
        "paid = \"done\"",
        "providers.q.status_map.paid",
    ),
    (
        "base_url = \"http://127.0.0.1:1\"\n",
        "",
        "providers.q.base_url: required",
    ),
    (
        "kind = \"http\"\n",
        "kind = \"http\"\ntimeout = \"10 seconds\"\n",
        "providers.q.timeout",
    ),
    (
        "kind = \"http\"\n",
        "kind = \"http\"\nnetwork = \"x\"\n",
        "providers.q.network: unknown field",
    ),
    (
        "pagination = \"page\"",
        "pagination = \"cursor\"",
        "providers.q.payments.cursor: required",
    ),
    (
        "pagination = \"page\"",
        "pagination = \"offset\"",
        "providers.q.payments.limit: required",
    ),
    (
        "kind = \"http\"\n",
        "kind = \"http\"\npreset = \"stripe\"\n",
        "providers.q.preset: unknown preset",
    ),
    (
        "[payments]",
        "[paymens]",
        "providers.q.paymens: unknown field",
    ),
];

#[test]
fn errors_name_the_key() {
    for (from, to, want) in ERRORS {
        assert!(GENERIC.contains(from), "{from}");
        let e = error_of(&GENERIC.replacen(from, to, 1));
        assert!(e.contains(want), "{from} -> {to}: {e}");
    }
}

#[test]
fn a_list_is_required_and_a_key_file_is_read() {
    let e = error_of(&QVARD.replace("api_key =", "api_key_file ="));
    assert!(e.contains("providers.q.api_key_file: cannot read"), "{e}");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("qvard");
    std::fs::write(&file, "qk_from_file\n").unwrap();
    let text = QVARD.replace(
        "api_key = \"qk_live_123456\"",
        &format!("api_key_file = {:?}", file.display().to_string()),
    );
    let s = load(&text).unwrap();
    assert_eq!(s.api_key.unwrap().expose(), "qk_from_file");

    let no_list = GENERIC.replace(
        "[payments]\npath = \"/p?page={page}\"\npagination = \"page\"\nitems = \"/items\"\n",
        "",
    );
    let e = error_of(&no_list);
    assert!(e.contains("providers.q.payments: at least one of"), "{e}");
}
