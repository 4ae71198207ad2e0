//! Decimal amounts from providers ("25.5" USDT) converted exactly to base units, or refused.

use rust_decimal::Decimal;

use super::model::{InputError, U256};

/// Converts a provider's decimal amount to base units with the asset's `decimals`.
/// Refuses negatives, overflow (rust_decimal holds 28 digits), and fractions finer than
/// `decimals` (an amount that cannot be represented exactly is never rounded).
pub fn decimal_to_base_units(s: &str, decimals: u8) -> Result<U256, InputError> {
    let d = parse_exact(s.trim())
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

/// `text` as a decimal, plain or scientific ("1.5e3"), refused rather than rounded when it
/// has more digits than a `Decimal` holds: `Decimal::from_str` and `from_scientific` round
/// such a mantissa silently (found by the `amount` fuzz target).
fn parse_exact(text: &str) -> Result<Decimal, rust_decimal::Error> {
    match text.split_once(['e', 'E']) {
        None => Decimal::from_str_exact(text),
        Some((mantissa, _)) => {
            Decimal::from_str_exact(mantissa)?;
            Decimal::from_scientific(text)
        }
    }
}

#[cfg(test)]
mod tests;
