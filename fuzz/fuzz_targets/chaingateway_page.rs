//! Arbitrary bytes as a Chaingateway page body: the page readers never panic, and every
//! record of the page is either read or rejected.
#![no_main]

use std::collections::HashMap;

use libfuzzer_sys::fuzz_target;
use payrecon::fuzz_api::{last_page, page_data, read_page};
use serde_json::Value;

const USDT: &str = "0xdac17f958d2ee523a2206206994597c13d831ec7";

fuzz_target!(|data: &[u8]| {
    let Ok(body) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let _ = last_page(&body);
    let Ok(items) = page_data(&body) else {
        return;
    };
    let decimals = HashMap::from([
        (format!("ethereum:{USDT}"), 6u8),
        ("ethereum:native".to_string(), 18u8),
    ]);
    for failed in [false, true] {
        let page = read_page(items, "ethereum", failed, &decimals);
        assert_eq!(page.records.len() + page.rejected.len(), items.len());
        for r in &page.records {
            assert_eq!(r.chain, "ethereum");
            assert_eq!(r.failed, failed);
            if let Some(h) = &r.tx_hash {
                let h = h.as_str();
                assert_eq!(h.len(), 66, "{h:?}");
                assert!(h.starts_with("0x") && !h.bytes().any(|b| b.is_ascii_uppercase()));
            }
        }
    }
});
