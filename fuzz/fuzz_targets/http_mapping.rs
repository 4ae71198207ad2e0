//! An arbitrary JSON item through the Qvard and Paymos presets' `record_from_value` and
//! `record_from_webhook`: never panics; every record read names one of the provider's chains
//! and, when it names a transaction, a 66-character lowercase `0x` hash.
#![no_main]

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use payrecon::config::http_settings_from_toml;
use payrecon::providers::http::HttpClient;
use payrecon::providers::ProviderRecord;
use serde_json::Value;

const USDT: &str = "0xdac17f958d2ee523a2206206994597c13d831ec7";

fn client(preset: &str) -> HttpClient {
    let text = format!(
        "kind = \"http\"\npreset = \"{preset}\"\nbase_url = \"http://127.0.0.1:1\"\n\
         api_key = \"k\"\nchains = [\"ethereum\", \"polygon\"]\n"
    );
    let chains = vec!["ethereum".to_string(), "polygon".to_string()];
    let decimals = HashMap::from([
        (format!("ethereum:{USDT}"), 6u8),
        (format!("polygon:{USDT}"), 6u8),
        ("ethereum:native".to_string(), 18u8),
    ]);
    let settings = http_settings_from_toml(preset, &text, &chains, &decimals).unwrap();
    HttpClient::new(settings, Arc::new(|_| {})).unwrap()
}

fn clients() -> &'static [HttpClient; 2] {
    static CLIENTS: OnceLock<[HttpClient; 2]> = OnceLock::new();
    CLIENTS.get_or_init(|| [client("qvard"), client("paymos")])
}

fn check(c: &HttpClient, record: &ProviderRecord) {
    assert!(
        c.settings().chains.contains(&record.chain),
        "{}: chain {:?} not in {:?}",
        c.name(),
        record.chain,
        c.settings().chains
    );
    if let Some(h) = &record.tx_hash {
        let h = h.as_str();
        assert_eq!(h.len(), 66, "{h:?}");
        assert!(h.starts_with("0x"), "{h:?}");
        assert!(
            h[2..]
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')),
            "{h:?}"
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(item) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let received_at = jiff::Timestamp::from_second(1_793_527_200).unwrap();
    for c in clients() {
        for failed in [false, true] {
            if let Ok(Some(r)) = c.record_from_value(&item, failed) {
                check(c, &r);
            }
        }
        if let Ok(Some(r)) = c.record_from_webhook(&item, received_at) {
            check(c, &r);
        }
    }
});
