//! An arbitrary string and a number of decimals through `decimal_to_base_units`: never
//! panics; an accepted amount printed back with those decimals converts to itself, and when
//! the input is a decimal ("0012.50", "1.5e-3") the printed amount is the same number (no
//! rounding). U256 cannot exceed 2^256 - 1 by construction; the round trip checks the digits.
#![no_main]

use libfuzzer_sys::fuzz_target;
use payrecon::domain::amount::decimal_to_base_units;
use payrecon::domain::U256;

/// `units` as a decimal with `decimals` places ("25000000", 6 → "25.000000").
fn to_decimal(units: U256, decimals: u8) -> String {
    let digits = units.to_string();
    let d = usize::from(decimals);
    if d == 0 {
        return digits;
    }
    let padded = format!("{digits:0>width$}", width = d + 1);
    let (int, frac) = padded.split_at(padded.len() - d);
    format!("{int}.{frac}")
}

/// A decimal ("+0012.50", "1.5e-3"; no sign other than `+`) in its shortest plain spelling
/// ("12.5", "0.0015"); `None` for anything else.
fn plain(s: &str) -> Option<String> {
    let s = s.trim();
    let (s, exp) = match s.split_once(['e', 'E']) {
        None => (s, 0i64),
        Some((m, e)) => (m, e.parse::<i64>().ok().filter(|e| e.abs() < 400)?),
    };
    let s = s.strip_prefix('+').unwrap_or(s);
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    let digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
    if !digits(int) || !digits(frac) || int.len() + frac.len() == 0 {
        return None;
    }
    // All digits, and where the point goes; pad with zeros so the point falls inside.
    let mut all = format!("{int}{frac}");
    let mut point = int.len() as i64 + exp;
    if point < 0 {
        all.insert_str(0, &"0".repeat(point.unsigned_abs() as usize));
        point = 0;
    }
    let point = point as usize;
    if point > all.len() {
        all.push_str(&"0".repeat(point - all.len()));
    }
    let (int, frac) = all.split_at(point);
    let int = int.trim_start_matches('0');
    let int = if int.is_empty() { "0" } else { int };
    let frac = frac.trim_end_matches('0');
    Some(if frac.is_empty() {
        int.to_string()
    } else {
        format!("{int}.{frac}")
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&decimals, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let Ok(units) = decimal_to_base_units(text, decimals) else {
        return;
    };
    // Printed back: the whole units, or (when the fraction is zero) the integer part alone.
    let printed = to_decimal(units, decimals);
    if let Ok(again) = decimal_to_base_units(&printed, decimals) {
        assert_eq!(
            again, units,
            "{text:?} ({decimals}) -> {units} -> {printed:?}"
        );
    }
    let trimmed = printed
        .trim_end_matches('0')
        .trim_end_matches('.')
        .to_string();
    let trimmed = if trimmed.is_empty() {
        "0".to_string()
    } else {
        trimmed
    };
    if let Some(input) = plain(text) {
        assert_eq!(
            plain(&printed).as_deref(),
            Some(input.as_str()),
            "{text:?} ({decimals}) was read as {units} base units"
        );
    }
    if printed.contains('.') {
        let again = decimal_to_base_units(&trimmed, decimals)
            .unwrap_or_else(|e| panic!("{text:?} ({decimals}) -> {trimmed:?}: {}", e.reason));
        assert_eq!(
            again, units,
            "{text:?} ({decimals}) -> {units} -> {trimmed:?}"
        );
    }
});
