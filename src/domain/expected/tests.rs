use super::*;
use crate::domain::BtcNetwork;

const USDT: &str = "0xdAC17F958D2ee523a2206206994597C13D831ec7";
const TRON_USDT: &str = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";

fn catalog() -> Catalog {
    Catalog::new([
        ("ethereum".to_string(), ChainKind::Evm),
        ("tron".to_string(), ChainKind::Tron),
        (
            "bitcoin".to_string(),
            ChainKind::Bitcoin(BtcNetwork::Mainnet),
        ),
    ])
    .with_asset_key(&format!("ethereum:{}", USDT.to_lowercase()))
    .with_asset_key(&format!("tron:{TRON_USDT}"))
}

fn input<'a>(pay_to: &'a str, asset: &'a str, amount: &'a str) -> OrderInput<'a> {
    OrderInput {
        order_ref: "A-1",
        chain: "ethereum",
        pay_to,
        asset,
        amount_due: amount,
        expires_at: None,
        reference: None,
    }
}

fn fields(r: Result<ExpectedOrder, Vec<FieldError>>) -> Vec<&'static str> {
    r.err()
        .unwrap_or_default()
        .iter()
        .map(|e| e.field)
        .collect()
}

#[test]
fn eip55_checksums_are_checked_only_in_mixed_case() {
    // The EIP-55 test vectors.
    for a in [
        "5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
        "fB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
        "dbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB",
        "D1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb",
    ] {
        assert!(checksum_ok(a), "{a}");
        let flipped = a.replacen('a', "A", 1);
        assert!(!checksum_ok(&flipped) || flipped == a, "{flipped}");
    }
    assert!(checksum_ok(&USDT[2..].to_lowercase()));
    assert!(checksum_ok(&USDT[2..].to_uppercase()));
    let c = catalog();
    let bad = "0xdAC17F958D2ee523a2206206994597C13D831eC7";
    assert_eq!(
        fields(expected_order(&input(bad, "native", "1"), &c)),
        ["pay_to"]
    );
    let ok = expected_order(&input(USDT, USDT, "25000000"), &c).unwrap();
    assert_eq!(ok.pay_to.as_str(), USDT.to_lowercase());
    assert_eq!(ok.asset, Asset::Token(Address::parse(USDT).unwrap()));
}

#[test]
fn every_bad_field_is_named() {
    let c = catalog();
    let i = OrderInput {
        order_ref: " x",
        chain: "ethereum",
        pay_to: "0x12",
        asset: "0x0000000000000000000000000000000000000001",
        amount_due: "1.5",
        expires_at: Some("tomorrow"),
        reference: None,
    };
    assert_eq!(
        fields(expected_order(&i, &c)),
        ["order_ref", "pay_to", "asset", "amount_due", "expires_at"]
    );
    let i = OrderInput {
        chain: "solana",
        ..input(USDT, "native", "0")
    };
    let e = expected_order(&i, &c).unwrap_err();
    assert_eq!(e.len(), 2);
    assert!(
        e[0].detail.contains("configured: bitcoin, ethereum, tron"),
        "{e:?}"
    );
    assert_eq!(e[1].detail, "must be at least 1");
    let over = format!("{}0", U256::MAX);
    assert_eq!(
        fields(expected_order(&input(USDT, "native", &over), &c)),
        ["amount_due"]
    );
    assert_eq!(
        fields(expected_order(&input(USDT, "native", " 5"), &c)),
        ["amount_due"]
    );
    let long = "x".repeat(129);
    let i = OrderInput {
        order_ref: &long,
        ..input(USDT, "native", "5")
    };
    assert_eq!(fields(expected_order(&i, &c)), ["order_ref"]);
}

#[test]
fn an_amount_over_the_databases_largest_is_a_field_error() {
    let nines = "9".repeat(65);
    let c = catalog().with_max_amount(Some(nines.parse().unwrap()));
    assert!(expected_order(&input(USDT, "native", &nines), &c).is_ok());
    let over = format!("1{}", "0".repeat(65));
    let e = expected_order(&input(USDT, "native", &over), &c).unwrap_err();
    assert_eq!(e[0].field, "amount_due");
    assert!(e[0].detail.contains("at most 65 digits"), "{}", e[0].detail);
    // Without a limit (SQLite, PostgreSQL) the same amount is an order.
    assert!(expected_order(&input(USDT, "native", &over), &catalog()).is_ok());
}

