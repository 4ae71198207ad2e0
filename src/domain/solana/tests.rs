use super::*;

/// USDC's mint on mainnet, and the System Program (32 zero bytes).
const USDC: &str = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";
const SYSTEM: &str = "11111111111111111111111111111111";

#[test]
fn keys_are_base58_of_32_bytes_and_round_trip() {
    let usdc = SolanaKey::parse("asset", USDC).unwrap();
    assert_eq!(usdc.as_str(), USDC);
    assert_eq!(SolanaKey::from_bytes(*usdc.bytes()), usdc);
    assert_eq!(
        SolanaKey::parse("pay_to", SYSTEM).unwrap().bytes(),
        &[0u8; 32]
    );
    assert_eq!(
        SolanaKey::parse("pay_to", &format!(" {USDC}\n"))
            .unwrap()
            .as_str(),
        USDC
    );
}

#[test]
fn malformed_keys_are_refused_by_field_never_a_panic() {
    for (input, says) in [
        ("", "holds 0"),
        ("0OIl", "is not a base58 character"),
        (
            "0x52908400098527886e0f7030069857d2e4169ee7",
            "is not a base58 character",
        ),
        ("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", "holds 25"),
        (&USDC[..40], "holds"),
        (&format!("{USDC}{USDC}"), "holds"),
        (
            "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1vé",
            "base58 of 32 bytes",
        ),
    ] {
        let e = SolanaKey::parse("reference", input).unwrap_err();
        assert_eq!(e.field, "reference", "{input:?}");
        assert!(e.reason.contains(says), "{input:?}: {}", e.reason);
    }
}

#[test]
fn signatures_are_base58_of_64_bytes_kept_as_written() {
    let sig = bs58::encode([7u8; 64]).into_string();
    assert_eq!(parse_solana_signature(&format!(" {sig} ")).unwrap(), sig);
    // Case matters in base58: another spelling is another signature or none.
    let other = sig.to_lowercase();
    assert!(parse_solana_signature(&other).map_or(true, |s| s != sig));
    let e = parse_solana_signature(USDC).unwrap_err();
    assert_eq!(e.field, "tx_hash");
    assert!(e.reason.contains("64 bytes"), "{}", e.reason);
    assert!(parse_solana_signature(&format!("0x{}", "ab".repeat(64))).is_err());
}

#[test]
fn instruction_indexes_follow_the_spec_and_invert() {
    // docs/configuration.md, "Solana": a top-level transfer at instruction 2 is 131072.
    assert_eq!(instruction_index(2, None), 131_072);
    assert_eq!(instruction_index(0, None), 0);
    assert_eq!(instruction_index(0, Some(0)), 1);
    assert_eq!(instruction_index(3, Some(4)), 3 * 65_536 + 5);
    for (outer, inner) in [
        (0, None),
        (0, Some(0)),
        (2, None),
        (7, Some(65_534)),
        (u16::MAX, Some(3)),
    ] {
        let i = instruction_index(outer, inner);
        assert_eq!(instruction_of(i), Some((outer, inner)), "{i}");
    }
    assert_eq!(instruction_of(-1), None);
    assert_eq!(instruction_of(i64::MAX), None);
}
