use super::decimal;

#[test]
fn decimals_are_exact() {
    assert_eq!(decimal("25000000", 6).as_deref(), Some("25.000000"));
    assert_eq!(decimal("1", 6).as_deref(), Some("0.000001"));
    assert_eq!(decimal("0", 2).as_deref(), Some("0.00"));
    assert_eq!(decimal("123", 0).as_deref(), Some("123"));
    let max = "115792089237316195423570985008687907853269984665640564039457584007913129639935";
    assert_eq!(
        decimal(max, 18).as_deref(),
        Some("115792089237316195423570985008687907853269984665640564039457.584007913129639935")
    );
    assert_eq!(decimal("-5", 2), None);
    assert_eq!(decimal("1.5", 2), None);
}
