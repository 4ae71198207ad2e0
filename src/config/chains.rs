//! `[chains.<name>]` tables into `ChainSettings`, and `[assets]` into decimals per
//! `"chain:asset"`: every key checked, every error naming it.

use std::collections::HashMap;

use super::sections::{RawChain, RawConfig};
use super::{err, ConfigError};
use crate::chain::{ChainSettings, Finality};

/// `rpc_url` or `rpc_urls`, each an http(s) URL.
fn rpc_urls(name: &str, c: &RawChain) -> Result<Vec<String>, ConfigError> {
    let rpc_urls: Vec<String> = match (&c.rpc_url, &c.rpc_urls) {
        (Some(_), Some(_)) => {
            return Err(err(format!(
                "chains.{name}.rpc_urls: set rpc_url or rpc_urls, not both"
            )))
        }
        (Some(u), None) => vec![u.expose().to_string()],
        (None, Some(us)) if us.is_empty() => {
            return Err(err(format!(
                "chains.{name}.rpc_urls: at least one URL is required"
            )))
        }
        (None, Some(us)) => us.iter().map(|u| u.expose().to_string()).collect(),
        (None, None) => {
            return Err(err(format!(
                "chains.{name}.rpc_url: required (or rpc_urls = [...])"
            )))
        }
    };
    for (i, u) in rpc_urls.iter().enumerate() {
        if !(u.starts_with("http://") || u.starts_with("https://")) {
            let key = if c.rpc_url.is_some() {
                "rpc_url".to_string()
            } else {
                format!("rpc_urls[{i}]")
            };
            return Err(err(format!(
                "chains.{name}.{key}: {} is not an http:// or https:// URL",
                crate::chain::shown_url(u)
            )));
        }
    }
    Ok(rpc_urls)
}

/// One `[chains.<name>]` table.
pub(super) fn chain(name: &str, c: &RawChain) -> Result<ChainSettings, ConfigError> {
    let rpc_urls = rpc_urls(name, c)?;
    if c.max_requests_per_second == Some(0) {
        return Err(err(format!(
            "chains.{name}.max_requests_per_second: must be at least 1 (or absent: no limit)"
        )));
    }
    let finality = match c.finality.as_str() {
        "finalized" => Finality::Finalized,
        "safe" => Finality::Safe,
        "depth" => Finality::Depth,
        other => {
            return Err(err(format!(
                "chains.{name}.finality: {other:?} is not one of \"finalized\", \"safe\", \"depth\""
            )))
        }
    };
    if c.final_depth == 0 || c.rpc_batch_size == 0 || c.log_range == 0 {
        return Err(err(format!(
            "chains.{name}: final_depth, rpc_batch_size and log_range must be at least 1"
        )));
    }
    Ok(ChainSettings {
        name: name.to_string(),
        rpc_urls,
        chain_id: c.chain_id,
        max_requests_per_second: c.max_requests_per_second,
        confirmations: c.confirmations,
        finality,
        final_depth: c.final_depth,
        batch_size: c.rpc_batch_size,
        timeout: c.timeout,
        max_retries: c.max_retries,
        recheck_final: c.recheck_final,
        scan_unpaid: c.scan_unpaid,
        log_range: c.log_range,
    })
}

/// Decimals per `"chain:asset"` from `[assets]`, each key naming a configured chain.
pub(super) fn asset_decimals(raw: &RawConfig) -> Result<HashMap<String, u8>, ConfigError> {
    let mut decimals = HashMap::new();
    for (key, a) in &raw.assets {
        let (chain, addr) = key.split_once(':').ok_or_else(|| {
            err(format!(
                "assets.\"{key}\": the key must be \"<chain>:<contract address or native>\""
            ))
        })?;
        if !raw.chains.contains_key(chain) {
            return Err(err(format!(
                "assets.\"{key}\": chain {chain:?} has no [chains.{chain}] table"
            )));
        }
        let asset =
            crate::domain::Asset::parse(addr).map_err(|e| err(format!("assets.\"{key}\": {e}")))?;
        decimals.insert(format!("{chain}:{asset}"), a.decimals);
    }
    Ok(decimals)
}
