//! Walking a list page by page: URL templates with placeholders, the four pagination styles,
//! RFC 8288 `Link` headers, and the guard against a provider that pages in a circle.
//! No IO: the client fetches, this decides what to fetch next.

use std::collections::HashSet;

use reqwest::Url;
use serde_json::Value;

use super::settings::{ListSpec, Pagination, TimeFormat};
use crate::providers::Reason;

/// More pages than this in one list is taken for a provider that loops, not a list to walk.
pub(super) const MAX_PAGES: u64 = 100_000;

/// Percent-encodes everything but RFC 3986 unreserved characters (so a value is safe in a
/// path segment and in a query string alike).
pub(super) fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Replaces each `{name}` of `vars` in `template` with its percent-encoded value.
pub(super) fn fill(template: &str, vars: &[(&str, String)]) -> String {
    let mut out = template.to_string();
    for (name, value) in vars {
        out = out.replace(&format!("{{{name}}}"), &encode(value));
    }
    out
}

/// `base` + `path` (`path` relative to it, with or without a leading `/`).
pub(super) fn join(base: &str, path: &str) -> Result<Url, Reason> {
    let url = format!(
        "{}/{}",
        base.trim_end_matches('/'),
        path.trim_start_matches('/')
    );
    Url::parse(&url).map_err(|e| Reason(format!("{url:?} is not a URL: {e}")))
}

/// The target of the first `rel="next"` link among `Link` header values, if any.
pub(super) fn link_next<'a>(values: impl IntoIterator<Item = &'a str>) -> Option<String> {
    for value in values {
        let mut rest = value;
        while let Some(open) = rest.find('<') {
            let after = &rest[open + 1..];
            let close = after.find('>')?;
            let target = &after[..close];
            let params_end = after[close + 1..]
                .find('<')
                .map_or(after.len(), |i| close + 1 + i);
            let params = &after[close + 1..params_end];
            let is_next = params.split(';').any(|p| {
                let Some((k, v)) = p.split_once('=') else {
                    return false;
                };
                k.trim().eq_ignore_ascii_case("rel")
                    && v.trim()
                        .trim_matches('"')
                        .split_whitespace()
                        .any(|r| r.eq_ignore_ascii_case("next"))
            });
            if is_next {
                return Some(target.trim().to_string());
            }
            rest = &after[params_end..];
        }
    }
    None
}

/// What a page body (and its headers) says about the next page, read by the client while the
/// page is read (an unreadable hint is a page error, retried like a bad body).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Hint {
    /// Page style: `has_more`, when configured and given.
    HasMore(Option<bool>),
    /// Cursor style: the next cursor (`None`: done).
    Cursor(Option<String>),
    /// Link style: the `rel="next"` target (`None`: done).
    Link(Option<String>),
    /// Offset style needs only the item count.
    None,
}

/// Reads the hint for `pagination` from a page.
pub(super) fn read_hint(
    pagination: &Pagination,
    body: &Value,
    link: Option<String>,
) -> Result<Hint, Reason> {
    Ok(match pagination {
        Pagination::Page { has_more, .. } => match has_more.as_deref().map(|p| body.pointer(p)) {
            None | Some(None) | Some(Some(Value::Null)) => Hint::HasMore(None),
            Some(Some(Value::Bool(b))) => Hint::HasMore(Some(*b)),
            Some(Some(other)) => {
                return Err(Reason(format!(
                    "has_more ({}) is not a boolean: {other}",
                    has_more.as_deref().unwrap_or_default()
                )))
            }
        },
        Pagination::Cursor { next } => match body.pointer(next) {
            None | Some(Value::Null) => Hint::Cursor(None),
            Some(Value::String(s)) if s.is_empty() => Hint::Cursor(None),
            Some(Value::String(s)) => Hint::Cursor(Some(s.clone())),
            Some(Value::Number(n)) => Hint::Cursor(Some(n.to_string())),
            Some(other) => return Err(Reason(format!("cursor ({next}) is not a string: {other}"))),
        },
        Pagination::Link => Hint::Link(link),
        Pagination::Offset { .. } => Hint::None,
    })
}

/// Where the walk stands.
enum Position {
    Page(u64),
    Cursor(String),
    Offset(u64),
    Link(Url),
}

