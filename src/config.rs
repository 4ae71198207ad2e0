//! Typed configuration (docs/reference.md §2): TOML, then `PAYRECON_<SECTION>__<KEY>`
//! overrides, then `<key>_file` secrets, then validation. Every error names the key.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;

use crate::chain::ChainSettings;
pub use crate::providers::ProviderKind;
use crate::secret::Secret;

mod api;
mod chains;
mod console;
mod duration;
mod events;
pub use api::ApiConfig;
pub use console::{ConsoleConfig, DEFAULT_OPERATORS_FILE};
pub use events::{decode_secret, EventsConfig};
mod http_provider;
pub use http_provider::http_settings_from_toml;
mod provider;
use provider::provider;
mod sections;
mod webhook;
pub use duration::{format_duration, parse_duration, parse_time_arg};
use sections::RawConfig;
pub use sections::{
    AssetConfig, BalancesConfig, DatabaseConfig, HttpConfig, ReconcileConfig, ScheduleConfig,
};
pub use webhook::WebhookSettings;

#[derive(Debug, thiserror::Error)]
#[error("config: {0}")]
pub struct ConfigError(pub String);

/// Why one value (a duration, a time, a secret, a cron expression) does not parse; whoever
/// read it names the key or the flag.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ValueError(String);

impl From<String> for ValueError {
    fn from(s: String) -> ValueError {
        ValueError(s)
    }
}

impl From<&str> for ValueError {
    fn from(s: &str) -> ValueError {
        ValueError(s.to_string())
    }
}

/// `schedule.cron`: six fields, seconds first (croner).
pub fn parse_cron(expr: &str) -> Result<croner::Cron, ConfigError> {
    parse_cron_at("schedule.cron", expr)
}

/// A cron of six fields, seconds first (croner), its error naming `key`.
pub fn parse_cron_at(key: &str, expr: &str) -> Result<croner::Cron, ConfigError> {
    croner::Cron::new(expr)
        .with_seconds_required()
        .parse()
        .map_err(|e| err(format!("{key}: {e}")))
}

fn err(msg: impl Into<String>) -> ConfigError {
    ConfigError(msg.into())
}

/// A configured provider: its kind's settings, and what every kind has.
#[derive(Clone)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    /// How long the provider retries a notification by itself (no resend before).
    pub retry_window: std::time::Duration,
    /// `POST /webhooks/<name>`, when a webhook secret is set.
    pub webhook: Option<WebhookSettings>,
}

impl ProviderConfig {
    pub fn name(&self) -> &str {
        self.kind.name()
    }
    pub fn kind(&self) -> &'static str {
        self.kind.kind_name()
    }
    pub fn chains(&self) -> &[String] {
        self.kind.chains()
    }
    /// The JSON pointer to a record's event id (generic providers).
    pub fn event_id_pointer(&self) -> Option<&str> {
        self.kind.event_id_pointer()
    }
    pub fn secrets(&self) -> Vec<&Secret> {
        let mut v = self.kind.api_keys();
        v.extend(self.webhook.as_ref().map(|w| &w.secret));
        v
    }
}

/// The validated configuration.
#[derive(Clone)]
pub struct Config {
    pub database: DatabaseConfig,
    pub schedule: ScheduleConfig,
    /// `[balances]` and the chains' treasuries (docs/reference.md §2).
    pub balances: BalancesConfig,
    pub listen: SocketAddr,
    pub reconcile: ReconcileConfig,
    pub chains: Vec<ChainSettings>,
    pub assets: BTreeMap<String, AssetConfig>,
    pub providers: Vec<ProviderConfig>,
    /// `[events]` with a `url`: events to the merchant's application are on.
    pub events: Option<EventsConfig>,
    /// The underpaid tolerances, global and per asset (docs/configuration.md, "Amounts").
    pub amounts: crate::domain::AmountPolicy,
    /// `[api]` with a token: the expected-payments API is on (docs/api.md).
    pub api: Option<ApiConfig>,
    /// `[console]` (docs/reference.md §2): where `payrecon operators` keeps the operators.
    pub console: ConsoleConfig,
}

