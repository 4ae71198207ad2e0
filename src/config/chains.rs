//! `[chains.<name>]` tables into `ChainSettings`, and `[assets]` into decimals per
//! `"chain:asset"`: every key checked, every error naming it.

use std::collections::HashMap;
use std::time::Duration;

use super::sections::{
    RawChain, RawConfig, DEFAULT_CONFIRMATIONS, DEFAULT_FINAL_DEPTH, DEFAULT_RECHECK_FINAL,
};
use super::{err, read_secret_file, ConfigError};
use crate::chain::{ChainSettings, Finality};
use crate::domain::{AmountPolicy, BtcNetwork, ChainKind, Tolerance};
use crate::secret::Secret;

/// Blocks per `eth_getLogs` request java-tron serves at most.
const TRON_LOG_RANGE: u64 = 5_000;

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

/// A table's kind (`kind`, and `network` on Bitcoin); a bad value is an error naming it.
pub(super) fn kind_of(name: &str, c: &RawChain) -> Result<ChainKind, ConfigError> {
    let kind = match &c.kind {
        None => ChainKind::Evm,
        Some(k) => ChainKind::parse(k).map_err(|e| err(format!("chains.{name}.{e}")))?,
    };
    Ok(match (kind, &c.network) {
        (ChainKind::Bitcoin(_), Some(n)) => {
            ChainKind::Bitcoin(BtcNetwork::parse(n).map_err(|e| err(format!("chains.{name}.{e}")))?)
        }
        (ChainKind::Bitcoin(_), None) => kind,
        (_, Some(_)) => {
            return Err(err(format!(
                "chains.{name}.network: only a kind = \"bitcoin\" chain has it"
            )))
        }
        (k, None) => k,
    })
}

/// An `http(s)://` URL at `key`, or the error naming it.
fn http_url(name: &str, key: &str, u: &str) -> Result<(), ConfigError> {
    if u.starts_with("http://") || u.starts_with("https://") {
        return Ok(());
    }
    Err(err(format!(
        "chains.{name}.{key}: {} is not an http:// or https:// URL",
        crate::chain::shown_url(u)
    )))
}

/// Bitcoin's keys: `esplora_url` (required), and what an Esplora chain cannot have.
fn bitcoin_keys(name: &str, c: &RawChain) -> Result<String, ConfigError> {
    let Some(u) = c.esplora_url.as_ref().map(|u| u.expose().to_string()) else {
        return Err(err(format!(
            "chains.{name}.esplora_url: required for kind = \"bitcoin\" (an Esplora API, e.g. \
             https://blockstream.info/api)"
        )));
    };
    http_url(name, "esplora_url", &u)?;
    let refused = [
        ("rpc_url", c.rpc_url.is_some()),
        ("rpc_urls", c.rpc_urls.is_some()),
        ("chain_id", c.chain_id.is_some()),
        ("api_url", c.api_url.is_some()),
        ("api_key", c.api_key.is_some()),
        ("api_key_file", c.api_key_file.is_some()),
    ];
    if let Some((key, _)) = refused.iter().find(|(_, on)| *on) {
        return Err(err(format!(
            "chains.{name}.{key}: a kind = \"bitcoin\" chain is read from esplora_url only"
        )));
    }
    if c.finality.as_deref().is_some_and(|f| f != "depth") {
        return Err(err(format!(
            "chains.{name}.finality: Bitcoin has only \"depth\" (with final_depth)"
        )));
    }
    Ok(u)
}

