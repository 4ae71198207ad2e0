use super::*;

#[test]
fn passwords_are_found_in_urls() {
    assert_eq!(
        url_password("https://user:pw1@host:8545/v3/key").as_deref(),
        Some("pw1")
    );
    assert_eq!(url_password("http://127.0.0.1:8545"), None);
    assert_eq!(url_password("http://user@host"), None);
}

#[test]
fn shown_urls_carry_no_credentials() {
    assert_eq!(
        shown_url("https://user:pw1@host:8545/v3/key"),
        "https://host:8545/…"
    );
    assert_eq!(shown_url("http://127.0.0.1:8545"), "http://127.0.0.1:8545");
    assert_eq!(shown_url("http://127.0.0.1:8545/"), "http://127.0.0.1:8545");
    assert_eq!(shown_url("https://h?apikey=k"), "https://h/…");
    assert_eq!(shown_url("nonsense"), "<not a URL>");
}

#[test]
fn rate_limits_are_recognised() {
    assert!(is_rate_limit(-32005, "limit exceeded"));
    assert!(is_rate_limit(-32000, "Rate limit reached"));
    assert!(!is_rate_limit(-32601, "method not found"));
}
