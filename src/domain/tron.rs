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
mod tests {
    use super::*;

    const USDT: &str = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";
    const USDT_HEX: &str = "41a614f803b6fd780986a42c78ec9c7f77e6ded13c";

    #[test]
    fn the_spec_vector_reads_in_every_form_and_writes_base58() {
        let evm = format!("0x{}", &USDT_HEX[2..]);
        for input in [
            USDT.to_string(),
            USDT_HEX.to_string(),
            USDT_HEX.to_uppercase(),
            evm.clone(),
            evm.to_uppercase().replacen("0X", "0x", 1),
            format!("  {USDT}\n"),
        ] {
            let a = TronAddress::parse("pay_to", &input).unwrap_or_else(|e| panic!("{input}: {e}"));
            assert_eq!(a.as_str(), USDT, "{input}");
            assert_eq!(a.tron_hex(), USDT_HEX);
            assert_eq!(a.evm_hex(), evm);
        }
    }

    #[test]
    fn a_wrong_checksum_is_refused_by_name() {
        // The last character changed: the checksum no longer matches.
        let bad = format!("{}u", &USDT[..USDT.len() - 1]);
        let e = TronAddress::parse("pay_to", &bad).unwrap_err();
        assert_eq!(e.field, "pay_to");
        assert!(e.reason.contains("checksum"), "{e}");
    }

    #[test]
    fn malformed_addresses_are_refused_never_a_panic() {
        for (input, why) in [
            ("", "a Tron address is T…"),
            ("tR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", "checksum"),
            (
                "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj0t",
                "not a base58 character",
            ),
            ("0xa614f803b6fd780986a42c78ec9c7f77e6ded1", "40 hex digits"),
            ("0xa614f803b6fd780986a42c78ec9c7f77e6ded1zz", "not hex"),
            ("41a614f803b6fd780986a42c78ec9c7f77e6ded1zz", "not hex"),
            ("T", "base58check"),
            ("é", "non-ascii"),
        ] {
            let e = TronAddress::parse("pay_to", input).unwrap_err();
            assert!(e.reason.contains(why), "{input:?}: {e}");
        }
        // Valid base58check of another version byte (Bitcoin's P2PKH, 0x00): not Tron.
        let btc = bs58::encode([0u8; 21]).with_check().into_string();
        let e = TronAddress::parse("pay_to", &format!("T{}", &btc[1..])).unwrap_err();
        assert!(e.reason.contains("base58check"), "{e}");
    }

    #[test]
    fn another_version_byte_or_length_is_not_a_tron_address() {
        let mut v = vec![0x42];
        v.extend([7u8; 20]);
        let other = bs58::encode(&v).with_check().into_string();
        assert!(
            other.starts_with('T'),
            "0x42 before 20 bytes spells T… too: {other}"
        );
        let e = TronAddress::parse("a", &other).unwrap_err();
        assert!(e.reason.contains("version byte"), "{e}");
        for len in [19, 21] {
            let mut short = vec![VERSION];
            short.extend(vec![7u8; len]);
            let short = bs58::encode(&short).with_check().into_string();
            let e = TronAddress::parse("a", &short).unwrap_err();
            assert!(e.reason.contains("holds 20 bytes"), "{short}: {e}");
        }
    }

    #[test]
    fn from_bytes_round_trips_through_base58() {
        for seed in [0u8, 1, 0x7f, 0xff] {
            let a = TronAddress::from_bytes([seed; 20]);
            assert!(a.as_str().starts_with('T'), "{a}");
            assert_eq!(TronAddress::parse("a", a.as_str()).unwrap(), a);
            assert_eq!(TronAddress::parse("a", &a.evm_hex()).unwrap(), a);
        }
    }

    #[test]
    fn txids_are_64_lowercase_hex_without_0x() {
        let id = "c8ad4b4ff2a8a9ea1c0f0e6fe6fd5c0ee4b4f8e0c9d27df2ea5ee56e1e1f4b0a";
        assert_eq!(parse_txid(id).unwrap(), id);
        assert_eq!(parse_txid(&format!("0x{}", id.to_uppercase())).unwrap(), id);
        assert!(parse_txid(&id[1..])
            .unwrap_err()
            .reason
            .contains("64 hex digits"));
        assert!(parse_txid(&format!("{}g", &id[1..])).is_err());
    }
}
