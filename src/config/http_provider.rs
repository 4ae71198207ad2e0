//! `[providers.<name>]` with `kind = "http"` (docs/configuration.md, "The generic provider"):
//! the preset's table merged under the user's (user wins, recursively), read with unknown keys
//! refused, then checked key by key. The webhook keys (`webhook_secret`, `webhook_secret_file`,
//! `webhook`) are taken out of the table by the caller before this runs.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use self::raw::{RawFields, RawHttp, RawList, RawResend, Style};
use super::{err, one_line, read_secret_file, ConfigError};
use crate::providers::http::presets::{preset_toml, PRESETS};
use crate::providers::http::{
    FieldPointers, HttpSettings, ListSpec, Pagination, ResendSpec, TimeFormat,
};
use crate::secret::Secret;

/// Reads the `[providers.<name>]` table of a `kind = "http"` provider. `known_chains` are the
/// `[chains.*]` tables; `decimals` is the `"chain:asset"` map built from `[assets.*]`.
pub(super) fn parse<V>(
    name: &str,
    mut table: toml::Table,
    known_chains: &BTreeMap<String, V>,
    decimals: &HashMap<String, u8>,
) -> Result<HttpSettings, ConfigError> {
    let key = |k: &str| format!("providers.{name}.{k}");
    let preset = match table.get("preset") {
        None => None,
        Some(toml::Value::String(p)) => Some(p.clone()),
        Some(other) => {
            return Err(err(format!(
                "{}: expected a string, found {}",
                key("preset"),
                other.type_str()
            )))
        }
    };
    if let Some(p) = &preset {
        let text = preset_toml(p).ok_or_else(|| {
            err(format!(
                "{}: unknown preset {p:?} (known: {})",
                key("preset"),
                PRESETS.join(", ")
            ))
        })?;
        let base: toml::Table = text
            .parse()
            .map_err(|e| err(format!("{}: preset {p:?}: {e}", key("preset"))))?;
        merge_under(&mut table, base);
    }
    let raw: RawHttp =
        serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|e| {
            let path = e.path().to_string();
            let mut inner = one_line(&e.into_inner().to_string());
            // toml appends the key path (" in `payments.pagination`"); ours leads instead.
            if let Some(i) = inner.rfind(" in `").filter(|_| inner.ends_with('`')) {
                inner.truncate(i);
            }
            let at = if path == "." {
                String::new()
            } else {
                format!(".{path}")
            };
            match inner
                .strip_prefix("unknown field `")
                .and_then(|r| r.split_once('`'))
            {
                Some((field, rest)) if !path.ends_with(field) => {
                    err(format!("providers.{name}{at}.{field}: unknown field{rest}"))
                }
                Some((_, rest)) => err(format!("providers.{name}{at}: unknown field{rest}")),
                None => err(format!("providers.{name}{at}: {inner}")),
            }
        })?;
    build(name, raw, known_chains, decimals, preset)
}

/// A `kind = "http"` provider's settings from the TOML text of its table alone (for the
/// sandbox and tests; `chains` are the configured chain names).
pub fn http_settings_from_toml(
    name: &str,
    text: &str,
    chains: &[String],
    decimals: &HashMap<String, u8>,
) -> Result<HttpSettings, ConfigError> {
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        err(format!("providers.{name}: {}", one_line(&e.to_string())))
    })?;
    let known: BTreeMap<String, ()> = chains.iter().map(|c| (c.clone(), ())).collect();
    parse(name, table, &known, decimals)
}

/// Puts every key of `base` that `table` lacks into it; tables present in both merge the
/// same way (the user's keys win at every level).
fn merge_under(table: &mut toml::Table, base: toml::Table) {
    for (k, v) in base {
        match (table.get_mut(&k), v) {
            (None, v) => {
                table.insert(k, v);
            }
            (Some(toml::Value::Table(mine)), toml::Value::Table(theirs)) => {
                merge_under(mine, theirs)
            }
            (Some(_), _) => {}
        }
    }
}

