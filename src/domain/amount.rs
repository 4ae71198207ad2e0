//! Decimal amounts from providers ("25.5" USDT) converted exactly to base units, or refused.

use std::str::FromStr;

use rust_decimal::Decimal;

use super::model::{InputError, U256};

/// Converts a provider's decimal amount to base units with the asset's `decimals`.
/// Refuses negatives, overflow (rust_decimal holds 28 digits), and fractions finer than
/// `decimals` (an amount that cannot be represented exactly is never rounded).
pub fn decimal_to_base_units(s: &str, decimals: u8) -> Result<U256, InputError> {
    let d = Decimal::from_str_exact(s.trim())
        .or_else(|_| Decimal::from_scientific(s.trim()))
        .or_else(|_| Decimal::from_str(s.trim()))
        .map_err(|e| InputError::new("amount", format!("not a decimal amount {s:?}: {e}")))?;
    if d.is_sign_negative() && !d.is_zero() {
        return Err(InputError::new("amount", format!("negative amount {s:?}")));
    }
    let d = d.normalize();
    let scale = d.scale();
    let mantissa = U256::from(d.mantissa().unsigned_abs());
    let decimals = u32::from(decimals);
    if scale > decimals {
        return Err(InputError::new(
            "amount",
            format!("{s:?} has more than {decimals} decimal places"),
        ));
    }
    let factor = U256::from(10u8)
        .checked_pow(U256::from(decimals - scale))
        .ok_or_else(|| InputError::new("amount", "does not fit 256 bits"))?;
    mantissa
        .checked_mul(factor)
        .ok_or_else(|| InputError::new("amount", "does not fit 256 bits"))
}

#[cfg(test)]
mod tests {
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
}
