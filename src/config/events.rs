//! `[events]` (docs/reference.md §6): where payrecon delivers the events of the transitions it
//! applies, signed with a Standard Webhooks secret. No `url`: events are off.

use std::path::PathBuf;
use std::time::Duration;

use base64::Engine as _;
use serde::Deserialize;

use super::{duration, err, read_secret_file, ConfigError};
use crate::secret::Secret;

/// The validated `[events]` table (present only when `url` is set).
#[derive(Debug, Clone)]
pub struct EventsConfig {
    pub url: String,
    /// `whsec_` + base64 of 24-64 bytes.
    pub secret: Secret,
    /// Per attempt.
    pub timeout: Duration,
    /// Deliveries in flight (never two of one order).
    pub max_concurrency: usize,
    /// The delay before each retry; the attempt after the last one failing makes it dead.
    pub retry_schedule: Vec<Duration>,
    /// How long `run` keeps delivering before it exits.
    pub flush_timeout: Duration,
    /// Delivered events older than this may be deleted by `serve`.
    pub retention: Duration,
}

impl EventsConfig {
    /// The HMAC key: the base64-decoded part of the secret after `whsec_` (validated at load).
    pub fn key(&self) -> Vec<u8> {
        decode_secret(self.secret.expose()).unwrap_or_default()
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawEvents {
    url: Option<String>,
    secret: Option<Secret>,
    secret_file: Option<PathBuf>,
    #[serde(default = "default_timeout", with = "duration::serde_duration")]
    timeout: Duration,
    #[serde(default = "default_concurrency")]
    max_concurrency: usize,
    #[serde(default)]
    retry_schedule: Option<Vec<String>>,
    #[serde(default = "default_flush", with = "duration::serde_duration")]
    flush_timeout: Duration,
    #[serde(default = "default_retention", with = "duration::serde_duration")]
    retention: Duration,
}

impl Default for RawEvents {
    fn default() -> Self {
        RawEvents {
            url: None,
            secret: None,
            secret_file: None,
            timeout: default_timeout(),
            max_concurrency: default_concurrency(),
            retry_schedule: None,
            flush_timeout: default_flush(),
            retention: default_retention(),
        }
    }
}

fn default_timeout() -> Duration {
    Duration::from_secs(15)
}
fn default_concurrency() -> usize {
    8
}
fn default_flush() -> Duration {
    Duration::from_secs(10)
}
fn default_retention() -> Duration {
    Duration::from_secs(30 * 86_400)
}

/// The default schedule (docs/reference.md §2, `[events]`): nine retries over about three days.
pub const DEFAULT_RETRY_SCHEDULE: [&str; 9] =
    ["5s", "5m", "30m", "2h", "5h", "10h", "14h", "20h", "24h"];

/// The HMAC key of a `whsec_` secret, or why it is not one.
pub fn decode_secret(secret: &str) -> Result<Vec<u8>, super::ValueError> {
    let Some(b64) = secret.strip_prefix("whsec_") else {
        return Err("must start with whsec_ (a Standard Webhooks secret)".into());
    };
    let key = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .map_err(|_| "the part after whsec_ is not base64".to_string())?;
    if !(24..=64).contains(&key.len()) {
        return Err(format!(
            "the key after whsec_ is {} bytes; it must be 24 to 64",
            key.len()
        )
        .into());
    }
    Ok(key)
}

impl RawEvents {
    pub(super) fn validate(self) -> Result<Option<EventsConfig>, ConfigError> {
        let secret = match (self.secret, &self.secret_file) {
            (Some(_), Some(_)) => {
                return Err(err("events.secret: set secret or secret_file, not both"))
            }
            (Some(s), None) => Some(s),
            (None, Some(f)) => Some(read_secret_file("events.secret_file", f)?),
            (None, None) => None,
        };
        let key = if self.secret_file.is_some() {
            "events.secret_file"
        } else {
            "events.secret"
        };
        if let Some(s) = &secret {
            // The reason never quotes the secret.
            decode_secret(s.expose()).map_err(|why| err(format!("{key}: {why}")))?;
        }
        if self.max_concurrency == 0 {
            return Err(err("events.max_concurrency: must be at least 1"));
        }
        if self.timeout.is_zero() {
            return Err(err("events.timeout: must be more than 0s"));
        }
        let schedule = match self.retry_schedule {
            None => DEFAULT_RETRY_SCHEDULE
                .iter()
                .filter_map(|d| duration::parse_duration(d).ok())
                .collect(),
            Some(list) => list
                .iter()
                .enumerate()
                .map(|(i, d)| {
                    duration::parse_duration(d)
                        .map_err(|e| err(format!("events.retry_schedule[{i}]: {e}")))
                })
                .collect::<Result<Vec<_>, _>>()?,
        };
        let Some(url) = self.url else {
            return Ok(None);
        };
        let parsed = reqwest::Url::parse(&url).map_err(|e| {
            err(format!(
                "events.url: {} is not a URL ({e})",
                crate::secret::redact_url(&url)
            ))
        })?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
            return Err(err(format!(
                "events.url: {} is not an http:// or https:// URL",
                crate::secret::redact_url(&url)
            )));
        }
        let Some(secret) = secret else {
            return Err(err(
                "events.secret: required when events.url is set (or events.secret_file)",
            ));
        };
        Ok(Some(EventsConfig {
            url,
            secret,
            timeout: self.timeout,
            max_concurrency: self.max_concurrency,
            retry_schedule: schedule,
            flush_timeout: self.flush_timeout,
            retention: self.retention,
        }))
    }
}
