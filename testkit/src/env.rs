//! The test environment: what is installed here, and what a missing piece means. A test that
//! needs PostgreSQL, anvil or another tool skips with a printed reason where it is missing,
//! and fails under `PAYRECON_TEST_STRICT=1` (which CI sets).

/// `PAYRECON_TEST_STRICT=1`: a missing service fails the test instead of skipping it.
pub fn strict() -> bool {
    std::env::var("PAYRECON_TEST_STRICT").is_ok_and(|v| v == "1")
}

/// Prints why a test is skipped, or panics under strict mode.
pub fn skip(reason: &str) {
    if strict() {
        panic!("PAYRECON_TEST_STRICT=1 and {reason}");
    }
    eprintln!("SKIPPED: {reason}");
}
