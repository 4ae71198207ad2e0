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
    assert_eq!(ChainKind::parse("solana").unwrap(), ChainKind::Solana);
    let e = ChainKind::parse("sol").unwrap_err();
    assert!(
        e.reason.contains("not \"sol\"") && e.reason.contains("\"solana\""),
        "{e}"
    );
    assert_eq!(ChainKind::default().as_str(), "evm");
}

/// Solana's spellings (docs/configuration.md, "Solana"): base58 keys of 32 bytes kept as
/// written, signatures of 64, and a ledger value of either read as Solana's, never as a Bitcoin
/// or Tron value.
#[test]
fn solana_values_are_base58_and_recognised_in_the_ledger() {
    const USDC: &str = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";
    // A key that starts as a Bitcoin base58 address does, and one that starts with T.
    const WALLET: &str = "3YQcK46Mvbvit2QTSrPEiqLQewXY9eXhTk74w9ruNRZ5";
    const TOKEN: &str = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA";
    let sig = bs58::encode([7u8; 64]).into_string();
    let k = ChainKind::Solana;
    assert_eq!(k.address("pay_to", WALLET).unwrap().as_str(), WALLET);
    assert_eq!(k.asset(USDC).unwrap().to_string(), USDC);
    assert_eq!(k.asset("NATIVE").unwrap(), Asset::Native);
    assert_eq!(k.tx_hash(&sig).unwrap().as_str(), sig);
    assert!(k.owns_tx_hash(&k.tx_hash(&sig).unwrap()));
    assert!(!k.owns_tx_hash(&ledger_tx_hash(TXID).unwrap()));
    assert!(!ChainKind::Tron.owns_tx_hash(&k.tx_hash(&sig).unwrap()));
    // An EVM hash is not Tron's or Bitcoin's (it was skipped before Solana came, and still is).
    let evm = ledger_tx_hash(&format!("0x{TXID}")).unwrap();
    assert!(!ChainKind::Tron.owns_tx_hash(&evm));
    assert!(!ChainKind::Bitcoin(BtcNetwork::Mainnet).owns_tx_hash(&evm));
    assert!(ChainKind::Evm.owns_tx_hash(&evm));
    assert_eq!(k.native_decimals(), 9);
    let e = k
        .address("pay_to", "0xa614f803b6fd780986a42c78ec9c7f77e6ded13c")
        .unwrap_err();
    assert_eq!(e.field, "pay_to");
    assert!(e.reason.contains("base58"), "{e}");
    assert_eq!(
        k.asset("EPjFWdd5AufqSSqeM2qN1xzyba").unwrap_err().field,
        "asset"
    );
    for v in [WALLET, TOKEN, USDC] {
        assert_eq!(ledger_address(v).unwrap().as_str(), v);
        assert_eq!(ledger_asset(v).unwrap().to_string(), v);
    }
    assert_eq!(ledger_tx_hash(&sig).unwrap().as_str(), sig);
    // Tron and Bitcoin values are still theirs.
    assert_eq!(ledger_address(USDT_TRON).unwrap().as_str(), USDT_TRON);
    let btc = "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa";
    assert_eq!(ledger_address(btc).unwrap().as_str(), btc);
}