/// The Tron keys (`api_url`, `api_key`/`api_key_file`), refused on an EVM chain.
fn tron_keys(
    name: &str,
    kind: ChainKind,
    c: &RawChain,
) -> Result<(Option<String>, Option<Secret>), ConfigError> {
    let api_key = match (&c.api_key, &c.api_key_file) {
        (Some(_), Some(_)) => {
            return Err(err(format!(
                "chains.{name}.api_key: set api_key or api_key_file, not both"
            )))
        }
        (Some(k), None) => Some(k.clone()),
        (None, Some(f)) => Some(read_secret_file(&format!("chains.{name}.api_key_file"), f)?),
        (None, None) => None,
    };
    let api_url = c.api_url.as_ref().map(|u| u.expose().to_string());
    if c.esplora_url.is_some() {
        return Err(err(format!(
            "chains.{name}.esplora_url: only a kind = \"bitcoin\" chain has it"
        )));
    }
    match kind {
        ChainKind::Bitcoin(_) => {}
        ChainKind::Evm | ChainKind::Solana => {
            let set = [
                ("api_url", api_url.is_some()),
                ("api_key", c.api_key.is_some()),
                ("api_key_file", c.api_key_file.is_some()),
            ];
            if let Some((key, _)) = set.iter().find(|(_, on)| *on) {
                return Err(err(format!(
                    "chains.{name}.{key}: only a kind = \"tron\" chain has it"
                )));
            }
        }
        ChainKind::Tron => {
            let Some(u) = &api_url else {
                return Err(err(format!(
                    "chains.{name}.api_url: required for kind = \"tron\" (java-tron's HTTP API, \
                     e.g. https://api.trongrid.io)"
                )));
            };
            http_url(name, "api_url", u)?;
        }
    }
    Ok((api_url, api_key))
}

/// Solana's states come from the cluster's commitment (docs/configuration.md, "Solana"): the
/// keys that set them elsewhere, and `chain_id` (a cluster has none), are refused naming the
/// key.
fn solana_keys(name: &str, c: &RawChain) -> Result<(), ConfigError> {
    let refused = [
        ("confirmations", c.confirmations.is_some()),
        ("finality", c.finality.is_some()),
        ("final_depth", c.final_depth.is_some()),
        ("chain_id", c.chain_id.is_some()),
    ];
    match refused.iter().find(|(_, on)| *on) {
        Some((key, _)) => Err(err(format!(
            "chains.{name}.{key}: does not apply to a kind = \"solana\" chain (its states are \
             the cluster's commitment: processed, confirmed, finalized)"
        ))),
        None => Ok(()),
    }
}

/// `chains.<name>.treasury`: each an address of the chain's kind, in the ledger's spelling.
pub(super) fn treasury(c: &ChainSettings, given: &[String]) -> Result<Vec<String>, ConfigError> {
    given
        .iter()
        .map(|a| {
            c.kind
                .address("treasury", a)
                .map(|a| a.to_string())
                .map_err(|e| {
                    err(format!(
                        "chains.{}.treasury: {a:?} is not an address of this chain: {}",
                        c.name, e.reason
                    ))
                })
        })
        .collect()
}

/// One `[chains.<name>]` table.
pub(super) fn chain(name: &str, c: &RawChain) -> Result<ChainSettings, ConfigError> {
    let kind = kind_of(name, c)?;
    if kind == ChainKind::Solana {
        solana_keys(name, c)?;
    }
    let final_depth = c.final_depth.unwrap_or(DEFAULT_FINAL_DEPTH);
    let (api_url, api_key, rpc_urls) = match kind {
        ChainKind::Bitcoin(_) => (Some(bitcoin_keys(name, c)?), None, Vec::new()),
        _ => {
            let (api_url, api_key) = tron_keys(name, kind, c)?;
            (api_url, api_key, rpc_urls(name, c)?)
        }
    };
    if c.max_requests_per_second == Some(0) {
        return Err(err(format!(
            "chains.{name}.max_requests_per_second: must be at least 1 (or absent: no limit)"
        )));
    }
    let default = if matches!(kind, ChainKind::Bitcoin(_)) {
        "depth"
    } else {
        "finalized"
    };
    let finality = match c.finality.as_deref().unwrap_or(default) {
        "finalized" => Finality::Finalized,
        "safe" => Finality::Safe,
        "depth" => Finality::Depth,
        other => {
            return Err(err(format!(
                "chains.{name}.finality: {other:?} is not one of \"finalized\", \"safe\", \"depth\""
            )))
        }
    };
    if kind == ChainKind::Tron && finality == Finality::Safe {
        return Err(err(format!(
            "chains.{name}.finality: Tron has no \"safe\" block; use \"finalized\" (the \
             solidified block) or \"depth\""
        )));
    }
    // java-tron answers eth_getLogs over at most 5,000 blocks.
    if kind == ChainKind::Tron && c.log_range > TRON_LOG_RANGE {
        return Err(err(format!(
            "chains.{name}.log_range: at most {TRON_LOG_RANGE} on Tron (java-tron's eth_getLogs limit)"
        )));
    }
    if final_depth == 0 || c.rpc_batch_size == 0 || c.log_range == 0 {
        return Err(err(format!(
            "chains.{name}: final_depth, rpc_batch_size and log_range must be at least 1"
        )));
    }
    Ok(ChainSettings {
        name: name.to_string(),
        kind,
        api_url,
        api_key,
        rpc_urls,
        chain_id: c.chain_id,
        max_requests_per_second: c.max_requests_per_second,
        confirmations: c.confirmations.unwrap_or(DEFAULT_CONFIRMATIONS),
        finality,
        final_depth,
        batch_size: c.rpc_batch_size,
        timeout: c.timeout,
        max_retries: c.max_retries,
        recheck_final: c.recheck_final.unwrap_or(match kind {
            ChainKind::Solana => Duration::ZERO,
            _ => DEFAULT_RECHECK_FINAL,
        }),
        scan_unpaid: c.scan_unpaid,
        log_range: c.log_range,
        max_amount: None,
    })
}

