//! `underpaid_tolerance` (docs/configuration.md, "Amounts"): global and per asset, base units
//! or a share, every bad value a config error naming its key.

use super::*;
use crate::domain::{Asset, Tolerance, U256};

const BASE: &str = r#"
[database]
url = "sqlite://x.db"

[chains.ethereum]
rpc_url = "http://127.0.0.1:8545"

[assets."ethereum:0xdAC17F958D2ee523a2206206994597C13D831ec7"]
symbol = "USDT"
decimals = 6
"#;

const USDT: &str = "0xdac17f958d2ee523a2206206994597c13d831ec7";

fn load(text: &str) -> Result<Config, ConfigError> {
    Config::from_toml(text, std::iter::empty())
}

/// BASE with `[reconcile] underpaid_tolerance` and the asset's set (None: left out).
fn with(global: Option<&str>, asset: Option<&str>) -> String {
    let mut text = BASE.to_string();
    if let Some(a) = asset {
        text.push_str(&format!("underpaid_tolerance = \"{a}\"\n"));
    }
    if let Some(g) = global {
        text.push_str(&format!("\n[reconcile]\nunderpaid_tolerance = \"{g}\"\n"));
    }
    text
}

#[test]
fn the_default_is_no_tolerance() {
    let c = load(BASE).unwrap();
    let usdt = Asset::parse(USDT).unwrap();
    assert_eq!(c.amounts.tolerance("ethereum", &usdt), Tolerance::None);
}

#[test]
fn a_tolerance_per_asset_overrides_the_global_one() {
    let c = load(&with(Some("0.5%"), Some("10000"))).unwrap();
    let usdt = Asset::parse(USDT).unwrap();
    let native = Asset::parse("native").unwrap();
    assert_eq!(
        c.amounts.tolerance("ethereum", &usdt),
        Tolerance::Units(U256::from(10_000))
    );
    assert_eq!(
        c.amounts.tolerance("ethereum", &native),
        Tolerance::Share(50)
    );
    assert_eq!(c.amounts.tolerance("polygon", &usdt), Tolerance::Share(50));
    // From the environment too.
    let c = Config::from_toml(
        BASE,
        [(
            "PAYRECON_RECONCILE__UNDERPAID_TOLERANCE".to_string(),
            "10%".to_string(),
        )]
        .into_iter(),
    )
    .unwrap();
    assert_eq!(
        c.amounts.tolerance("ethereum", &usdt),
        Tolerance::Share(1_000)
    );
}

#[test]
fn a_bad_tolerance_names_its_key() {
    for bad in ["11%", "0.125%", "-5", "1.5", "five", "", "10 %"] {
        let e = load(&with(Some(bad), None)).err().map(|e| e.to_string());
        let e = e.unwrap_or_else(|| panic!("{bad:?} was accepted"));
        assert!(e.contains("reconcile.underpaid_tolerance"), "{bad}: {e}");
        let e = load(&with(None, Some(bad))).err().map(|e| e.to_string());
        let e = e.unwrap_or_else(|| panic!("{bad:?} was accepted for the asset"));
        assert!(
            e.contains("assets.\"ethereum:0xdAC17F958D2ee523a2206206994597C13D831ec7\".underpaid_tolerance"),
            "{bad}: {e}"
        );
    }
    // A number where a string is wanted names the key too.
    let e = load(&format!("{BASE}\n[reconcile]\nunderpaid_tolerance = 5\n"))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("reconcile.underpaid_tolerance"), "{e}");
}

#[test]
fn late_payments_is_hold_or_accept() {
    assert!(!load(BASE).unwrap().amounts.accept_late, "hold by default");
    let accept = format!("{BASE}\n[reconcile]\nlate_payments = \"accept\"\n");
    assert!(load(&accept).unwrap().amounts.accept_late);
    let hold = format!("{BASE}\n[reconcile]\nlate_payments = \"hold\"\n");
    assert!(!load(&hold).unwrap().amounts.accept_late);
    for bad in ["Accept", "reject", ""] {
        let text = format!("{BASE}\n[reconcile]\nlate_payments = \"{bad}\"\n");
        let e = load(&text).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("reconcile.late_payments"), "{bad:?}: {e}");
    }
}
