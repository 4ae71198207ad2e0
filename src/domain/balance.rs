//! The balance check's arithmetic and verdicts (docs/operations.md, "Balances"), pure: a signed
//! amount (`Delta`), what one transfer in or out of a deposit address is (`classify`: an
//! inflow, a sweep to a treasury, or an outflow elsewhere), and what an address's check
//! concludes (`settle`).
//!
//! The check is incremental: from where the last check of an address ended (`expected` and
//! `checked_block`), it adds what the chain shows in and out since, and compares with the
//! balance at the final block. The difference carried forward is what nothing has explained
//! yet, so a mismatch stays visible at every check until a person settles it.

use std::fmt;

use super::model::{Asset, BlockRef, PaymentKey, U256};

/// A signed amount in base units: a balance difference may be negative (money gone).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Delta {
    /// True for an amount below zero (never for zero).
    pub negative: bool,
    /// The amount's magnitude.
    pub abs: U256,
}

impl Delta {
    /// `a − b`.
    pub fn between(a: U256, b: U256) -> Delta {
        if a >= b {
            Delta::positive(a - b)
        } else {
            Delta {
                negative: true,
                abs: b - a,
            }
        }
    }

    /// A positive (or zero) amount.
    pub fn positive(abs: U256) -> Delta {
        Delta {
            negative: false,
            abs,
        }
    }

    /// True when zero.
    pub fn is_zero(self) -> bool {
        self.abs.is_zero()
    }

    /// `self + other`; `None` beyond 256 bits.
    pub fn checked_add(self, other: Delta) -> Option<Delta> {
        Some(match (self.negative, other.negative) {
            (false, false) => Delta::positive(self.abs.checked_add(other.abs)?),
            (true, true) => Delta {
                negative: true,
                abs: self.abs.checked_add(other.abs)?,
            },
            (false, true) => Delta::between(self.abs, other.abs),
            (true, false) => Delta::between(other.abs, self.abs),
        })
    }

    /// Reads `123`, `-123` (base units); `None` for anything else.
    pub fn parse(s: &str) -> Option<Delta> {
        let (negative, digits) = match s.trim().strip_prefix('-') {
            Some(d) => (true, d),
            None => (false, s.trim()),
        };
        let abs = super::model::parse_base_units(digits).ok()?;
        Some(Delta {
            negative: negative && !abs.is_zero(),
            abs,
        })
    }
}

impl fmt::Display for Delta {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.negative {
            write!(f, "-{}", self.abs)
        } else {
            write!(f, "{}", self.abs)
        }
    }
}

/// A transfer read on chain into or out of a deposit address: a token's `Transfer` log, or a
/// native coin's top-level transaction (`log_index` −1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Flow {
    pub key: PaymentKey,
    /// Sender and recipient, in the ledger's spelling.
    pub from: String,
    pub to: String,
    pub asset: Asset,
    pub amount: U256,
    /// What the sender paid the network for it (native coins; zero for tokens).
    pub fee: U256,
    pub block: BlockRef,
}

/// What a transfer touching a deposit address is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowKind {
    /// Money in: a payment, to go through the amounts' rules like any payment found on chain.
    Inflow,
    /// Money out to one of the chain's treasury addresses: expected, recorded.
    Sweep,
    /// Money out elsewhere: the exception `unexpected_outflow` (a drained deposit key).
    Outflow,
}

/// What a transfer from `from` to `to` is for deposit address `address`, given the chain's
/// treasury addresses (all in the ledger's spelling); `None` when it does not touch
/// `address` or moves money from the address to itself.
pub fn classify(address: &str, from: &str, to: &str, treasury: &[String]) -> Option<FlowKind> {
    match (from == address, to == address) {
        (true, true) | (false, false) => None,
        (false, true) => Some(FlowKind::Inflow),
        (true, false) if treasury.iter().any(|t| t == to) => Some(FlowKind::Sweep),
        (true, false) => Some(FlowKind::Outflow),
    }
}

/// Where an address's last check ended, or its opening for a first check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    /// What the ledger and the flows read so far say the address holds.
    pub expected: Delta,
}

/// What one check of an address concludes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// The previous `expected`, plus the inflows, minus the outflows (sweeps included).
    pub expected: Delta,
    /// `balance − expected`: what nothing explains (zero when the ledger and chain agree).
    pub difference: Delta,
}

/// The verdict of a check: `balance` at the final block against `from.expected` plus `inflows`
/// minus `outflows` (every transfer out, sweeps and the rest, and fees). `None` when a sum
/// does not fit 256 bits (an amount no chain holds: the check fails rather than guesses).
pub fn settle(from: Checkpoint, inflows: U256, outflows: U256, balance: U256) -> Option<Verdict> {
    let expected = from
        .expected
        .checked_add(Delta::positive(inflows))?
        .checked_add(Delta {
            negative: !outflows.is_zero(),
            abs: outflows,
        })?;
    let difference = Delta::positive(balance).checked_add(Delta {
        negative: !expected.negative && !expected.is_zero(),
        abs: expected.abs,
    })?;
    Some(Verdict {
        expected,
        difference,
    })
}

#[cfg(test)]
mod tests;