fn build<V>(
    name: &str,
    mut raw: RawHttp,
    known_chains: &BTreeMap<String, V>,
    decimals: &HashMap<String, u8>,
    preset: Option<String>,
) -> Result<HttpSettings, ConfigError> {
    let key = |k: &str| format!("providers.{name}.{k}");
    let base_url = endpoint(name, &raw, known_chains)?;
    let api_key = api_key(name, raw.api_key.take(), raw.api_key_file.take())?;
    check_lists_and_statuses(name, &raw)?;
    let payments = raw
        .payments
        .map(|l| list(&key("payments"), l))
        .transpose()?;
    let failed = raw.failed.map(|l| list(&key("failed"), l)).transpose()?;
    let fields = fields(&key("fields"), raw.fields, raw.chains.len())?;
    let resend = raw.resend.map(|r| resend(&key("resend"), r)).transpose()?;
    Ok(HttpSettings {
        kinds: Default::default(),
        name: name.to_string(),
        base_url,
        api_key,
        auth_header: raw.auth_header,
        auth_scheme: raw.auth_scheme,
        chains: raw.chains,
        timeout: raw.timeout,
        max_retries: raw.max_retries,
        backoff: raw.backoff,
        max_concurrency: raw.max_concurrency,
        payments,
        failed,
        fields,
        amount_unit: raw.amount_unit,
        status_map: raw.status_map,
        resend,
        retry_window: raw.retry_window,
        preset,
        decimals: decimals.clone(),
    })
}

/// Checks `kind`, `base_url` and `chains`; returns the base URL without its trailing `/`.
fn endpoint<V>(
    name: &str,
    raw: &RawHttp,
    known_chains: &BTreeMap<String, V>,
) -> Result<String, ConfigError> {
    let key = |k: &str| format!("providers.{name}.{k}");
    if raw.kind != "http" {
        return Err(err(format!("{}: expected \"http\"", key("kind"))));
    }
    let base_url = raw
        .base_url
        .as_deref()
        .ok_or_else(|| err(format!("{}: required", key("base_url"))))?;
    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
        return Err(err(format!(
            "{}: {base_url:?} is not an http:// or https:// URL",
            key("base_url")
        )));
    }
    if raw.chains.is_empty() {
        return Err(err(format!(
            "{}: at least one chain is required",
            key("chains")
        )));
    }
    if let Some(c) = raw.chains.iter().find(|c| !known_chains.contains_key(*c)) {
        return Err(err(format!(
            "{}: chain {c:?} has no [chains.{c}] table",
            key("chains")
        )));
    }
    Ok(base_url.trim_end_matches('/').to_string())
}

/// The API key from `api_key` or `api_key_file` (not both); an empty one is refused.
fn api_key(
    name: &str,
    inline: Option<Secret>,
    file: Option<PathBuf>,
) -> Result<Option<Secret>, ConfigError> {
    let key = |k: &str| format!("providers.{name}.{k}");
    let api_key = match (inline, file) {
        (Some(_), Some(_)) => {
            return Err(err(format!(
                "{}: set api_key or api_key_file, not both",
                key("api_key")
            )))
        }
        (Some(k), None) => Some(k),
        (None, Some(f)) => Some(read_secret_file(&key("api_key_file"), &f)?),
        (None, None) => None,
    };
    if api_key.as_ref().is_some_and(Secret::is_empty) {
        return Err(err(format!(
            "{}: empty (omit it when the API needs no key)",
            key("api_key")
        )));
    }
    Ok(api_key)
}

/// Checks `max_concurrency`, that `payments` or `failed` is set, that `status_map` is not empty.
fn check_lists_and_statuses(name: &str, raw: &RawHttp) -> Result<(), ConfigError> {
    let key = |k: &str| format!("providers.{name}.{k}");
    if raw.max_concurrency == 0 {
        return Err(err(format!(
            "{}: must be at least 1",
            key("max_concurrency")
        )));
    }
    if raw.payments.is_none() && raw.failed.is_none() {
        return Err(err(format!(
            "{}: at least one of [providers.{name}.payments] or [providers.{name}.failed] is required",
            key("payments")
        )));
    }
    if raw.status_map.is_empty() {
        return Err(err(format!(
            "{}: required (at least one provider status)",
            key("status_map")
        )));
    }
    Ok(())
}

