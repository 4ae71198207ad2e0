use super::*;

#[test]
fn hashes_and_addresses_are_normalised_or_refused() {
    let h = TxHash::parse(&format!("0x{}", "AB".repeat(32))).unwrap();
    assert_eq!(h.as_str(), format!("0x{}", "ab".repeat(32)));
    assert!(TxHash::parse(&format!("0x{}", "ab".repeat(31))).is_err());
    assert!(TxHash::parse(&"ab".repeat(32)).is_err());
    assert!(TxHash::parse(&format!("0x{}zz", "ab".repeat(31))).is_err());
    let a = Address::parse("0xdAC17F958D2ee523a2206206994597C13D831ec7").unwrap();
    assert_eq!(a.as_str(), "0xdac17f958d2ee523a2206206994597c13d831ec7");
    assert!(Address::parse("0x1234").is_err());
    assert_eq!(Asset::parse("NATIVE").unwrap(), Asset::Native);
    assert!(Asset::parse("usdt").is_err());
}

#[test]
fn states_are_ordered_by_rank() {
    assert!(State::Unpaid < State::Pending && State::Pending < State::Confirmed);
    assert!(State::Confirmed < State::Final);
    assert_eq!(State::parse("final").unwrap(), State::Final);
    assert!(State::parse("paid").is_err());
}

#[test]
fn base_units_parse_up_to_u256() {
    assert_eq!(
        parse_base_units("25000000").unwrap(),
        U256::from(25_000_000u64)
    );
    let max = U256::MAX.to_string();
    assert_eq!(parse_base_units(&max).unwrap(), U256::MAX);
    assert!(parse_base_units(&format!("{max}0")).is_err());
    assert!(parse_base_units(&"9".repeat(78)).is_err());
    assert!(parse_base_units(&"9".repeat(77)).is_ok());
    assert!(parse_base_units("-1").is_err());
    assert!(parse_base_units("1.5").is_err());
    assert!(parse_base_units("").is_err());
}

mod head {
    use super::*;

    #[test]
    fn state_follows_confirmations_and_finality() {
        let h = ChainHead {
            number: 100,
            final_block: 80,
            confirmations: 12,
        };
        assert_eq!(h.state_of(80), State::Final);
        assert_eq!(h.state_of(81), State::Confirmed);
        assert_eq!(h.state_of(89), State::Confirmed); // 100 - 89 + 1 = 12
        assert_eq!(h.state_of(90), State::Pending);
        assert_eq!(h.state_of(100), State::Pending);
        assert_eq!(h.state_of(101), State::Pending);
    }
}
