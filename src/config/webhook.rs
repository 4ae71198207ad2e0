//! The webhook keys of a provider table (any kind): `webhook_secret` / `webhook_secret_file`
//! enable `POST /webhooks/<name>`; `[providers.<name>.webhook]` sets the signature scheme
//! where the kind or preset does not imply one.

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use super::{duration, err, read_secret_file, ConfigError};
use crate::secret::Secret;

/// How deliveries to `POST /webhooks/<name>` are authenticated and identified.
#[derive(Debug, Clone)]
pub struct WebhookSettings {
    pub secret: Secret,
    /// `qvard`, `paymos`, `chaingateway` or `http`.
    pub scheme: String,
    /// `http` scheme: the signature header.
    pub header: Option<String>,
    /// `http` scheme: `hex` or `base64`.
    pub encoding: String,
    /// `http` scheme: `body` (the raw body) or a JSON pointer to the signed field.
    pub signed: String,
    /// `http` scheme: JSON pointer to the event id (default: the provider's `fields.event_id`).
    pub event_id: Option<String>,
    /// `http` scheme: header carrying a signed Unix timestamp, and how far from now it may be.
    pub timestamp_header: Option<String>,
    pub tolerance: Option<Duration>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWebhook {
    scheme: Option<String>,
    header: Option<String>,
    encoding: Option<String>,
    signed: Option<String>,
    event_id: Option<String>,
    timestamp_header: Option<String>,
    #[serde(default, with = "duration::serde_opt_duration")]
    tolerance: Option<Duration>,
}

/// Removes the webhook keys from a provider's table and reads them. `implied` is the scheme
/// the kind or preset implies (`None` for a generic provider without a preset).
pub(super) fn take(
    name: &str,
    table: &mut toml::Table,
    implied: Option<&str>,
) -> Result<Option<WebhookSettings>, ConfigError> {
    let key = |k: &str| format!("providers.{name}.{k}");
    let secret = table.remove("webhook_secret");
    let secret_file = table.remove("webhook_secret_file");
    let raw = match table.remove("webhook") {
        None => RawWebhook::default(),
        Some(v) => serde_path_to_error::deserialize::<_, RawWebhook>(v).map_err(|e| {
            let path = e.path().to_string();
            err(format!("{}.{path}: {}", key("webhook"), e.into_inner()))
        })?,
    };
    let Some(secret) = webhook_secret(name, secret, secret_file)? else {
        return Ok(None);
    };
    settings(name, raw, implied, secret).map(Some)
}

/// The secret from `webhook_secret` or `webhook_secret_file` (not both; `None` without either).
fn webhook_secret(
    name: &str,
    secret: Option<toml::Value>,
    secret_file: Option<toml::Value>,
) -> Result<Option<Secret>, ConfigError> {
    let key = |k: &str| format!("providers.{name}.{k}");
    let secret = match (secret, secret_file) {
        (Some(_), Some(_)) => {
            return Err(err(format!(
                "{}: set webhook_secret or webhook_secret_file, not both",
                key("webhook_secret")
            )))
        }
        (Some(toml::Value::String(s)), None) => Secret::new(s),
        (Some(_), None) => return Err(err(format!("{}: must be a string", key("webhook_secret")))),
        (None, Some(toml::Value::String(f))) => {
            read_secret_file(&key("webhook_secret_file"), &PathBuf::from(f))?
        }
        (None, Some(_)) => {
            return Err(err(format!(
                "{}: must be a path string",
                key("webhook_secret_file")
            )))
        }
        (None, None) => return Ok(None),
    };
    if secret.expose().is_empty() {
        return Err(err(format!("{}: is empty", key("webhook_secret"))));
    }
    Ok(Some(secret))
}

/// The settings from the `[providers.<name>.webhook]` table, checked key by key.
fn settings(
    name: &str,
    raw: RawWebhook,
    implied: Option<&str>,
    secret: Secret,
) -> Result<WebhookSettings, ConfigError> {
    let key = |k: &str| format!("providers.{name}.{k}");
    let scheme = scheme(name, raw.scheme, implied)?;
    let encoding = raw.encoding.unwrap_or_else(|| "hex".into());
    if !matches!(encoding.as_str(), "hex" | "base64") {
        return Err(err(format!(
            "{}: {encoding:?} is not \"hex\" or \"base64\"",
            key("webhook.encoding")
        )));
    }
    let signed = raw.signed.unwrap_or_else(|| "body".into());
    if signed != "body" && !signed.starts_with('/') {
        return Err(err(format!(
            "{}: {signed:?} is neither \"body\" nor a JSON pointer (\"/txid\")",
            key("webhook.signed")
        )));
    }
    if scheme == "http" && raw.header.as_deref().is_none_or(str::is_empty) {
        return Err(err(format!(
            "{}: required for the \"http\" signature scheme",
            key("webhook.header")
        )));
    }
    if raw.timestamp_header.is_some() != raw.tolerance.is_some() {
        return Err(err(format!(
            "{}: set timestamp_header and tolerance together",
            key("webhook.tolerance")
        )));
    }
    Ok(WebhookSettings {
        secret,
        scheme,
        header: raw.header,
        encoding,
        signed,
        event_id: raw.event_id,
        timestamp_header: raw.timestamp_header,
        tolerance: raw.tolerance,
    })
}

/// The signature scheme: the table's, else the implied one, else `http`; one of the four.
fn scheme(name: &str, set: Option<String>, implied: Option<&str>) -> Result<String, ConfigError> {
    let key = |k: &str| format!("providers.{name}.{k}");
    let scheme = match (set, implied) {
        (Some(s), _) => s,
        (None, Some(s)) => s.to_string(),
        (None, None) => "http".to_string(),
    };
    if !matches!(
        scheme.as_str(),
        "qvard" | "paymos" | "chaingateway" | "http"
    ) {
        return Err(err(format!(
            "{}: {scheme:?} is not one of \"qvard\", \"paymos\", \"chaingateway\", \"http\"",
            key("webhook.scheme")
        )));
    }
    Ok(scheme)
}
