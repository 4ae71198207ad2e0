//! Read-only access for `payrecon status`: a connection that can neither create nor write
//! (SQLite: no `create_if_missing`, no journal-mode pragma, `PRAGMA query_only`; PostgreSQL:
//! `default_transaction_read_only`), which of the status tables exist, and the lease table
//! (`payrecon_leases`, added by a later migration), read only when it exists.

use std::str::FromStr;

use jiff::Timestamp;

use super::backend::dispatch;
use super::rows::{counted, db_error, sqlite_ts};
use super::status::{LeaseRow, EVENTS, EXCEPTIONS, LEASES, LIST_READS, REQUIRED};
use super::{Store, StoreError};

impl Store {
    /// Connects without creating or writing anything: a SQLite file that does not exist is
    /// an error (not a new empty database), and every statement runs read-only.
    pub async fn connect_read_only(url: &str, max_connections: u32) -> Result<Store, StoreError> {
        if let Some(path) = super::sqlite_file(url) {
            if !path.exists() {
                return Err(StoreError::Invalid(format!(
                    "the SQLite database {} does not exist (a command that only reads never \
                     creates it; `payrecon migrate` does)",
                    path.display()
                )));
            }
        }
        let scheme = url.split_once(':').map(|(s, _)| s).unwrap_or("");
        let max = max_connections.clamp(1, 4);
        match scheme {
            "sqlite" => super::sqlite::connect_read_only(url, max)
                .await
                .map(Store::Sqlite),
            "postgres" | "postgresql" => super::postgres::connect_read_only(url, max)
                .await
                .map(Store::Postgres),
            "mysql" | "mariadb" => super::mysql::connect_read_only(url, max)
                .await
                .map(Store::MySql),
            _ => Store::connect(url, 1).await,
        }
    }

    /// Which of the status tables exist (one query).
    pub(super) async fn payrecon_tables(&self) -> Result<Vec<String>, StoreError> {
        let names: Vec<String> = REQUIRED
            .iter()
            .chain([&LEASES, &EVENTS, &LIST_READS, &EXCEPTIONS])
            .map(|s| s.to_string())
            .collect();
        self.existing_tables(&names).await
    }

    /// Which of the tables `names` exist, in their order (one query).
    pub async fn existing_tables(&self, names: &[String]) -> Result<Vec<String>, StoreError> {
        let rows = dispatch!(self, p => {
            let sql = format!(
                "SELECT t.name FROM {} WHERE {} ORDER BY t.n",
                D::numbered_texts(1, "t"),
                D::table_exists("t.name")
            );
            sqlx::query_as::<_, (String,)>(&sql)
                .bind(D::texts(names))
                .fetch_all(counted(p))
                .await
        });
        Ok(rows
            .map_err(|e| db_error("list the payrecon tables", e))?
            .into_iter()
            .map(|(t,)| t)
            .collect())
    }

    /// How many migrations the schema has had applied (0 for an empty database): `migrate`
    /// says whether it created, upgraded or found the schema current.
    pub async fn applied_migrations(&self) -> Result<i64, StoreError> {
        let table = ["_sqlx_migrations".to_string()];
        if self.existing_tables(&table).await?.is_empty() {
            return Ok(0);
        }
        let n = dispatch!(self, p => {
            let sql = format!("SELECT {} FROM _sqlx_migrations", D::int8("COUNT(*)"));
            sqlx::query_as::<_, (i64,)>(&sql).fetch_one(counted(p)).await
        });
        Ok(n.map_err(|e| db_error("count the applied migrations", e))?
            .0)
    }

    /// How many migrations this binary ships for its backend: a schema with fewer applied
    /// is older than the binary (`payrecon migrate` brings it up to date).
    pub fn shipped_migrations(&self) -> i64 {
        let shipped = match self {
            Store::Sqlite(_) => super::migrate::SQLITE,
            Store::Postgres(_) => super::migrate::POSTGRES,
            Store::MySql(_) => super::migrate::MYSQL,
        };
        i64::try_from(shipped.len()).unwrap_or(i64::MAX)
    }

    /// Every lease, by provider. `expires_at` is read as text whatever its type, then
    /// spelled as RFC 3339 UTC when it reads as a timestamp.
    pub(super) async fn leases(&self) -> Result<Vec<LeaseRow>, StoreError> {
        type T = (String, Option<String>, Option<i64>, Option<String>);
        let rows: Vec<T> = dispatch!(self, p => {
            // `amount_text` is the backend's cast to text, whatever the column's type.
            let sql = format!(
                "SELECT {}, {}, {}, {} FROM payrecon_leases ORDER BY provider",
                D::amount_text("provider"),
                D::amount_text("holder"),
                D::bigint("token"),
                D::amount_text("expires_at")
            );
            sqlx::query_as(&sql).fetch_all(counted(p)).await
        })
        .map_err(|e| db_error("read the leases", e))?;
        Ok(rows
            .into_iter()
            .map(|(provider, holder, token, expires_at)| LeaseRow {
                provider,
                holder,
                token,
                expires_at: expires_at.map(|t| normalize_ts(&t)),
            })
            .collect())
    }
}

/// `2026-11-01 10:00:00.5+00` (PostgreSQL's text) as `2026-11-01T10:00:00.500Z`; text that
/// is not a timestamp is kept as it is.
fn normalize_ts(t: &str) -> String {
    let spelled = if t.len() > 10 && t.as_bytes()[10] == b' ' {
        format!("{}T{}", &t[..10], &t[11..])
    } else {
        t.to_string()
    };
    let with_minutes = match spelled.rfind(['+', '-']) {
        // `+00` -> `+00:00` (an offset of hours only).
        Some(i) if i > 10 && spelled.len() - i == 3 => format!("{spelled}:00"),
        _ => spelled,
    };
    // No offset: a MariaDB/MySQL `DATETIME`, which payrecon keeps in UTC.
    let utc = || {
        jiff::civil::DateTime::from_str(&with_minutes)
            .ok()?
            .to_zoned(jiff::tz::TimeZone::UTC)
            .ok()
            .map(|z| z.timestamp())
    };
    match Timestamp::from_str(&with_minutes).ok().or_else(utc) {
        Some(ts) => sqlite_ts(ts),
        None => t.to_string(),
    }
}

#[cfg(test)]
mod tests;
