//! The body of `POST /v1/orders` through the API's reader (`api::request::order`) with a
//! catalog of an EVM, a Tron and a Bitcoin chain: never panics; a refusal names at least one
//! field, each as a JSON pointer (`#…`); an accepted order is in canonical form (EVM
//! addresses lower case, amount at least 1), and the body written back from it is read as the
//! same order (the reader is idempotent, as the API's 200 promises).
#![no_main]

use libfuzzer_sys::fuzz_target;
use payrecon::api::request::order;
use payrecon::domain::{Asset, BtcNetwork, Catalog, ChainKind};

const USDT: &str = "0xdac17f958d2ee523a2206206994597c13d831ec7";
const TRON_USDT: &str = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";

fn catalog() -> Catalog {
    Catalog::new([
        ("ethereum".to_string(), ChainKind::Evm),
        ("tron".to_string(), ChainKind::Tron),
        ("bitcoin".to_string(), ChainKind::Bitcoin(BtcNetwork::Mainnet)),
    ])
    .with_asset_key(&format!("ethereum:{USDT}"))
    .with_asset_key(&format!("tron:{TRON_USDT}"))
}

fuzz_target!(|data: &[u8]| {
    let c = catalog();
    match order(data, &c) {
        Err(problems) => {
            assert!(!problems.is_empty(), "a refusal names a field");
            for p in &problems {
                let pointer = p.pointer.as_deref().expect("a body problem has a pointer");
                assert!(pointer.starts_with('#'), "{pointer}");
                assert!(!p.detail.is_empty());
            }
        }
        Ok(o) => {
            assert!(!o.amount_due.is_zero());
            if o.chain == "ethereum" {
                assert_eq!(o.pay_to.as_str(), o.pay_to.as_str().to_ascii_lowercase());
                if let Asset::Token(t) = &o.asset {
                    assert_eq!(t.as_str(), USDT);
                }
            }
            let back = serde_json::json!({
                "order_ref": o.order_ref, "chain": o.chain, "pay_to": o.pay_to.as_str(),
                "asset": o.asset.as_str(), "amount_due": o.amount_due.to_string(),
                "expires_at": o.expires_at.map(|t| t.to_string()),
            });
            let again = order(back.to_string().as_bytes(), &c).expect("written back, it reads");
            assert_eq!(again, o);
        }
    }
});
