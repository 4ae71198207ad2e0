//! Arbitrary UTF-8 text as a configuration file, with no environment: `Config::from_toml`
//! never panics (errors are fine).
#![no_main]

use libfuzzer_sys::fuzz_target;
use payrecon::config::Config;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = Config::from_toml(text, std::iter::empty());
});
