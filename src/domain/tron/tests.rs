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
