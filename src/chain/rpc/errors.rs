//! What a failed chain RPC attempt means (retry or not), how it reads, and URLs shown
//! without credentials.

use alloy::transports::{RpcError, TransportError, TransportErrorKind};

/// Whether a failed attempt may succeed when sent again (or to another URL).
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Retry {
    Yes,
    No,
}

pub(super) fn classify(e: &TransportError) -> Retry {
    match e {
        RpcError::Transport(kind) => match kind {
            TransportErrorKind::HttpError(h) if h.status >= 500 || h.status == 429 => Retry::Yes,
            TransportErrorKind::HttpError(_) => Retry::No,
            // Connection refused/reset, timeouts, a body cut short, a missing batch entry.
            TransportErrorKind::Custom(_)
            | TransportErrorKind::BackendGone
            | TransportErrorKind::MissingBatchResponse(_) => Retry::Yes,
            _ => Retry::No,
        },
        RpcError::ErrorResp(p) if is_rate_limit(p.code, &p.message) => Retry::Yes,
        _ => Retry::No,
    }
}

/// JSON-RPC errors that say "slow down" rather than "no".
pub(super) fn is_rate_limit(code: i64, message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    code == 429 || code == -32005 || m.contains("rate limit") || m.contains("too many requests")
}

/// The error with its sources ("error sending request: connection refused").
pub(super) fn describe(e: &TransportError) -> String {
    match e {
        RpcError::Transport(TransportErrorKind::HttpError(h)) => {
            format!("HTTP {}: {}", h.status, h.body.trim())
        }
        RpcError::ErrorResp(p) => format!("JSON-RPC error {}: {}", p.code, p.message),
        other => {
            let mut text = other.to_string();
            let mut source = std::error::Error::source(other);
            while let Some(s) = source {
                let s_text = s.to_string();
                if !text.contains(&s_text) {
                    text.push_str(": ");
                    text.push_str(&s_text);
                }
                source = s.source();
            }
            text
        }
    }
}

/// `scheme://host:port` of a URL, with `/…` when it has a path: no user, password, path or
/// query (providers put API keys in paths: `https://mainnet.infura.io/v3/<key>`).
pub fn shown_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return "<not a URL>".into();
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let tail = &rest[end..];
    let more = if tail.is_empty() || tail == "/" {
        ""
    } else {
        "/…"
    };
    format!("{scheme}://{host}{more}")
}

/// The password in `scheme://user:password@host/...`, if any.
pub(super) fn url_password(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split('/').next()?;
    let userinfo = authority.rsplit_once('@')?.0;
    let pw = userinfo.split_once(':')?.1;
    (!pw.is_empty()).then(|| pw.to_string())
}

#[cfg(test)]
mod tests;
