//! Bitcoin's identifiers (docs/configuration.md, "Bitcoin"): addresses validated with their
//! checksums — bech32 (segwit v0) and bech32m (v1+, taproot) through the `bech32` crate,
//! base58check P2PKH and P2SH — against the configured network's prefixes; kept as given
//! (bech32 lower-cased, base58 case-sensitive). Transaction ids are 64 lowercase hex digits
//! without `0x`.

use super::model::InputError;

/// `[chains.<name>] network` of a Bitcoin chain: which prefixes its addresses carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum BtcNetwork {
    #[default]
    Mainnet,
    /// Testnet and signet share prefixes (`tb1`, `m`/`n`, `2`).
    Testnet,
    Regtest,
}

impl BtcNetwork {
    pub fn parse(s: &str) -> Result<BtcNetwork, InputError> {
        match s.trim() {
            "mainnet" => Ok(BtcNetwork::Mainnet),
            "testnet" | "signet" => Ok(BtcNetwork::Testnet),
            "regtest" => Ok(BtcNetwork::Regtest),
            other => Err(InputError::new(
                "network",
                format!(
                    "must be \"mainnet\", \"testnet\", \"signet\" or \"regtest\", not {other:?}"
                ),
            )),
        }
    }

    fn hrp(self) -> &'static str {
        match self {
            BtcNetwork::Mainnet => "bc",
            BtcNetwork::Testnet => "tb",
            BtcNetwork::Regtest => "bcrt",
        }
    }

    /// Base58 version bytes: P2PKH, P2SH.
    fn versions(self) -> [u8; 2] {
        match self {
            BtcNetwork::Mainnet => [0x00, 0x05],
            BtcNetwork::Testnet | BtcNetwork::Regtest => [0x6f, 0xc4],
        }
    }

    fn name(self) -> &'static str {
        match self {
            BtcNetwork::Mainnet => "mainnet",
            BtcNetwork::Testnet => "testnet",
            BtcNetwork::Regtest => "regtest",
        }
    }
}

/// A Bitcoin address of `network` in its kept form (bech32 lower-cased, base58 as given).
pub fn parse_address(
    field: &'static str,
    s: &str,
    network: BtcNetwork,
) -> Result<String, InputError> {
    let s = s.trim();
    let lower = s.to_ascii_lowercase();
    let segwit = ["bc1", "tb1", "bcrt1"].iter().any(|p| lower.starts_with(p));
    if segwit {
        let (hrp, _version, _program) = bech32::segwit::decode(s).map_err(|e| {
            InputError::new(field, format!("not a valid bech32/bech32m address: {e}"))
        })?;
        if hrp.to_lowercase() != network.hrp() {
            return Err(InputError::new(
                field,
                format!(
                    "a {} address ({}1…), but the chain is {} ({}1…)",
                    hrp.to_lowercase(),
                    hrp.to_lowercase(),
                    network.name(),
                    network.hrp()
                ),
            ));
        }
        return Ok(lower);
    }
    let bytes = bs58::decode(s).with_check(None).into_vec().map_err(|e| {
        InputError::new(
            field,
            format!("not a Bitcoin address (bech32 bc1…/tb1…, or base58check): {e}"),
        )
    })?;
    match bytes.split_first() {
        Some((v, rest)) if network.versions().contains(v) && rest.len() == 20 => Ok(s.to_string()),
        Some((v, rest)) if rest.len() == 20 => Err(InputError::new(
            field,
            format!(
                "version byte 0x{v:02x} is not a {} P2PKH or P2SH address",
                network.name()
            ),
        )),
        _ => Err(InputError::new(
            field,
            "a base58 address holds 20 bytes after its version",
        )),
    }
}

/// Whether `s` is spelled as a Bitcoin address (a ledger value; validated by
/// `parse_address_any`).
pub(super) fn looks_like_address(s: &str) -> bool {
    looks_like_bech32(s) || matches!(s.trim().chars().next(), Some('1' | '3' | 'm' | 'n' | '2'))
}

/// Whether `s` starts as a bech32 address does (`bc1`, `tb1`, `bcrt1`, any case).
pub(super) fn looks_like_bech32(s: &str) -> bool {
    let l = s.trim().to_ascii_lowercase();
    ["bc1", "tb1", "bcrt1"].iter().any(|p| l.starts_with(p))
}

/// A ledger value: an address of any network (the store does not know the chain's).
pub(super) fn parse_address_any(s: &str) -> Result<String, InputError> {
    let nets = [
        BtcNetwork::Mainnet,
        BtcNetwork::Testnet,
        BtcNetwork::Regtest,
    ];
    let mut first = None;
    for n in nets {
        match parse_address("pay_to", s, n) {
            Ok(a) => return Ok(a),
            Err(e) => {
                first.get_or_insert(e);
            }
        }
    }
    Err(first.unwrap_or_else(|| InputError::new("pay_to", "not a Bitcoin address")))
}

#[cfg(test)]
mod tests;
