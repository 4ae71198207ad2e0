//! One `[providers.<name>]` table into a `ProviderConfig`: its kind (Chaingateway or a generic
//! HTTP provider, with or without a preset), its chains, its webhook and its retry window,
//! every error naming the key.

use std::collections::BTreeMap;

use super::{chains, err, http_provider, line_of, one_line, read_secret_file, sections, webhook};
use super::{ConfigError, ProviderConfig, ProviderKind};
use crate::providers::chaingateway::ChaingatewaySettings;
use crate::providers::http::preset_webhook_scheme;

/// Checks a provider's `chains` (present, each configured) and `max_concurrency`.
fn check_provider_chains(
    name: &str,
    chains: &[String],
    configured: &BTreeMap<String, sections::RawChain>,
) -> Result<(), ConfigError> {
    for chain in chains {
        if !configured.contains_key(chain) {
            return Err(err(format!(
                "providers.{name}.chains: chain {chain:?} has no [chains.{chain}] table"
            )));
        }
    }
    if chains.is_empty() {
        return Err(err(format!(
            "providers.{name}.chains: at least one chain is required"
        )));
    }
    Ok(())
}

/// Reads one provider table through serde, naming `providers.<name>.<key>` (and the line).
fn provider_table<T: serde::de::DeserializeOwned>(
    name: &str,
    table: toml::Table,
    text: &str,
) -> Result<T, ConfigError> {
    serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|e| {
        let path = format!("providers.{name}.{}", e.path());
        let inner = one_line(&e.into_inner().to_string());
        let line = line_of(text, &path)
            .map(|l| format!(" (line {l})"))
            .unwrap_or_default();
        err(format!("{path}: {inner}{line}"))
    })
}

/// Each configured chain's kind (a bad `kind` is reported by the chain's own validation).
fn chain_kinds(
    chains: &BTreeMap<String, sections::RawChain>,
) -> std::collections::HashMap<String, crate::domain::ChainKind> {
    chains
        .iter()
        .map(|(name, c)| {
            let kind = chains::kind_of(name, c).unwrap_or_default();
            (name.clone(), kind)
        })
        .collect()
}

/// One `[providers.<name>]` table, by its kind.
pub(super) fn provider(
    name: &str,
    mut table: toml::Table,
    chains: &BTreeMap<String, sections::RawChain>,
    text: &str,
    decimals: &std::collections::HashMap<String, u8>,
) -> Result<ProviderConfig, ConfigError> {
    if name == "chain" || name == "run" {
        return Err(err(format!(
            "providers.{name}: the name \"{name}\" is reserved ({})",
            if name == "chain" {
                "the chain sweep's entry in reports and metrics"
            } else {
                "the run's own steps' entry in reports and metrics"
            }
        )));
    }
    let kind = match table.get("kind") {
        Some(toml::Value::String(k)) => k.clone(),
        Some(_) => return Err(err(format!("providers.{name}.kind: must be a string"))),
        None => return Err(err(format!("providers.{name}.kind: required"))),
    };
    let implied = match (kind.as_str(), table.get("preset")) {
        ("chaingateway", _) => Some("chaingateway"),
        ("http", Some(toml::Value::String(p))) => preset_webhook_scheme(p),
        _ => None,
    };
    let webhook = webhook::take(name, &mut table, implied)?;
    let (kind, retry_window) = match kind.as_str() {
        "chaingateway" => chaingateway(name, table, chains, text, decimals)?,
        "http" => {
            let mut s = http_provider::parse(name, table, chains, decimals)?;
            s.kinds = chain_kinds(chains);
            let window = s.retry_window;
            (ProviderKind::Http(s), window)
        }
        other => {
            return Err(err(format!(
                "providers.{name}.kind: unknown provider kind {other:?} (known: \"chaingateway\", \"http\")"
            )))
        }
    };
    Ok(ProviderConfig {
        kind,
        retry_window,
        webhook,
    })
}

fn chaingateway(
    name: &str,
    table: toml::Table,
    chains: &BTreeMap<String, sections::RawChain>,
    text: &str,
    decimals: &std::collections::HashMap<String, u8>,
) -> Result<(ProviderKind, std::time::Duration), ConfigError> {
    let p: sections::RawProvider = provider_table(name, table, text)?;
    let key = |k: &str| format!("providers.{name}.{k}");
    check_provider_chains(name, &p.chains, chains)?;
    if p.max_concurrency == 0 {
        return Err(err(format!(
            "{}: must be at least 1",
            key("max_concurrency")
        )));
    }
    let api_key = match (p.api_key, p.api_key_file) {
        (Some(_), Some(_)) => {
            return Err(err(format!(
                "{}: set api_key or api_key_file, not both",
                key("api_key")
            )))
        }
        (Some(k), None) => k,
        (None, Some(f)) => read_secret_file(&key("api_key_file"), &f)?,
        (None, None) => {
            return Err(err(format!(
                "{}: required (or api_key_file)",
                key("api_key")
            )))
        }
    };
    let base_url = p
        .base_url
        .unwrap_or_else(|| "https://api.chaingateway.io/api/v2".into());
    let settings = ChaingatewaySettings {
        name: name.to_string(),
        base_url: base_url.trim_end_matches('/').to_string(),
        api_key,
        network: p.network,
        timeout: p.timeout,
        max_concurrency: p.max_concurrency,
        max_retries: p.max_retries,
        backoff: p.backoff,
        chains: p.chains,
        decimals: decimals.clone(),
        kinds: chain_kinds(chains),
        list_margin: p.list_margin,
        full_scan_every: p.full_scan_every,
    };
    Ok((ProviderKind::Chaingateway(settings), p.retry_window))
}
