//! The vocabulary of payrecon: states, gap kinds, payment keys, addresses, hashes, assets.
//! Parsing here is strict and total: malformed input is an `InputError`, never a panic.

use std::fmt;

use serde::{Deserialize, Serialize};

/// An unsigned amount in an asset's base units.
pub type U256 = ruint::aliases::U256;

/// Why a value from outside (provider, chain, ledger, config) was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct InputError {
    pub field: &'static str,
    pub reason: String,
}

impl InputError {
    pub fn new(field: &'static str, reason: impl Into<String>) -> Self {
        InputError {
            field,
            reason: reason.into(),
        }
    }
}

/// Payment state of an order. The derived order is the rank: a state never moves backwards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    Unpaid,
    Pending,
    Confirmed,
    Final,
}

impl State {
    pub const ALL: [State; 4] = [
        State::Unpaid,
        State::Pending,
        State::Confirmed,
        State::Final,
    ];

    pub fn rank(self) -> i64 {
        self as i64
    }

    pub fn as_str(self) -> &'static str {
        match self {
            State::Unpaid => "unpaid",
            State::Pending => "pending",
            State::Confirmed => "confirmed",
            State::Final => "final",
        }
    }

    pub fn parse(s: &str) -> Result<State, InputError> {
        State::ALL
            .into_iter()
            .find(|st| st.as_str() == s)
            .ok_or_else(|| InputError::new("state", format!("unknown state {s:?}")))
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The fixed vocabulary of gaps (docs/reference.md §8), used in reports, findings and metric
/// labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GapKind {
    Missing,
    Lagging,
    FailedNotification,
    AmountMismatch,
    UnknownPayment,
    Reorged,
    /// A payment in a block after its order's `expires_at` (docs/configuration.md, "Amounts").
    LatePayment,
    /// Money that left a deposit address for somewhere other than a treasury (the balance
    /// check: docs/operations.md, "Balances").
    UnexpectedOutflow,
    /// A deposit address's balance that the ledger and the flows read do not explain.
    BalanceMismatch,
}

impl GapKind {
    pub const ALL: [GapKind; 9] = [
        GapKind::Missing,
        GapKind::Lagging,
        GapKind::FailedNotification,
        GapKind::AmountMismatch,
        GapKind::UnknownPayment,
        GapKind::Reorged,
        GapKind::LatePayment,
        GapKind::UnexpectedOutflow,
        GapKind::BalanceMismatch,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            GapKind::Missing => "missing",
            GapKind::Lagging => "lagging",
            GapKind::FailedNotification => "failed_notification",
            GapKind::AmountMismatch => "amount_mismatch",
            GapKind::UnknownPayment => "unknown_payment",
            GapKind::Reorged => "reorged",
            GapKind::LatePayment => "late_payment",
            GapKind::UnexpectedOutflow => "unexpected_outflow",
            GapKind::BalanceMismatch => "balance_mismatch",
        }
    }
}

/// A transaction hash: lowercase `0x` + 64 hex digits.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TxHash(String);

impl TxHash {
    /// An EVM transaction hash (`0x` + 64 hex digits, any case). Other kinds' ids are read by
    /// `ChainKind::tx_hash`.
    pub fn parse(s: &str) -> Result<TxHash, InputError> {
        parse_hex("tx_hash", s, 32).map(TxHash)
    }
    /// A value already in a kind's canonical form (see `kind.rs`).
    pub(super) fn from_canonical(s: String) -> TxHash {
        TxHash(s)
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TxHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// An EVM address, stored lowercase `0x` + 40 hex digits (checksum case accepted on input).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Address(String);

impl Address {
    /// An EVM address (`0x` + 40 hex digits, checksum case accepted). Other kinds' addresses
    /// are read by `ChainKind::address`.
    pub fn parse(s: &str) -> Result<Address, InputError> {
        parse_hex("address", s, 20).map(Address)
    }
    /// A value already in a kind's canonical form (see `kind.rs`).
    pub(super) fn from_canonical(s: String) -> Address {
        Address(s)
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn parse_hex(field: &'static str, s: &str, bytes: usize) -> Result<String, InputError> {
    let s = s.trim();
    let digits = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .ok_or_else(|| InputError::new(field, "must start with 0x"))?;
    if digits.len() != bytes * 2 {
        return Err(InputError::new(
            field,
            format!("must have {} hex digits, has {}", bytes * 2, digits.len()),
        ));
    }
    if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(InputError::new(
            field,
            "contains a character that is not hex",
        ));
    }
    Ok(format!("0x{}", digits.to_ascii_lowercase()))
}

/// What was paid: the chain's native coin or an ERC-20 token contract.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Asset {
    Native,
    Token(Address),
}

impl Asset {
    /// `native` or a token contract address; anything else is an error.
    pub fn parse(s: &str) -> Result<Asset, InputError> {
        if s.trim().eq_ignore_ascii_case("native") {
            Ok(Asset::Native)
        } else {
            Address::parse(s)
                .map(Asset::Token)
                .map_err(|e| InputError::new("asset", e.reason))
        }
    }
    /// The ledger's spelling: `native` or the lowercase contract address.
    pub fn as_str(&self) -> &str {
        match self {
            Asset::Native => "native",
            Asset::Token(a) => a.as_str(),
        }
    }
}

impl fmt::Display for Asset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `(chain, tx_hash, log_index)`: block-level log index for tokens, -1 for native coins.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PaymentKey {
    pub chain: String,
    pub tx_hash: TxHash,
    pub log_index: i64,
}

/// Where a block sits: number and hash.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BlockRef {
    pub number: u64,
    pub hash: String,
}

/// Parses an amount in base units: 1 to 78 decimal digits, nothing else, must fit U256.
pub fn parse_base_units(s: &str) -> Result<U256, InputError> {
    let s = s.trim();
    if s.is_empty() || s.len() > 78 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(InputError::new(
            "amount",
            format!("not an amount in base units: {s:?}"),
        ));
    }
    U256::from_str_radix(s, 10).map_err(|_| InputError::new("amount", "does not fit 256 bits"))
}

/// The chain's view at one moment: head and the last block counted as final.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChainHead {
    pub number: u64,
    /// Highest block that is final (finalized/safe tag, or head - final_depth + 1).
    pub final_block: u64,
    /// `chains.<name>.confirmations`.
    pub confirmations: u64,
}

impl ChainHead {
    /// docs/reference.md §8: pending below the threshold, confirmed at `confirmations` (head -
    /// block + 1), final at or below the final block. A block above the head counts as pending.
    pub fn state_of(&self, block: u64) -> State {
        if block <= self.final_block {
            return State::Final;
        }
        let confs = (self.number + 1).saturating_sub(block);
        if confs >= self.confirmations.max(1) {
            State::Confirmed
        } else {
            State::Pending
        }
    }
}

#[cfg(test)]
mod tests;
