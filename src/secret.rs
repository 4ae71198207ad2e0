//! A secret value (API key, webhook secret, database password) that never prints itself.

use std::fmt;

#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: impl Into<String>) -> Self {
        Secret(s.into())
    }
    /// The only way to read the value: call sites that send it somewhere are easy to audit.
    pub fn expose(&self) -> &str {
        &self.0
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// `redact` over owned secrets (a configuration's, an engine's).
pub fn redact_all(text: &str, secrets: &[Secret]) -> String {
    let refs: Vec<&Secret> = secrets.iter().collect();
    redact(text, &refs)
}

/// Replaces every occurrence of each secret in `text` (for error strings from libraries
/// that echo URLs or headers). A secret that is a URL (the database's) is shown whole but for
/// its password and password-like query parameters (`redact_url`), so that a typo in its
/// scheme, host, port or path can be seen; its password alone is masked too.
pub fn redact(text: &str, secrets: &[&Secret]) -> String {
    let mut out = text.to_string();
    for s in secrets {
        let s = s.expose();
        if s.contains("://") {
            out = out.replace(s, &redact_url(s));
            for part in url_secrets(s).into_iter().filter(|p| p.len() >= 4) {
                out = out.replace(&part, "***");
            }
        } else if s.len() >= 4 {
            out = out.replace(s, "***");
        }
    }
    out
}

/// Query parameters whose value is a secret (libpq's and MySQL's spellings, and the like).
fn secret_param(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    [
        "password", "passwd", "pwd", "pass", "secret", "token", "key",
    ]
    .iter()
    .any(|w| n.contains(w))
}

/// The secret parts of a URL: the password of its user information, and the values of its
/// password-like query parameters.
fn url_secrets(url: &str) -> Vec<String> {
    let mut out = Vec::new();
    let Some((_, rest)) = url.split_once("://") else {
        return out;
    };
    let (authority_path, query) = rest.split_once('?').unwrap_or((rest, ""));
    if let Some((userinfo, _)) = authority_path.rsplit_once('@') {
        if let Some((_, pw)) = userinfo.split_once(':') {
            out.push(pw.to_string());
        }
    }
    for pair in query.split('&') {
        if let Some((k, v)) = pair.split_once('=') {
            if secret_param(k) && !v.is_empty() {
                out.push(v.to_string());
            }
        }
    }
    out
}

/// A database URL as it may be shown: whole, but for the password
/// (`postgres://user:pw@host/db` -> `postgres://user:***@host/db`) and the values of
/// password-like query parameters (`?password=…`, `?sslpassword=…`).
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (authority_path, query) = match rest.split_once('?') {
        Some((a, q)) => (a, Some(q)),
        None => (rest, None),
    };
    let mut out = match authority_path.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
            None => format!("{scheme}://{authority_path}"),
        },
        None => format!("{scheme}://{authority_path}"),
    };
    if let Some(q) = query {
        let pairs: Vec<String> = q
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((k, v)) if secret_param(k) && !v.is_empty() => format!("{k}=***"),
                _ => pair.to_string(),
            })
            .collect();
        out.push('?');
        out.push_str(&pairs.join("&"));
    }
    out
}

impl<'de> serde::Deserialize<'de> for Secret {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Secret)
    }
}

#[cfg(test)]
mod tests;
