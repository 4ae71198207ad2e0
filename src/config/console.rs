//! `[console]` (docs/reference.md §2): the operator console on `serve`'s listener, off by
//! default; its operators file, written by `payrecon operators add|remove`; or a header a
//! listed proxy sets.

use std::net::IpAddr;
use std::path::PathBuf;

use serde::Deserialize;

use super::{err, ConfigError};

/// Where the operators file is when `[console]` does not say (the package's credentials).
pub const DEFAULT_OPERATORS_FILE: &str = "/etc/payrecon/credentials/operators";

/// The validated `[console]` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsoleConfig {
    pub enabled: bool,
    /// Lines `name:argon2id-hash`.
    pub operators_file: PathBuf,
    /// A header naming the operator, believed only from `trusted_proxies`.
    pub trusted_header: Option<String>,
    pub trusted_proxies: Vec<IpAddr>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawConsole {
    #[serde(default)]
    enabled: bool,
    operators_file: Option<PathBuf>,
    trusted_header: Option<String>,
    #[serde(default)]
    trusted_proxies: Vec<String>,
}

impl RawConsole {
    pub(super) fn validate(self) -> Result<ConsoleConfig, ConfigError> {
        let mut proxies = Vec::with_capacity(self.trusted_proxies.len());
        for (i, p) in self.trusted_proxies.iter().enumerate() {
            let ip = p.trim().parse().map_err(|_| {
                err(format!(
                    "console.trusted_proxies[{i}]: {p:?} is not an IP address"
                ))
            })?;
            proxies.push(ip);
        }
        if let Some(h) = &self.trusted_header {
            if axum::http::HeaderName::from_bytes(h.as_bytes()).is_err() {
                return Err(err(format!(
                    "console.trusted_header: {h:?} is not a header name"
                )));
            }
            if proxies.is_empty() {
                return Err(err(
                    "console.trusted_header: needs console.trusted_proxies (the header is \
                     believed only from them)",
                ));
            }
        }
        Ok(ConsoleConfig {
            enabled: self.enabled,
            operators_file: self
                .operators_file
                .unwrap_or_else(|| PathBuf::from(DEFAULT_OPERATORS_FILE)),
            trusted_header: self.trusted_header,
            trusted_proxies: proxies,
        })
    }
}
