//! The `kind = "http"` provider table as serde reads it (after the preset merge): unknown
//! keys refused, defaults filled in; every other check is in the parent module.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use crate::providers::http::{AmountUnit, StatusAction, TimeFormat};
use crate::secret::Secret;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawHttp {
    pub(super) kind: String,
    /// Read from the table before the merge; here so that it is a known key.
    #[serde(rename = "preset")]
    pub(super) _preset: Option<String>,
    pub(super) base_url: Option<String>,
    pub(super) api_key: Option<Secret>,
    pub(super) api_key_file: Option<PathBuf>,
    #[serde(default = "default_auth_header")]
    pub(super) auth_header: String,
    #[serde(default = "default_auth_scheme")]
    pub(super) auth_scheme: String,
    #[serde(default)]
    pub(super) chains: Vec<String>,
    #[serde(default = "default_timeout", with = "duration_or_zero")]
    pub(super) timeout: Duration,
    #[serde(default = "default_retries")]
    pub(super) max_retries: u32,
    #[serde(default = "default_backoff", with = "duration_or_zero")]
    pub(super) backoff: Duration,
    #[serde(default = "default_concurrency")]
    pub(super) max_concurrency: usize,
    #[serde(default, with = "duration_or_zero")]
    pub(super) retry_window: Duration,
    #[serde(default = "default_amount_unit")]
    pub(super) amount_unit: AmountUnit,
    #[serde(default)]
    pub(super) status_map: BTreeMap<String, StatusAction>,
    pub(super) payments: Option<RawList>,
    pub(super) failed: Option<RawList>,
    #[serde(default)]
    pub(super) fields: RawFields,
    pub(super) resend: Option<RawResend>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawList {
    pub(super) path: Option<String>,
    pub(super) time_format: Option<TimeFormat>,
    pub(super) pagination: Option<Style>,
    pub(super) items: Option<String>,
    pub(super) cursor: Option<String>,
    pub(super) has_more: Option<String>,
    pub(super) first_page: Option<u64>,
    pub(super) limit: Option<u64>,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
pub(super) enum Style {
    Page,
    Cursor,
    Offset,
    Link,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFields {
    pub(super) event_id: Option<String>,
    pub(super) order_ref: Option<String>,
    pub(super) chain: Option<String>,
    pub(super) tx_hash: Option<String>,
    pub(super) log_index: Option<String>,
    pub(super) amount: Option<String>,
    pub(super) asset: Option<String>,
    pub(super) status: Option<String>,
    pub(super) updated_at: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawResend {
    #[serde(default = "default_method")]
    pub(super) method: String,
    pub(super) path: Option<String>,
}

fn default_auth_header() -> String {
    "Authorization".into()
}
fn default_auth_scheme() -> String {
    "Bearer".into()
}
fn default_timeout() -> Duration {
    Duration::from_secs(10)
}
fn default_retries() -> u32 {
    4
}
fn default_backoff() -> Duration {
    Duration::from_millis(200)
}
fn default_concurrency() -> usize {
    4
}
fn default_amount_unit() -> AmountUnit {
    AmountUnit::Base
}
fn default_method() -> String {
    "POST".into()
}

/// Durations as elsewhere (`6m`, `16h`), and `"0"` for none.
mod duration_or_zero {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer};

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let s = String::deserialize(d)?;
        if s.trim() == "0" {
            return Ok(Duration::ZERO);
        }
        crate::config::parse_duration(&s).map_err(serde::de::Error::custom)
    }
}
