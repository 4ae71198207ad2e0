//! `[api]` (docs/api.md): the token of the expected-payments API on `serve`'s listener. No
//! token: the API is off.

use std::path::PathBuf;

use serde::Deserialize;

use super::{err, read_secret_file, ConfigError};
use crate::secret::Secret;

/// Shortest token accepted: a guessable token would open the ledger to anyone.
const MIN_TOKEN_LEN: usize = 16;

/// The validated `[api]` table (present only when a token is set).
#[derive(Debug, Clone)]
pub struct ApiConfig {
    /// Sent by clients as `Authorization: Bearer <token>`.
    pub token: Secret,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawApi {
    token: Option<Secret>,
    token_file: Option<PathBuf>,
}

impl RawApi {
    pub(super) fn validate(self) -> Result<Option<ApiConfig>, ConfigError> {
        let token = match (self.token, self.token_file) {
            (Some(_), Some(_)) => return Err(err("api.token: set token or token_file, not both")),
            (Some(t), None) => t,
            (None, Some(f)) => read_secret_file("api.token_file", &f)?,
            (None, None) => return Ok(None),
        };
        let t = token.expose();
        if t.len() < MIN_TOKEN_LEN {
            return Err(err(format!(
                "api.token: must be at least {MIN_TOKEN_LEN} characters (openssl rand -hex 32 makes one)"
            )));
        }
        if !t.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(err(
                "api.token: must be printable ASCII without spaces (it is sent in an HTTP header)",
            ));
        }
        Ok(Some(ApiConfig { token }))
    }
}
