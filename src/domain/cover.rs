//! The cover rule (docs/configuration.md, "Amounts"): money decides "paid". An order has
//! *reached* a state when the payments credited to it whose state is that state or later sum to
//! at least `amount_due − tolerance`; its state is the highest state it has reached. Short of
//! that it stays `unpaid`, whatever has been paid. No IO.

use std::fmt;

use super::model::{InputError, State, U256};

/// How far short of `amount_due` an order may be paid and still count as paid: base units,
/// or a share of `amount_due` in hundredths of a percent (`"0.5%"` is 50), at most 10 %.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Tolerance {
    #[default]
    None,
    Units(U256),
    /// Hundredths of a percent of `amount_due` (basis points), `1..=1000`.
    Share(u16),
}

/// The largest share a tolerance may be: 10 % (in hundredths of a percent).
const MAX_SHARE: u16 = 1_000;

impl Tolerance {
    /// `"0"`, base units (`"10000"`), or a share of `amount_due` with at most two decimals
    /// and at most 10 % (`"0.5%"`, `"10%"`). Anything else is refused with the reason.
    pub fn parse(s: &str) -> Result<Tolerance, InputError> {
        let field = "underpaid_tolerance";
        let bad = |why: &str| {
            InputError::new(
                field,
                format!(
                    "{s:?} {why}: expected base units (\"10000\") or a share of the amount due \
                     with at most two decimals, at most 10% (\"0.5%\")"
                ),
            )
        };
        if let Some(pct) = s.strip_suffix('%') {
            let (whole, frac) = pct.split_once('.').unwrap_or((pct, ""));
            let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
            if !digits(whole) || (pct.contains('.') && !digits(frac)) {
                return Err(bad("is not a percentage"));
            }
            if frac.len() > 2 {
                return Err(bad("has more than two decimals"));
            }
            let whole: u32 = whole.parse().map_err(|_| bad("is more than 10%"))?;
            let frac: u32 = format!("{frac:0<2}").parse().unwrap_or(0);
            let share = whole
                .checked_mul(100)
                .and_then(|w| w.checked_add(frac))
                .filter(|&v| v <= u32::from(MAX_SHARE))
                .ok_or_else(|| bad("is more than 10%"))?;
            return Ok(match share {
                0 => Tolerance::None,
                n => Tolerance::Share(n as u16),
            });
        }
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad("is not a whole number of base units"));
        }
        let units = super::model::parse_base_units(s).map_err(|_| bad("does not fit 256 bits"))?;
        Ok(if units.is_zero() {
            Tolerance::None
        } else {
            Tolerance::Units(units)
        })
    }

    /// The tolerance in base units for an order of `amount_due` (a share rounds down, so
    /// that the tolerance never exceeds the configured share). Never more than `amount_due`.
    pub fn of(self, amount_due: U256) -> U256 {
        let t = match self {
            Tolerance::None => U256::ZERO,
            Tolerance::Units(u) => u,
            Tolerance::Share(bp) => {
                // amount_due × bp / 10,000 without overflowing 256 bits.
                let (q, r) = (
                    amount_due / U256::from(10_000u32),
                    amount_due % U256::from(10_000u32),
                );
                q * U256::from(bp) + r * U256::from(bp) / U256::from(10_000u32)
            }
        };
        t.min(amount_due)
    }

    /// What must be paid for the order to count as paid: `amount_due − tolerance`.
    pub fn due(self, amount_due: U256) -> U256 {
        amount_due - self.of(amount_due)
    }
}

impl fmt::Display for Tolerance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tolerance::None => f.write_str("0"),
            Tolerance::Units(u) => write!(f, "{u}"),
            Tolerance::Share(bp) => write!(f, "{}.{:02}%", bp / 100, bp % 100),
        }
    }
}

/// One payment credited to an order, as the cover rule sees it: its amount, its state, and
/// its place on the chain (block number, then log index or output index).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Credit {
    pub amount: U256,
    pub state: State,
    pub block: u64,
    pub index: i64,
}

/// What an order's payments add up to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cover {
    /// The highest state the order has reached (`Unpaid` while short of `due`).
    pub state: State,
    /// The sum of every credited payment (`orders.amount_paid`).
    pub paid: U256,
    /// `amount_due − tolerance`.
    pub due: U256,
    /// The payment (an index into the credits) at which the payments, taken in chain order,
    /// first cover `due`: the one whose key the order names. `None` while short.
    pub completing: Option<usize>,
}

impl Cover {
    /// How much is missing to `amount_due` (zero once paid in full).
    pub fn shortfall(&self, amount_due: U256) -> U256 {
        amount_due.saturating_sub(self.paid)
    }
    /// How much more than `amount_due` was paid.
    pub fn excess(&self, amount_due: U256) -> U256 {
        self.paid.saturating_sub(amount_due)
    }
}

/// The payments of one order add up to more than 256 bits: a finding, never a wrap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the payments credited to this order add up to more than 2^256 - 1 base units")]
pub struct SumOverflow;

/// Applies the cover rule to an order of `amount_due` and its credited payments.
pub fn cover(
    amount_due: U256,
    tolerance: Tolerance,
    credits: &[Credit],
) -> Result<Cover, SumOverflow> {
    let due = tolerance.due(amount_due);
    let paid = sum(credits.iter().map(|c| c.amount))?;
    let mut state = State::Unpaid;
    for s in [State::Pending, State::Confirmed, State::Final] {
        let of_s: Vec<U256> = credits
            .iter()
            .filter(|c| c.state >= s)
            .map(|c| c.amount)
            .collect();
        // An order is paid by a payment, never by nothing (an order due 0 needs one).
        if !of_s.is_empty() && sum(of_s.into_iter())? >= due {
            state = s;
        }
    }
    let completing = if state == State::Unpaid {
        None
    } else {
        let mut order: Vec<usize> = (0..credits.len()).collect();
        order.sort_by_key(|&i| (credits[i].block, credits[i].index, i));
        let mut run = U256::ZERO;
        order.into_iter().find(|&i| {
            run += credits[i].amount; // no overflow: bounded by `paid`
            run >= due
        })
    };
    Ok(Cover {
        state,
        paid,
        due,
        completing,
    })
}

fn sum(mut amounts: impl Iterator<Item = U256>) -> Result<U256, SumOverflow> {
    amounts.try_fold(U256::ZERO, |acc, a| acc.checked_add(a).ok_or(SumOverflow))
}

#[cfg(test)]
mod tests;