/// One walk through one list for one window.
pub(super) struct Walker<'a> {
    spec: &'a ListSpec,
    base: &'a str,
    times: Vec<(&'static str, String)>,
    position: Option<Position>,
    pages: u64,
    /// Cursors or next URLs already followed: a repeat means the provider loops.
    seen: HashSet<String>,
}

impl<'a> Walker<'a> {
    pub(super) fn new(
        spec: &'a ListSpec,
        base: &'a str,
        since: jiff::Timestamp,
        until: jiff::Timestamp,
    ) -> Self {
        let rfc = |t: jiff::Timestamp| t.to_string();
        let unix = |t: jiff::Timestamp| t.as_second().to_string();
        let (s, u) = match spec.time_format {
            TimeFormat::Rfc3339 => (rfc(since), rfc(until)),
            TimeFormat::Unix => (unix(since), unix(until)),
        };
        let times = vec![
            ("since", s),
            ("until", u),
            ("since_unix", unix(since)),
            ("until_unix", unix(until)),
            ("since_rfc3339", rfc(since)),
            ("until_rfc3339", rfc(until)),
        ];
        let position = match &spec.pagination {
            Pagination::Page { first, .. } => Position::Page(*first),
            Pagination::Cursor { .. } => Position::Cursor(String::new()),
            Pagination::Offset { .. } => Position::Offset(0),
            // Placeholder: the first URL comes from the template.
            Pagination::Link => Position::Offset(0),
        };
        Walker {
            spec,
            base,
            times,
            position: Some(position),
            pages: 0,
            seen: HashSet::new(),
        }
    }

    /// Pages read so far.
    pub(super) fn pages_read(&self) -> u64 {
        self.pages
    }

    /// The next page's URL; `Ok(None)` when the list is done.
    pub(super) fn url(&self) -> Result<Option<Url>, Reason> {
        let Some(position) = &self.position else {
            return Ok(None);
        };
        let (page, cursor, offset) = match position {
            Position::Link(url) => return Ok(Some(url.clone())),
            Position::Page(n) => (*n, String::new(), 0),
            Position::Cursor(c) => (0, c.clone(), 0),
            Position::Offset(o) => (0, String::new(), *o),
        };
        let limit = match self.spec.pagination {
            Pagination::Offset { limit } => limit,
            _ => 0,
        };
        let mut vars = self.times.clone();
        vars.extend([
            ("page", page.to_string()),
            ("cursor", cursor),
            ("offset", offset.to_string()),
            ("limit", limit.to_string()),
        ]);
        join(self.base, &fill(&self.spec.path, &vars)).map(Some)
    }

    /// Moves past the page just read (at `current`, with `items` items and `hint`). An error
    /// means the provider loops: the list fails.
    pub(super) fn advance(
        &mut self,
        current: &Url,
        items: usize,
        hint: Hint,
    ) -> Result<(), Reason> {
        self.pages += 1;
        let next = match (self.position.take(), hint, &self.spec.pagination) {
            (Some(Position::Page(n)), Hint::HasMore(more), _) => {
                let done = items == 0 || more == Some(false);
                (!done).then(|| Position::Page(n + 1))
            }
            (_, Hint::Cursor(next), _) => next.map(Position::Cursor),
            (Some(Position::Offset(o)), Hint::None, Pagination::Offset { limit }) => {
                let done = (items as u64) < *limit || items == 0;
                (!done).then(|| Position::Offset(o + items as u64))
            }
            (_, Hint::Link(None), _) => None,
            (_, Hint::Link(Some(target)), _) => {
                Some(Position::Link(current.join(&target).map_err(|e| {
                    format!("Link rel=\"next\" {target:?} is not a URL: {e}")
                })?))
            }
            _ => None,
        };
        let key = match &next {
            Some(Position::Cursor(c)) => Some(format!("cursor {c:?}")),
            Some(Position::Link(u)) => Some(format!("next link {u}")),
            _ => None,
        };
        if next.is_some() && self.pages >= MAX_PAGES {
            return Err(Reason(format!(
                "more than {MAX_PAGES} pages: the provider seems to page in a circle"
            )));
        }
        if let Some(key) = key {
            if !self.seen.insert(key.clone()) {
                return Err(Reason(format!(
                    "the provider sent {key} twice: it pages in a circle"
                )));
            }
        }
        self.position = next;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
