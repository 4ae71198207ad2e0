use super::*;

fn s(n: u64) -> Duration {
    Duration::from_secs(n)
}

#[test]
fn retries_follow_the_schedule_then_the_event_is_dead() {
    let now: Timestamp = "2026-12-01T10:00:00Z".parse().unwrap();
    let schedule = [s(5), s(300)];
    let at = |attempts, ra, j| {
        next_attempt(&schedule, attempts, ra, now, j).map(|t| t.duration_since(now).as_secs_f64())
    };
    assert_eq!(at(0, None, 0.0), Some(5.0));
    assert_eq!(at(1, None, 0.0), Some(300.0));
    assert_eq!(at(2, None, 0.0), None, "after the last delay: dead");
    // Jitter adds up to 20 %.
    assert_eq!(at(1, None, 0.5), Some(330.0));
    assert!(at(1, None, 0.999).unwrap() < 360.0);
    // A longer Retry-After wins, a shorter one does not, and it is capped at 1 h.
    assert_eq!(at(0, Some(s(60)), 0.0), Some(60.0));
    assert_eq!(at(1, Some(s(60)), 0.0), Some(300.0));
    assert_eq!(at(0, Some(s(86_400)), 0.0), Some(3600.0));
    assert_eq!(at(-1, None, 0.0), None);
}
