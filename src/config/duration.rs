//! Durations like `90s`, `48h`, `7d`, `1h30m`, `250ms`.

use std::time::Duration;

/// Parses one or more `<integer><unit>` parts; units `ms`, `s`, `m`, `h`, `d`, `w`.
pub fn parse_duration(s: &str) -> Result<Duration, super::ValueError> {
    let s = s.trim();
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    if s.is_empty() {
        return Err("empty duration".into());
    }
    let mut total: u64 = 0;
    let mut rest = s;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(format!("{s:?} is not a duration like 90s, 48h or 7d").into());
        }
        let n: u64 = rest[..digits]
            .parse()
            .map_err(|_| format!("{s:?}: number too large"))?;
        rest = &rest[digits..];
        let unit_len = rest.bytes().take_while(u8::is_ascii_alphabetic).count();
        let ms_per = match &rest[..unit_len] {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            "w" => 604_800_000,
            "" => return Err(format!("{s:?}: a unit is required (ms, s, m, h, d, w)").into()),
            u => return Err(format!("{s:?}: unknown unit {u:?} (ms, s, m, h, d, w)").into()),
        };
        rest = &rest[unit_len..];
        total = n
            .checked_mul(ms_per)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(|| format!("{s:?}: too large"))?;
    }
    Ok(Duration::from_millis(total))
}

pub fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    for (unit, per) in [
        ("d", 86_400_000u128),
        ("h", 3_600_000),
        ("m", 60_000),
        ("s", 1_000),
    ] {
        if ms >= per && ms.is_multiple_of(per) {
            return format!("{}{unit}", ms / per);
        }
    }
    format!("{ms}ms")
}

pub mod serde_duration {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer};

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let s = String::deserialize(d)?;
        super::parse_duration(&s).map_err(serde::de::Error::custom)
    }
}

/// An optional duration key.
pub mod serde_opt_duration {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer};

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        let s = String::deserialize(d)?;
        super::parse_duration(&s)
            .map(Some)
            .map_err(serde::de::Error::custom)
    }
}

/// A `--since`/`--until` value: RFC 3339 (`2026-11-01T00:00:00Z`), a date (`2026-11-01`,
/// midnight UTC) or a duration back from `now` (`90m`, `36h`, `7d`).
pub fn parse_time_arg(s: &str, now: jiff::Timestamp) -> Result<jiff::Timestamp, super::ValueError> {
    let s = s.trim();
    if let Ok(t) = s.parse::<jiff::Timestamp>() {
        return Ok(t);
    }
    if let Ok(d) = s.parse::<jiff::civil::Date>() {
        return d
            .to_zoned(jiff::tz::TimeZone::UTC)
            .map(|z| z.timestamp())
            .map_err(|e| format!("{s:?}: {e}").into());
    }
    let d = parse_duration(s).map_err(|_| {
        format!("{s:?} is not an RFC 3339 time, a date (2026-11-01) or a duration (90m, 36h, 7d)")
    })?;
    let span = jiff::SignedDuration::try_from(d).map_err(|e| format!("{s:?}: {e}"))?;
    now.checked_sub(span)
        .map_err(|e| format!("{s:?}: {e}").into())
}

#[cfg(test)]
mod tests;
