use super::*;

fn check(input: &str, decimals: u8, expected: Option<&str>) {
    let got = decimal_to_base_units(input, decimals)
        .ok()
        .map(|v| v.to_string());
    assert_eq!(
        got.as_deref(),
        expected,
        "input {input:?} decimals {decimals}"
    );
}

#[test]
fn decimal_amounts_convert_exactly_or_not_at_all() {
    check("25", 6, Some("25000000"));
    check("25.5", 6, Some("25500000"));
    check("0.000001", 6, Some("1"));
    check("0.0000001", 6, None);
    check("1.10", 1, Some("11"));
    check("-1", 6, None);
    check("abc", 6, None);
    check("", 6, None);
    check("1e3", 0, Some("1000"));
    check(
        "79228162514264337593543950335",
        18,
        Some("79228162514264337593543950335000000000000000000"),
    );
    check("792281625142643375935439503350", 18, None);
    check("1", 255, None);
}

/// Fuzz regression (`fuzz/`, target `amount`): more fractional digits than a `Decimal`
/// holds were rounded away ("1.00000000000000000000000000001" read as 1) instead of
/// refused.
#[test]
fn amounts_too_precise_for_a_decimal_are_refused_not_rounded() {
    check("1.00000000000000000000000000001", 30, None);
    check("1.00000000000000000000000000001e0", 30, None);
    check("0.10000000000000000000000000001E1", 30, None);
    check(
        "1.0000000000000000000000000001",
        28,
        Some("10000000000000000000000000001"),
    );
    check("1.5e-7", 18, Some("150000000000"));
    check("2.5E3", 0, Some("2500"));
}