#[test]
fn each_chain_reads_its_own_addresses() {
    let c = catalog();
    let tron = |pay_to, asset| OrderInput {
        chain: "tron",
        ..input(pay_to, asset, "1")
    };
    let ok = expected_order(&tron("TLa2f6VPqDgRE67v1736s7bJ8Ray5wYjU7", TRON_USDT), &c).unwrap();
    assert_eq!(ok.asset.as_str(), TRON_USDT);
    let hex = "41a614f803b6fd780986a42c78ec9c7f77e6ded13c";
    assert_eq!(fields(expected_order(&tron(hex, "native"), &c)), ["pay_to"]);
    let broken = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6u";
    assert_eq!(
        fields(expected_order(&tron(broken, "native"), &c)),
        ["pay_to"]
    );
    let btc = |pay_to, asset| OrderInput {
        chain: "bitcoin",
        ..input(pay_to, asset, "1")
    };
    let segwit = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq";
    assert!(expected_order(&btc(segwit, "native"), &c).is_ok());
    let testnet = "tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx";
    assert_eq!(
        fields(expected_order(&btc(testnet, "native"), &c)),
        ["pay_to"]
    );
    assert_eq!(fields(expected_order(&btc(segwit, USDT), &c)), ["asset"]);
}

#[test]
fn the_same_order_has_no_differences() {
    let c = catalog();
    let mut i = input(USDT, USDT, "25000000");
    i.expires_at = Some("2026-12-01T10:00:00.123456Z");
    let o = expected_order(&i, &c).unwrap();
    let stored = StoredOrder {
        chain: "ethereum",
        pay_to: &USDT.to_lowercase(),
        asset: &USDT.to_lowercase(),
        amount_due: "25000000",
        expires_at: Some("2026-12-01T10:00:00.123Z".parse().unwrap()),
        reference: None,
    };
    assert!(o.differences(&stored).is_empty());
    let other = StoredOrder {
        amount_due: "25000001",
        asset: "native",
        expires_at: None,
        ..stored
    };
    assert_eq!(o.differences(&other), ["asset", "amount_due", "expires_at"]);
}

/// A reference is a Solana order's only (base58 of 32 bytes, named when not), is kept as
/// given, and a registration that adds or changes it differs from the stored order.
#[test]
fn a_reference_belongs_to_a_solana_order() {
    const WALLET: &str = "3YQcK46Mvbvit2QTSrPEiqLQewXY9eXhTk74w9ruNRZ5";
    const REF: &str = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA";
    let c = Catalog::new([("solana".to_string(), ChainKind::Solana)])
        .with_asset_key("solana:EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v");
    let sol = OrderInput {
        chain: "solana",
        pay_to: WALLET,
        reference: Some(REF),
        ..input(
            WALLET,
            "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
            "5000000",
        )
    };
    let o = expected_order(&sol, &c).unwrap();
    assert_eq!(o.reference.as_deref(), Some(REF));
    let bad = OrderInput {
        reference: Some("0xdac17f958d2ee523a2206206994597c13d831ec7"),
        ..sol
    };
    let e = expected_order(&bad, &c).unwrap_err();
    assert_eq!(fields(Err(e.clone())), ["reference"]);
    assert!(e[0].detail.contains("base58"), "{e:?}");
    let evm = OrderInput {
        reference: Some(REF),
        ..input(USDT, USDT, "25000000")
    };
    let e = expected_order(&evm, &catalog()).unwrap_err();
    assert_eq!(e[0].field, "reference");
    assert!(
        e[0].detail.contains("only an order on a Solana chain"),
        "{e:?}"
    );
    let stored = StoredOrder {
        chain: "solana",
        pay_to: WALLET,
        asset: "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
        amount_due: "5000000",
        expires_at: None,
        reference: None,
    };
    assert_eq!(o.differences(&stored), ["reference"]);
    let same = StoredOrder {
        reference: Some(REF),
        ..stored
    };
    assert!(o.differences(&same).is_empty());
}
