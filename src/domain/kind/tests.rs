use super::*;

const USDT_TRON: &str = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";
const TXID: &str = "c8ad4b4ff2a8a9ea1c0f0e6fe6fd5c0ee4b4f8e0c9d27df2ea5ee56e1e1f4b0a";

#[test]
fn each_kind_reads_its_spellings_into_one_form() {
    let k = ChainKind::Tron;
    for s in [
        USDT_TRON,
        "41a614f803b6fd780986a42c78ec9c7f77e6ded13c",
        "0xa614f803b6fd780986a42c78ec9c7f77e6ded13c",
    ] {
        assert_eq!(k.address("to", s).unwrap().as_str(), USDT_TRON, "{s}");
        assert_eq!(
            k.asset(s).unwrap(),
            Asset::Token(k.address("to", s).unwrap())
        );
    }
    assert_eq!(k.tx_hash(&format!("0x{TXID}")).unwrap().as_str(), TXID);
    assert_eq!(k.asset("NATIVE").unwrap(), Asset::Native);
    let evm = ChainKind::Evm;
    let hex = "0xA614F803B6FD780986A42C78EC9C7F77E6DED13C";
    assert_eq!(evm.address("to", hex).unwrap().as_str(), hex.to_lowercase());
    assert!(evm.address("to", USDT_TRON).is_err());
    assert!(evm.tx_hash(TXID).is_err(), "an EVM hash needs its 0x");
    assert_eq!(
        k.address("to", "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6u")
            .unwrap_err()
            .field,
        "to"
    );
}

#[test]
fn ledger_values_are_read_in_the_form_they_are_in() {
    assert_eq!(ledger_address(USDT_TRON).unwrap().as_str(), USDT_TRON);
    assert_eq!(
        as_tron(&ledger_address(USDT_TRON).unwrap())
            .unwrap()
            .as_str(),
        USDT_TRON
    );
    let evm = "0xa614f803b6fd780986a42c78ec9c7f77e6ded13c";
    assert_eq!(ledger_address(evm).unwrap().as_str(), evm);
    assert!(as_tron(&ledger_address(evm).unwrap()).is_none());
    assert_eq!(ledger_tx_hash(TXID).unwrap().as_str(), TXID);
    let evm_hash = format!("0x{TXID}");
    assert_eq!(ledger_tx_hash(&evm_hash).unwrap().as_str(), evm_hash);
    assert_eq!(ledger_asset(USDT_TRON).unwrap().to_string(), USDT_TRON);
    assert_eq!(ledger_asset("native").unwrap(), Asset::Native);
    assert!(ledger_address("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6u").is_err());
    assert!(ledger_tx_hash("xyz").is_err());
}

#[test]
fn kinds_parse_by_name() {
    assert_eq!(ChainKind::parse("tron").unwrap(), ChainKind::Tron);
    assert_eq!(ChainKind::parse(" evm ").unwrap(), ChainKind::Evm);
    assert_eq!(
        ChainKind::parse("bitcoin").unwrap(),
        ChainKind::Bitcoin(BtcNetwork::Mainnet)
    );
    let e = ChainKind::parse("solana").unwrap_err();
    assert!(
        e.reason.contains("not \"solana\"") && e.reason.contains("\"bitcoin\""),
        "{e}"
    );
    assert_eq!(ChainKind::default().as_str(), "evm");
}
