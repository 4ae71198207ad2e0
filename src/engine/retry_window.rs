//! Retry windows: a provider that retries a notification by itself (Qvard about 6 minutes,
//! Paymos about 16 hours) is not asked to resend it before it has given up.

use std::time::Duration;

use jiff::Timestamp;

/// Why a resend must wait: the record is younger than the provider's retry window (the
/// provider is still retrying by itself). `None` when a resend may go now.
pub(crate) fn within_retry_window(
    record_time: Option<Timestamp>,
    now: Timestamp,
    window: Duration,
) -> Option<String> {
    let t = record_time?;
    if window.is_zero() {
        return None;
    }
    let age = now.duration_since(t);
    let window_s = jiff::SignedDuration::try_from(window).unwrap_or(jiff::SignedDuration::MAX);
    if age > window_s {
        return None;
    }
    let shown = Duration::try_from(age).unwrap_or(Duration::ZERO);
    Some(format!(
        "the provider is still retrying: the record is {} old, its retry window is {}",
        crate::config::format_duration(Duration::from_secs(shown.as_secs())),
        crate::config::format_duration(window)
    ))
}

#[cfg(test)]
mod tests;
