use super::*;

#[test]
fn a_resend_waits_until_the_record_is_older_than_the_window() {
    let now: Timestamp = "2026-11-30T12:00:00Z".parse().unwrap();
    let at = |s: &str| Some(s.parse::<Timestamp>().unwrap());
    let h16 = Duration::from_secs(16 * 3600);
    let young = within_retry_window(at("2026-11-30T11:00:00Z"), now, h16).unwrap();
    assert!(
        young.contains("still retrying") && young.contains("16h"),
        "{young}"
    );
    assert_eq!(
        within_retry_window(at("2026-11-29T19:00:00Z"), now, h16),
        None
    );
    // No window (Chaingateway never retries), or no record time: resend now.
    assert_eq!(
        within_retry_window(at("2026-11-30T11:59:59Z"), now, Duration::ZERO),
        None
    );
    assert_eq!(within_retry_window(None, now, h16), None);
}
