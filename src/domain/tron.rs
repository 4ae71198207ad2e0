//! Tron's identifiers (docs/configuration.md, "Tron"): addresses in base58check (`T…`, the
//! version byte `0x41` before 20 bytes, a 4-byte double-SHA-256 checksum), accepted also as
//! `41…` (21-byte hex) or `0x…` (20-byte hex, as JSON-RPC logs show them) and always written
//! back in base58; and transaction ids as 64 lowercase hex digits without `0x`. Strict and
//! total: malformed input is an `InputError`, never a panic.

use std::fmt;

use super::model::InputError;

/// The version byte of a Tron address (mainnet and testnets alike).
const VERSION: u8 = 0x41;

/// A Tron address. Its canonical form is base58check (`T…`, case-sensitive).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TronAddress {
    /// The 20 bytes after the version byte.
    bytes: [u8; 20],
    /// The base58check spelling of `0x41 ‖ bytes`.
    base58: String,
}

impl TronAddress {
    /// Any of the three spellings; `field` names what is being read in an error.
    pub fn parse(field: &'static str, s: &str) -> Result<TronAddress, InputError> {
        let s = s.trim();
        let bytes = if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
            decode_hex(field, hex, 20)?
        } else if s.len() == 42 && s.is_char_boundary(2) && s[..2].eq_ignore_ascii_case("41") {
            decode_hex(field, &s[2..], 20)?
        } else {
            decode_base58(field, s)?
        };
        let mut twenty = [0u8; 20];
        twenty.copy_from_slice(&bytes);
        Ok(TronAddress::from_bytes(twenty))
    }

    /// The address of these 20 bytes.
    pub fn from_bytes(bytes: [u8; 20]) -> TronAddress {
        let mut versioned = Vec::with_capacity(21);
        versioned.push(VERSION);
        versioned.extend_from_slice(&bytes);
        let base58 = bs58::encode(versioned).with_check().into_string();
        TronAddress { bytes, base58 }
    }

    /// `T…`: the form payrecon stores, reports and sends.
    pub fn as_str(&self) -> &str {
        &self.base58
    }

    /// `0x` + 40 lowercase hex digits: the form of a JSON-RPC log topic or `eth_getLogs`
    /// filter on java-tron.
    pub fn evm_hex(&self) -> String {
        format!("0x{}", hex::encode(self.bytes))
    }

    /// `41` + 40 lowercase hex digits: the form of java-tron's HTTP API.
    pub fn tron_hex(&self) -> String {
        format!("41{}", hex::encode(self.bytes))
    }
}

impl fmt::Display for TronAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.base58)
    }
}

fn decode_hex(field: &'static str, hex: &str, bytes: usize) -> Result<Vec<u8>, InputError> {
    if hex.len() != bytes * 2 {
        return Err(InputError::new(
            field,
            format!("must have {} hex digits, has {}", bytes * 2, hex.len()),
        ));
    }
    hex::decode(hex).map_err(|_| InputError::new(field, "contains a character that is not hex"))
}

fn decode_base58(field: &'static str, s: &str) -> Result<Vec<u8>, InputError> {
    let decoded = bs58::decode(s).with_check(None).into_vec().map_err(|e| {
        let why = match e {
            bs58::decode::Error::InvalidChecksum { .. } => "its checksum is wrong".to_string(),
            bs58::decode::Error::InvalidCharacter { character, .. } => {
                format!("{character:?} is not a base58 character")
            }
            other => other.to_string(),
        };
        InputError::new(
            field,
            format!(
                "not a valid base58check address ({why}); a Tron address is T… (base58check), \
                 41… (21-byte hex) or 0x… (20-byte hex)"
            ),
        )
    })?;
    match decoded.split_first() {
        Some((&VERSION, rest)) if rest.len() == 20 => Ok(rest.to_vec()),
        Some((&VERSION, rest)) => Err(InputError::new(
            field,
            format!("a Tron address holds 20 bytes, this one {}", rest.len()),
        )),
        _ => Err(InputError::new(
            field,
            "not a Tron address (its version byte is not 0x41)",
        )),
    }
}

/// A Tron transaction id: 64 lowercase hex digits without `0x` (a `0x…` spelling is accepted
/// and normalised).
pub fn parse_txid(s: &str) -> Result<String, InputError> {
    let s = s.trim();
    let hex = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    decode_hex("txid", hex, 32).map(|_| hex.to_ascii_lowercase())
}

#[cfg(test)]
mod tests;
