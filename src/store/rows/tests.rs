use super::*;

#[test]
fn sqlite_timestamps_have_millisecond_precision() {
    let t: Timestamp = "2026-11-01T10:20:30.123456789Z".parse().unwrap();
    assert_eq!(sqlite_ts(t), "2026-11-01T10:20:30.123Z");
    let t: Timestamp = "2026-11-01T10:20:30Z".parse().unwrap();
    assert_eq!(sqlite_ts(t), "2026-11-01T10:20:30.000Z");
}

#[test]
fn errors_say_whether_to_try_again() {
    let busy = db_error("apply", sqlx::Error::PoolTimedOut);
    assert!(busy.is_retryable(), "{busy}");
    assert_eq!(
        busy.to_string(),
        "database: apply: pool timed out while waiting for an open connection"
    );
    let missing = db_error("read", sqlx::Error::RowNotFound);
    assert!(!missing.is_retryable());
    let lost = StoreError::LeaseLost {
        provider: "cg".into(),
    };
    assert!(!lost.is_retryable() && lost.to_string().contains("lease on cg was lost"));
    assert!(connect_error("sqlite://x.db", "refused").is_retryable());
    assert!(!StoreError::Invalid("count rows: unknown table".into()).is_retryable());
}

#[test]
fn connect_errors_hide_the_password() {
    let url = "postgres://u:p%40ss_word@h/db";
    let e = connect_error(url, "failed for p@ss_word and p%40ss_word");
    let text = e.to_string();
    assert!(!text.contains("ss_word"), "{text}");
    assert!(text.contains("postgres://u:***@h/db"), "{text}");
}
