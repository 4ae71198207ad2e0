use super::*;
use crate::domain::Address;
use serde_json::json;

fn time(s: &str) -> Option<String> {
    parse_time(s).map(|t| t.to_string())
}

#[test]
fn times_in_rfc3339_and_laravel_forms() {
    let want = Some("2024-05-05T19:33:52Z".to_string());
    assert_eq!(time("2024-05-05T19:33:52.000000Z"), want);
    assert_eq!(time("2024-05-05T19:33:52Z"), want);
    assert_eq!(time("2024-05-05T21:33:52+02:00"), want);
    assert_eq!(time("2024-05-05 19:33:52"), want);
    assert_eq!(time("2024-05-05T19:33:52"), want);
    assert_eq!(time("yesterday"), None);
    assert_eq!(time("2024-13-05 19:33:52"), None);
    assert_eq!(time(""), None);
}

#[test]
fn assets_from_type_and_contract() {
    let usdt = "0xdac17f958d2ee523a2206206994597c13d831ec7";
    let check = |v: Value| read_asset(v.as_object().unwrap(), ChainKind::Evm);
    assert_eq!(
        check(json!({"type": "ETH", "contractaddress": usdt})),
        Ok(Asset::Native)
    );
    assert_eq!(
        check(json!({"type": "ERC20", "contractaddress": null})),
        Ok(Asset::Native)
    );
    assert_eq!(
        check(json!({"type": "ERC20", "contractaddress": ""})),
        Ok(Asset::Native)
    );
    assert_eq!(
        check(json!({"type": "ERC20", "contractaddress": usdt.to_uppercase().replace("0X", "0x")})),
        Ok(Asset::Token(Address::parse(usdt).unwrap()))
    );
    assert!(check(
        json!({"type": "TRC20", "contractaddress": "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"})
    )
    .unwrap_err()
    .0
    .starts_with("contractaddress:"));
}

#[test]
fn last_page_is_read_and_bounded() {
    assert_eq!(last_page(&json!({"last_page": 7})), Ok(7));
    assert_eq!(last_page(&json!({"last_page": "7"})), Ok(7));
    assert!(last_page(&json!({"last_page": null})).is_err());
    assert!(last_page(&json!({"data": []})).is_err());
    assert!(last_page(&json!({"last_page": 10_000_000_000u64})).is_err());
}

#[test]
fn block_numbers() {
    assert!(check_block_number(None).is_ok());
    assert!(check_block_number(Some(&json!("19499380"))).is_ok());
    assert!(check_block_number(Some(&json!(19499380))).is_ok());
    assert!(check_block_number(Some(&json!(""))).is_ok());
    assert!(check_block_number(Some(&json!("0x12"))).is_err());
    assert!(check_block_number(Some(&json!(-1))).is_err());
    assert!(check_block_number(Some(&json!(1.5))).is_err());
}
