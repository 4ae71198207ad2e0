//! An arbitrary string and a number of decimals through `decimal_to_base_units`: never
//! panics, and an accepted amount printed back with those decimals converts to itself.
//! (U256 cannot exceed 2^256 - 1 by construction; the round trip checks the digits.)
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
    if printed.contains('.') {
        let again = decimal_to_base_units(&trimmed, decimals)
            .unwrap_or_else(|e| panic!("{text:?} ({decimals}) -> {trimmed:?}: {}", e.reason));
        assert_eq!(
            again, units,
            "{text:?} ({decimals}) -> {units} -> {trimmed:?}"
        );
    }
});
