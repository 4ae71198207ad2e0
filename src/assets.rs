//! Amounts for people (docs/reference.md, conventions): the text report, `exceptions`,
//! `events` and the demo show amounts in tokens with the asset's symbol (`20 USDT`,
//! `0.015 ETH`) where its decimals are known (`[assets]`, and each chain kind's native coin);
//! JSON, CSV, events and the API keep base units. `decimal` is exact (the export's
//! `amount_decimal`); `tokens` trims it for reading.

use std::collections::HashMap;

use crate::config::Config;
use crate::domain::{ledger_asset, parse_base_units, ChainKind};

/// Symbol and decimals per `"<chain>:<asset>"` (canonical), from `[assets]`, with each chain's
/// native coin's decimals where `[assets]` has no entry for it.
#[derive(Default)]
pub struct Assets(HashMap<String, (String, u8)>);

impl Assets {
    pub fn of(config: &Config) -> Assets {
        let mut map = HashMap::new();
        for c in &config.chains {
            map.insert(
                format!("{}:native", c.name),
                (c.kind.native_symbol().to_string(), c.kind.native_decimals()),
            );
        }
        for (key, a) in &config.assets {
            let Some((chain, addr)) = key.split_once(':') else {
                continue;
            };
            let kind = config
                .chains
                .iter()
                .find(|c| c.name == chain)
                .map_or(ChainKind::Evm, |c| c.kind);
            if let Ok(asset) = kind.asset(addr) {
                map.insert(format!("{chain}:{asset}"), (a.symbol.clone(), a.decimals));
            }
        }
        Assets(map)
    }

    /// Symbol and decimals of `asset` (in the ledger's spelling) on `chain`.
    pub fn get(&self, chain: &str, asset: &str) -> Option<&(String, u8)> {
        let canonical = ledger_asset(asset).map(|a| a.to_string()).ok()?;
        self.0.get(&format!("{chain}:{canonical}"))
    }
}

/// `units` (base units, an integer) as a decimal with exactly `decimals` fractional digits:
/// `decimal("25000000", 6) == "25.000000"`; `None` when `units` is not a base-unit integer.
pub fn decimal(units: &str, decimals: u8) -> Option<String> {
    let digits = parse_base_units(units).ok()?.to_string();
    let d = usize::from(decimals);
    if d == 0 {
        return Some(digits);
    }
    let padded = format!("{digits:0>width$}", width = d + 1);
    let (int, frac) = padded.split_at(padded.len() - d);
    Some(format!("{int}.{frac}"))
}

/// The symbol people know a chain's native coin by: by its kind, and on EVM chains by the
/// chain's usual name (ETH on Ethereum and its rollups, POL on Polygon, BNB on BNB Chain).
fn people_native_symbol(chain: &str, kind_symbol: &str) -> String {
    if !kind_symbol.is_empty() {
        return kind_symbol.to_string();
    }
    let c = chain.to_ascii_lowercase();
    let eth = [
        "ethereum", "arbitrum", "optimism", "base", "sepolia", "holesky", "mainnet",
    ];
    if eth.iter().any(|n| c.starts_with(n)) {
        "ETH".into()
    } else if c.starts_with("polygon") {
        "POL".into()
    } else if c.starts_with("bsc") || c.starts_with("bnb") {
        "BNB".into()
    } else if c.starts_with("avalanche") {
        "AVAX".into()
    } else {
        "native".into()
    }
}

impl Assets {
    /// `units` of `asset` on `chain` in tokens with the symbol (`20 USDT`, `0.015 ETH`), or
    /// `None` when its decimals are not known (or `units` is no base-unit integer).
    pub fn tokens(&self, chain: &str, asset: &str, units: &str) -> Option<String> {
        let (symbol, decimals) = self.get(chain, asset)?;
        let exact = decimal(units, *decimals)?;
        let shown = if exact.contains('.') {
            exact
                .trim_end_matches('0')
                .trim_end_matches('.')
                .to_string()
        } else {
            exact
        };
        let symbol = if asset == "native" || symbol.is_empty() {
            people_native_symbol(chain, symbol)
        } else {
            symbol.clone()
        };
        Some(format!("{shown} {symbol}"))
    }

    /// `units` for people: in tokens where known, else `<units> base units`.
    pub fn amount(&self, chain: &str, asset: Option<&str>, units: &str) -> String {
        asset
            .and_then(|a| self.tokens(chain, a, units))
            .unwrap_or_else(|| format!("{units} base units"))
    }

    /// `amount` of a signed number of base units (`-5000000` is `-5 USDT`).
    pub fn signed(&self, chain: &str, asset: &str, units: &str) -> String {
        match units.strip_prefix('-') {
            Some(abs) => format!("-{}", self.amount(chain, Some(asset), abs)),
            None => self.amount(chain, Some(asset), units),
        }
    }

    /// A finding's or an exception's detail with its amounts in tokens: a base-unit number
    /// (a `-` before it kept) right after `paid `, ` of `, `short `, `excess `, or the balance
    /// check's `sent `, `holds `, `explain `, `leaving ` (how the details spell amounts) is
    /// rewritten; numbers elsewhere (blocks, log indexes, dates) are left alone. Unchanged
    /// when the asset's decimals are not known.
    pub fn detail(&self, chain: &str, asset: Option<&str>, text: &str) -> String {
        let Some(asset) = asset else {
            return text.to_string();
        };
        if self.get(chain, asset).is_none() {
            return text.to_string();
        }
        let mut out = String::with_capacity(text.len() + 16);
        let mut rest = text;
        'scan: while !rest.is_empty() {
            let words = [
                "paid ", " of ", "short ", "excess ", "sent ", "holds ", "explain ", "leaving ",
            ];
            for word in words {
                if let Some(after) = rest.strip_prefix(word) {
                    let sign = if after.starts_with('-') { "-" } else { "" };
                    let after = &after[sign.len()..];
                    let digits = after.bytes().take_while(u8::is_ascii_digit).count();
                    let end = after[digits..].chars().next();
                    let boundary = end.is_none_or(|c| c.is_whitespace() || ",;)".contains(c));
                    if digits > 0 && boundary {
                        if let Some(t) = self.tokens(chain, asset, &after[..digits]) {
                            out.push_str(word);
                            out.push_str(sign);
                            out.push_str(&t);
                            rest = &after[digits..];
                            continue 'scan;
                        }
                    }
                }
            }
            let c = rest.chars().next().unwrap_or(' ');
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
        out
    }
}

#[cfg(test)]
mod tests;