impl Config {
    /// Reads `path`, applies the process environment's overrides, validates.
    /// A relative path in it (the SQLite URL's file, every `*_file`) is relative to the
    /// config file's folder, not to the working directory.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| err(format!("cannot read {}: {e}", path.display())))?;
        let folder = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => Path::new(".").to_path_buf(),
        };
        // Absolute, so that a later change of the working directory changes nothing.
        let folder = std::path::absolute(&folder).unwrap_or(folder);
        Config::from_toml_in(&text, std::env::vars(), Some(&folder))
    }

    /// Parses `text` with the given environment (`PAYRECON_A__B=value` pairs); relative paths
    /// stay as they are (relative to the working directory).
    pub fn from_toml(
        text: &str,
        env: impl Iterator<Item = (String, String)>,
    ) -> Result<Config, ConfigError> {
        Config::from_toml_in(text, env, None)
    }

    /// `from_toml`, with relative paths taken from `folder` when given.
    pub fn from_toml_in(
        text: &str,
        env: impl Iterator<Item = (String, String)>,
        folder: Option<&Path>,
    ) -> Result<Config, ConfigError> {
        let mut table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| err(one_line(&e.to_string())))?;
        apply_env(&mut table, env)?;
        if let Some(folder) = folder {
            relative_to(&mut table, folder);
        }
        let raw: RawConfig =
            serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|e| {
                let path = e.path().to_string();
                let inner = one_line(&e.into_inner().to_string());
                let line = line_of(text, &path)
                    .map(|l| format!(" (line {l})"))
                    .unwrap_or_default();
                err(format!("{path}: {inner}{line}"))
            })?;
        validate(raw, text)
    }

    /// Every secret the process holds, for redaction.
    pub fn secrets(&self) -> Vec<&Secret> {
        let mut v: Vec<&Secret> = self.providers.iter().flat_map(|p| p.secrets()).collect();
        v.push(&self.database.url);
        v.extend(self.events.as_ref().map(|e| &e.secret));
        v.extend(self.api.as_ref().map(|a| &a.token));
        v.extend(self.chains.iter().filter_map(|c| c.api_key.as_ref()));
        v
    }

    pub fn chain(&self, name: &str) -> Option<&ChainSettings> {
        self.chains.iter().find(|c| c.name == name)
    }

    /// What orders may be registered for: the configured chains and `[assets]` tokens.
    pub fn catalog(&self) -> crate::domain::Catalog {
        let chains = self.chains.iter().map(|c| (c.name.clone(), c.kind));
        self.assets
            .keys()
            .fold(crate::domain::Catalog::new(chains), |c, k| {
                c.with_asset_key(k)
            })
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Best-effort line number of the last segment of a dotted key path in the source text.
fn line_of(text: &str, path: &str) -> Option<usize> {
    let last = path.rsplit('.').next()?.trim_matches('"');
    if last.is_empty() || last == "?" {
        return None;
    }
    text.lines()
        .position(|l| l.trim_start().starts_with(last) && l.contains('='))
        .map(|i| i + 1)
}

/// `PAYRECON_DATABASE__URL=…` sets `database.url`; `PAYRECON_PROVIDERS__CG__API_KEY` sets
/// `providers.cg.api_key`. Values parse as TOML literals (numbers, booleans, arrays) where
/// they can, else as strings.
/// Every relative path of `table` made relative to `folder`: the file of an SQLite
/// `database.url`, and the values of keys named `*_file` at any depth, unless systemd gave
/// credentials (`$CREDENTIALS_DIRECTORY`, `LoadCredential=`), where a relative `*_file` is
/// a credential's name (`read_secret_file`).
fn relative_to(table: &mut toml::Table, folder: &Path) {
    let files = std::env::var_os("CREDENTIALS_DIRECTORY").is_none();
    relative_files(table, folder, files);
    let url = table
        .get_mut("database")
        .and_then(toml::Value::as_table_mut)
        .and_then(|d| d.get_mut("url"));
    if let Some(toml::Value::String(url)) = url {
        if let Some(moved) = sqlite_relative_to(url, folder) {
            *url = moved;
        }
    }
}

fn relative_files(table: &mut toml::Table, folder: &Path, files: bool) {
    for (key, value) in table.iter_mut() {
        match value {
            toml::Value::Table(t) => relative_files(t, folder, files),
            toml::Value::String(s)
                if files && key.ends_with("_file") && Path::new(s.as_str()).is_relative() =>
            {
                *s = folder.join(s.as_str()).display().to_string();
            }
            _ => {}
        }
    }
}

/// `sqlite://file.db` (or `sqlite:file.db`, with any `?query`) with a relative file, as the
/// same URL with the file under `folder`; `None` for an absolute file, memory, or another
/// scheme.
fn sqlite_relative_to(url: &str, folder: &Path) -> Option<String> {
    let rest = url.strip_prefix("sqlite:")?;
    let rest = rest.strip_prefix("//").unwrap_or(rest);
    let (file, query) = match rest.split_once('?') {
        Some((f, q)) => (f, Some(q)),
        None => (rest, None),
    };
    if file.is_empty() || file.starts_with(':') || Path::new(file).is_absolute() {
        return None;
    }
    let mut out = format!("sqlite://{}", folder.join(file).display());
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    Some(out)
}

fn apply_env(
    table: &mut toml::Table,
    env: impl Iterator<Item = (String, String)>,
) -> Result<(), ConfigError> {
    for (name, value) in env {
        let Some(rest) = name.strip_prefix("PAYRECON_") else {
            continue;
        };
        if !rest.contains("__") || rest.starts_with("TEST_") {
            continue;
        }
        let path: Vec<String> = rest.split("__").map(|s| s.to_ascii_lowercase()).collect();
        if path.iter().any(|s| s.is_empty()) {
            return Err(err(format!(
                "environment variable {name}: empty key segment"
            )));
        }
        let parsed = format!("v = {value}")
            .parse::<toml::Table>()
            .ok()
            .and_then(|mut t| t.remove("v"))
            .unwrap_or(toml::Value::String(value));
        let mut cur = &mut *table;
        for seg in &path[..path.len() - 1] {
            let entry = cur
                .entry(seg.clone())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            cur = entry
                .as_table_mut()
                .ok_or_else(|| err(format!("environment variable {name}: {seg} is not a table")))?;
        }
        cur.insert(path[path.len() - 1].clone(), parsed);
    }
    Ok(())
}

pub(super) fn read_secret_file(key: &str, path: &Path) -> Result<Secret, ConfigError> {
    let path = match std::env::var_os("CREDENTIALS_DIRECTORY") {
        Some(dir) if path.is_relative() => Path::new(&dir).join(path),
        _ => path.to_path_buf(),
    };
    let text = std::fs::read_to_string(&path)
        .map_err(|e| err(format!("{key}: cannot read {}: {e}", path.display())))?;
    Ok(Secret::new(text.trim_end_matches(['\n', '\r'])))
}
fn validate(mut raw: RawConfig, text: &str) -> Result<Config, ConfigError> {
    let listen = check_scalars(&mut raw)?;
    let chains = raw
        .chains
        .iter()
        .map(|(name, c)| chains::chain(name, c))
        .collect::<Result<Vec<_>, _>>()?;
    let decimals = chains::asset_decimals(&raw)?;
    let amounts = chains::amount_policy(&raw)?;
    let mut providers = Vec::new();
    for (name, table) in std::mem::take(&mut raw.providers) {
        providers.push(provider(&name, table, &raw.chains, text, &decimals)?);
    }
    let events = raw.events.validate()?;
    let api = std::mem::take(&mut raw.api).validate()?;
    let console = std::mem::take(&mut raw.console).validate()?;
    let mut balances = std::mem::take(&mut raw.balances);
    if !balances.cron.is_empty() {
        parse_cron_at("balances.cron", &balances.cron)?;
    }
    for (c, settings) in chains.iter().zip(raw.chains.values()) {
        balances
            .treasury
            .insert(c.name.clone(), chains::treasury(c, &settings.treasury)?);
    }
    Ok(Config {
        balances,
        events,
        api,
        console,
        database: raw.database,
        schedule: raw.schedule,
        listen,
        reconcile: raw.reconcile,
        chains,
        assets: raw.assets,
        providers,
        amounts,
    })
}

/// The schedule, listen address, database and reconcile keys; returns the listen address.
fn check_scalars(raw: &mut RawConfig) -> Result<SocketAddr, ConfigError> {
    croner::Cron::new(&raw.schedule.cron)
        .with_seconds_required()
        .parse()
        .map_err(|e| err(format!("schedule.cron: {e}")))?;
    let listen: SocketAddr = raw.http.listen.parse().map_err(|e| {
        err(format!(
            "http.listen: {:?} is not an address:port ({e})",
            raw.http.listen
        ))
    })?;
    if let Some(f) = raw.database.url_file.take() {
        raw.database.url = read_secret_file("database.url_file", &f)?;
    }
    if raw.database.max_connections == 0 {
        return Err(err("database.max_connections: must be at least 1"));
    }
    if raw.reconcile.lease_ttl < std::time::Duration::from_secs(1) {
        return Err(err("reconcile.lease_ttl: must be at least 1s"));
    }
    if raw.reconcile.batch_size == 0 {
        return Err(err("reconcile.batch_size: must be at least 1"));
    }
    Ok(listen)
}

#[cfg(test)]
mod tests;