/// Decimals per `"chain:asset"` from `[assets]`, each key naming a configured chain.
/// `[reconcile] underpaid_tolerance` and each asset's, read into the rules amounts are judged
/// by; a bad one names its key.
pub(super) fn amount_policy(raw: &RawConfig) -> Result<AmountPolicy, ConfigError> {
    let tolerance = Tolerance::parse(&raw.reconcile.underpaid_tolerance)
        .map_err(|e| err(format!("reconcile.underpaid_tolerance: {}", e.reason)))?;
    let mut per_asset = HashMap::new();
    for (key, a) in &raw.assets {
        let Some(text) = &a.underpaid_tolerance else {
            continue;
        };
        let t = Tolerance::parse(text).map_err(|e| {
            err(format!(
                "assets.\"{key}\".underpaid_tolerance: {}",
                e.reason
            ))
        })?;
        // The key was checked by `asset_decimals`: chain and asset in canonical form.
        if let Some((chain, addr)) = key.split_once(':') {
            if let Some(c) = raw.chains.get(chain) {
                let asset = kind_of(chain, c)?
                    .asset(addr)
                    .map_err(|e| err(format!("assets.\"{key}\": {e}")))?;
                per_asset.insert(format!("{chain}:{asset}"), t);
            }
        }
    }
    let accept_late = match raw.reconcile.late_payments.as_str() {
        "hold" => false,
        "accept" => true,
        other => {
            return Err(err(format!(
                "reconcile.late_payments: {other:?} is neither \"hold\" nor \"accept\""
            )))
        }
    };
    Ok(AmountPolicy {
        tolerance,
        per_asset,
        accept_late,
        // The database's limit, not the configuration's: set by the app from the store.
        max_paid: None,
    })
}

pub(super) fn asset_decimals(raw: &RawConfig) -> Result<HashMap<String, u8>, ConfigError> {
    let mut decimals = HashMap::new();
    for (key, a) in &raw.assets {
        let (chain, addr) = key.split_once(':').ok_or_else(|| {
            err(format!(
                "assets.\"{key}\": the key must be \"<chain>:<contract address or native>\""
            ))
        })?;
        let Some(c) = raw.chains.get(chain) else {
            return Err(err(format!(
                "assets.\"{key}\": chain {chain:?} has no [chains.{chain}] table"
            )));
        };
        let kind = kind_of(chain, c)?;
        let asset = kind
            .asset(addr)
            .map_err(|e| err(format!("assets.\"{key}\": {e}")))?;
        decimals.insert(format!("{chain}:{asset}"), a.decimals);
    }
    // A Tron, Bitcoin or Solana native coin without an [assets] entry: TRX 6, BTC 8, SOL 9 (an EVM chain's
    // native coin keeps the readers' default of 18).
    for (name, c) in &raw.chains {
        let kind = kind_of(name, c)?;
        if kind == ChainKind::Evm {
            continue;
        }
        decimals
            .entry(format!("{name}:native"))
            .or_insert(kind.native_decimals());
    }
    Ok(decimals)
}
