//! What a list page is asked for: the exceptions list's query (filters, the search box, the
//! keyset bound), its age choices and the rows per page; read by the handlers (`pages`) and
//! drawn by `view`.

use serde::Deserialize;

/// Rows per page of a list.
pub const PAGE: i64 = 50;

/// `/console/exceptions`' query: filters, the search box, the keyset bound.
#[derive(Debug, Default, Deserialize)]
pub struct ListQuery {
    pub kind: Option<String>,
    pub status: Option<String>,
    pub q: Option<String>,
    /// First seen over this long ago: `1h`, `1d`, `7d` or `30d` (`AGES`).
    pub age: Option<String>,
    pub before: Option<i64>,
}

/// The age filter's choices: the value, what the page says, and the hours.
pub const AGES: [(&str, &str, i64); 4] = [
    ("1h", "over an hour ago", 1),
    ("1d", "over a day ago", 24),
    ("7d", "over a week ago", 24 * 7),
    ("30d", "over 30 days ago", 24 * 30),
];
