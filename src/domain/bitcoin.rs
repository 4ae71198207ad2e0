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
    let l = s.trim().to_ascii_lowercase();
    ["bc1", "tb1", "bcrt1"].iter().any(|p| l.starts_with(p))
        || matches!(s.trim().chars().next(), Some('1' | '3' | 'm' | 'n' | '2'))
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
mod tests {
    use super::*;

    const P2WPKH: &str = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq";
    const P2TR: &str = "bc1p5d7rjq7g6rdk2yhzks9smlaqtedr4dekq08ge8ztwac72sfr9rusxg3297";
    const P2PKH: &str = "1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2";
    const P2SH: &str = "3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy";
    const TESTNET: &str = "tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx";

    #[test]
    fn the_four_mainnet_kinds_are_kept_as_given_bech32_lowercased() {
        let m = BtcNetwork::Mainnet;
        for a in [P2WPKH, P2TR, P2PKH, P2SH] {
            assert_eq!(parse_address("to", a, m).unwrap(), a, "{a}");
        }
        assert_eq!(
            parse_address("to", &P2WPKH.to_uppercase(), m).unwrap(),
            P2WPKH
        );
        assert_eq!(
            parse_address("to", TESTNET, BtcNetwork::Testnet).unwrap(),
            TESTNET
        );
    }

    #[test]
    fn checksums_and_networks_are_verified() {
        let m = BtcNetwork::Mainnet;
        let bad_bech = format!("{}5", &P2WPKH[..P2WPKH.len() - 1]);
        assert!(parse_address("to", &bad_bech, m)
            .unwrap_err()
            .reason
            .contains("bech32"));
        let bad_b58 = format!("{}3", &P2PKH[..P2PKH.len() - 1]);
        assert!(parse_address("to", &bad_b58, m)
            .unwrap_err()
            .reason
            .contains("base58check"));
        let e = parse_address("to", TESTNET, m).unwrap_err();
        assert!(e.reason.contains("chain is mainnet"), "{e}");
        let e = parse_address("to", P2PKH, BtcNetwork::Testnet).unwrap_err();
        assert!(e.reason.contains("not a testnet"), "{e}");
        // A taproot program checksummed with bech32 (not bech32m) is refused.
        let v1_bech32 = "bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqh2y7hd";
        assert!(parse_address("to", v1_bech32, m).is_err());
        for junk in [
            "",
            "0x70997970c51812dc3a010c7d01b50e0d17dc79c8",
            "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t",
            "é",
        ] {
            assert!(parse_address("to", junk, m).is_err(), "{junk:?}");
        }
    }

    #[test]
    fn ledger_values_of_any_network_are_read() {
        assert!(
            looks_like_address(P2WPKH) && looks_like_address(P2PKH) && looks_like_address(TESTNET)
        );
        assert!(
            !looks_like_address("0xabc")
                && !looks_like_address("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t")
        );
        assert_eq!(parse_address_any(TESTNET).unwrap(), TESTNET);
        assert_eq!(parse_address_any(P2SH).unwrap(), P2SH);
        assert!(parse_address_any("1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN3").is_err());
    }
}