/// A JSON pointer: `/a/b` (or `""`, the whole document, where `allow_root`).
fn pointer(key: &str, p: Option<String>, allow_root: bool) -> Result<Option<String>, ConfigError> {
    match p {
        Some(p) if p.is_empty() && allow_root => Ok(Some(p)),
        Some(p) if !p.starts_with('/') => Err(err(format!(
            "{key}: {p:?} is not a JSON pointer (RFC 6901: it starts with \"/\")"
        ))),
        p => Ok(p),
    }
}

fn required(key: &str, p: Option<String>, allow_root: bool) -> Result<String, ConfigError> {
    pointer(key, p, allow_root)?.ok_or_else(|| err(format!("{key}: required")))
}

fn list(key: &str, raw: RawList) -> Result<ListSpec, ConfigError> {
    let k = |f: &str| format!("{key}.{f}");
    let path = raw
        .path
        .ok_or_else(|| err(format!("{}: required", k("path"))))?;
    let style = raw.pagination.ok_or_else(|| {
        err(format!(
            "{}: required (\"page\", \"cursor\", \"offset\" or \"link\")",
            k("pagination")
        ))
    })?;
    let pagination = match style {
        Style::Page => Pagination::Page {
            first: raw.first_page.unwrap_or(1),
            has_more: pointer(&k("has_more"), raw.has_more, false)?,
        },
        Style::Cursor => Pagination::Cursor {
            next: required(&k("cursor"), raw.cursor, false)?,
        },
        Style::Offset => match raw.limit {
            Some(limit) if limit >= 1 => Pagination::Offset { limit },
            Some(_) => return Err(err(format!("{}: must be at least 1", k("limit")))),
            None => {
                return Err(err(format!(
                    "{}: required for offset pagination",
                    k("limit")
                )))
            }
        },
        Style::Link => Pagination::Link,
    };
    Ok(ListSpec {
        path,
        time_format: raw.time_format.unwrap_or(TimeFormat::Rfc3339),
        pagination,
        items: required(&k("items"), raw.items, true)?,
    })
}

fn fields(key: &str, raw: RawFields, chains: usize) -> Result<FieldPointers, ConfigError> {
    let k = |f: &str| format!("{key}.{f}");
    let f = FieldPointers {
        event_id: required(&k("event_id"), raw.event_id, false)?,
        order_ref: pointer(&k("order_ref"), raw.order_ref, false)?,
        chain: pointer(&k("chain"), raw.chain, false)?,
        tx_hash: pointer(&k("tx_hash"), raw.tx_hash, false)?,
        log_index: pointer(&k("log_index"), raw.log_index, false)?,
        amount: pointer(&k("amount"), raw.amount, false)?,
        asset: pointer(&k("asset"), raw.asset, false)?,
        status: required(&k("status"), raw.status, false)?,
        updated_at: required(&k("updated_at"), raw.updated_at, false)?,
    };
    if f.order_ref.is_none() && f.tx_hash.is_none() {
        return Err(err(format!(
            "{}: required (or tx_hash): a record must be matchable",
            k("order_ref")
        )));
    }
    if f.chain.is_none() && chains != 1 {
        return Err(err(format!(
            "{}: required when the provider has more than one chain",
            k("chain")
        )));
    }
    Ok(f)
}

fn resend(key: &str, raw: RawResend) -> Result<ResendSpec, ConfigError> {
    let method = raw.method.trim().to_ascii_uppercase();
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_alphabetic()) {
        return Err(err(format!(
            "{key}.method: {:?} is not an HTTP method",
            raw.method
        )));
    }
    let path = raw
        .path
        .ok_or_else(|| err(format!("{key}.path: required")))?;
    if !path.contains("{id}") {
        return Err(err(format!("{key}.path: must contain {{id}}")));
    }
    Ok(ResendSpec { method, path })
}

mod raw;
#[cfg(test)]
mod tests;
