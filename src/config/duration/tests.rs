use super::*;

#[test]
fn durations_parse_or_explain() {
    assert_eq!(parse_duration("90s").unwrap(), Duration::from_secs(90));
    assert_eq!(
        parse_duration("48h").unwrap(),
        Duration::from_secs(48 * 3600)
    );
    assert_eq!(
        parse_duration("7d").unwrap(),
        Duration::from_secs(7 * 86400)
    );
    assert_eq!(parse_duration("1h30m").unwrap(), Duration::from_secs(5400));
    assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
    assert_eq!(parse_duration("0").unwrap(), Duration::ZERO);
    for bad in ["", "10", "ten", "5y", "h", "99999999999999999999d", "-5s"] {
        assert!(parse_duration(bad).is_err(), "{bad}");
    }
    assert_eq!(format_duration(Duration::from_secs(3600)), "1h");
    assert_eq!(format_duration(Duration::from_millis(1500)), "1500ms");
}

mod time_arg {
    use super::*;

    #[test]
    fn since_and_until_accept_three_forms() {
        let now: jiff::Timestamp = "2026-11-29T12:00:00Z".parse().unwrap();
        let p = |s| parse_time_arg(s, now).map(|t| t.to_string());
        assert_eq!(p("2026-11-01T00:00:00Z").unwrap(), "2026-11-01T00:00:00Z");
        assert_eq!(p("2026-11-01").unwrap(), "2026-11-01T00:00:00Z");
        assert_eq!(p("36h").unwrap(), "2026-11-28T00:00:00Z");
        assert_eq!(p("90m").unwrap(), "2026-11-29T10:30:00Z");
        assert!(p("yesterday").is_err());
        assert!(p("2026-13-01").is_err());
    }
}
