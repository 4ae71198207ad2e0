use super::normalize_ts;

#[test]
fn lease_expiry_is_spelled_rfc3339() {
    assert_eq!(
        normalize_ts("2026-11-01 10:00:00.500000"),
        "2026-11-01T10:00:00.500Z",
        "MariaDB/MySQL's DATETIME, in UTC"
    );
    assert_eq!(
        normalize_ts("2026-11-01 10:00:00.5+00"),
        "2026-11-01T10:00:00.500Z"
    );
    assert_eq!(
        normalize_ts("2026-11-01 12:00:00+02"),
        "2026-11-01T10:00:00.000Z"
    );
    assert_eq!(
        normalize_ts("2026-11-01T10:00:00.123Z"),
        "2026-11-01T10:00:00.123Z"
    );
    assert_eq!(normalize_ts("1767225600"), "1767225600");
}
