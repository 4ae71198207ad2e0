//! Solana's identifiers (docs/configuration.md, "Solana"): public keys (wallets, token
//! accounts, mints, Solana Pay references) are base58 of 32 bytes; a transaction is named by
//! its first signature, base58 of 64 bytes, kept exactly as Solana writes it (base58 is
//! case-sensitive, unlike hex); and a transfer's place in its transaction is `outer × 65536 +
//! inner + 1` (`inner` −1 for a top-level instruction), the payment key's `log_index`. Strict
//! and total: malformed input is an `InputError` naming its field, never a panic.

use std::fmt;

use super::model::InputError;

/// A Solana public key: a wallet, a token account, a mint or a reference.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SolanaKey {
    bytes: [u8; 32],
    base58: String,
}

impl SolanaKey {
    /// Base58 of exactly 32 bytes; `field` names what is being read in an error.
    pub fn parse(field: &'static str, s: &str) -> Result<SolanaKey, InputError> {
        let bytes = decode(field, s.trim(), 32, "a Solana address")?;
        let mut key = [0u8; 32];
        key.copy_from_slice(&bytes);
        Ok(SolanaKey::from_bytes(key))
    }

    pub fn from_bytes(bytes: [u8; 32]) -> SolanaKey {
        let base58 = bs58::encode(bytes).into_string();
        SolanaKey { bytes, base58 }
    }

    /// The base58 form payrecon stores, reports and sends.
    pub fn as_str(&self) -> &str {
        &self.base58
    }

    pub fn bytes(&self) -> &[u8; 32] {
        &self.bytes
    }
}

impl fmt::Display for SolanaKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.base58)
    }
}

/// A transaction signature: base58 of exactly 64 bytes, returned as given (trimmed).
pub fn parse_solana_signature(s: &str) -> Result<String, InputError> {
    let s = s.trim();
    decode("tx_hash", s, 64, "a Solana signature")?;
    Ok(s.to_string())
}

/// The payment key's `log_index` of a transfer at top-level instruction `outer`, and at
/// `inner` among that instruction's inner instructions (`None`: the top-level one itself).
pub fn instruction_index(outer: u16, inner: Option<u16>) -> i64 {
    let inner = inner.map_or(-1, i64::from);
    i64::from(outer) * 65_536 + inner + 1
}

/// The `(outer, inner)` of a `log_index` made by `instruction_index`; `None` for a value
/// no instruction has.
pub fn instruction_of(index: i64) -> Option<(u16, Option<u16>)> {
    if index < 0 {
        return None;
    }
    let outer = u16::try_from(index / 65_536).ok()?;
    let inner = match index % 65_536 {
        0 => None,
        n => Some(u16::try_from(n - 1).ok()?),
    };
    Some((outer, inner))
}

fn decode(field: &'static str, s: &str, len: usize, what: &str) -> Result<Vec<u8>, InputError> {
    let bytes = bs58::decode(s).into_vec().map_err(|e| {
        let why = match e {
            bs58::decode::Error::InvalidCharacter { character, .. } => {
                format!("{character:?} is not a base58 character")
            }
            other => other.to_string(),
        };
        InputError::new(field, format!("not {what} (base58 of {len} bytes): {why}"))
    })?;
    if bytes.len() != len {
        return Err(InputError::new(
            field,
            format!(
                "{what} is base58 of {len} bytes; this one holds {}",
                bytes.len()
            ),
        ));
    }
    Ok(bytes)
}

/// Where Solana's deposit scan left one account it lists (`payrecon_scan_cursors`): the
/// newest signature listed on it whose slot was finalized when read. Every transaction at or
/// before it has been resolved, and a finalized transaction never changes, so the next run
/// lists only what came after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanCursor {
    pub signature: String,
    pub slot: u64,
}

#[cfg(test)]
mod tests;
