use super::*;

#[test]
fn backoff_doubles_with_jitter_and_is_capped() {
    let b = Duration::from_millis(100);
    for n in 1..=4u32 {
        let full = b * 2u32.pow(n - 1);
        let d = backoff_delay(b, n);
        assert!(d >= full / 2 && d <= full, "attempt {n}: {d:?}");
    }
    assert!(backoff_delay(b, 40) <= BACKOFF_CAP);
}

#[test]
fn status_classes() {
    assert_eq!(status_class(StatusCode::OK), StatusClass::Ok2xx);
    assert_eq!(
        status_class(StatusCode::TOO_MANY_REQUESTS),
        StatusClass::Client4xx
    );
    assert_eq!(
        status_class(StatusCode::BAD_GATEWAY),
        StatusClass::Server5xx
    );
    assert_eq!(status_class(StatusCode::FOUND), StatusClass::Error);
}
