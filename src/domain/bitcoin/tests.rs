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
    assert!(looks_like_address(P2WPKH) && looks_like_address(P2PKH) && looks_like_address(TESTNET));
    assert!(
        !looks_like_address("0xabc") && !looks_like_address("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t")
    );
    assert_eq!(parse_address_any(TESTNET).unwrap(), TESTNET);
    assert_eq!(parse_address_any(P2SH).unwrap(), P2SH);
    assert!(parse_address_any("1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN3").is_err());
}
