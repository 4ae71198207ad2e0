//! A fresh place for one ledger on a PostgreSQL or MariaDB/MySQL server, and its drop: the
//! integration tests' per-test schemas and databases, the simulator's per-seed ones and the
//! benchmarks' per-run databases all come from here.
//!
//! On PostgreSQL a test takes a schema (`Place::Schema`, reached through `search_path`):
//! creating and dropping one is cheap, where each `DROP DATABASE` costs a checkpoint. A test
//! that takes the whole database away asks for `Place::Database`. On MariaDB/MySQL a schema is
//! a database, so both are a database.

use sqlx::Connection;

/// What to create on a PostgreSQL server (MariaDB/MySQL: always a database).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    Schema,
    Database,
}

/// A created schema or database: the URL that opens it, and what `drop` needs.
#[derive(Debug, Clone)]
pub struct Scratch {
    /// The URL a store connects to: the server's URL reaching the new schema or database.
    pub url: String,
    /// The server's URL as given (the administrative connection).
    pub admin: String,
    pub name: String,
    place: Place,
}

fn is_mysql(url: &str) -> bool {
    url.starts_with("mysql:") || url.starts_with("mariadb:")
}

/// Names the running test in the file `PAYRECON_TEST_MYSQL_REACHED` names (when set), a line
/// `<test binary> <test name>`: CI's first pass lists the tests that reach MariaDB/MySQL, and
/// its second pass, on MySQL, runs those only (`.ci/run`). A test runs in a process of its own
/// under nextest, which names it on the command line.
fn record_mysql_test() {
    use std::io::Write as _;
    let Some(file) = std::env::var_os("PAYRECON_TEST_MYSQL_REACHED") else {
        return;
    };
    let binary = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .map(|s| s.rsplit_once('-').map_or(s.clone(), |(b, _)| b.to_string()))
        .unwrap_or_default();
    let Some(test) = std::env::args().skip(1).find(|a| !a.starts_with('-')) else {
        return;
    };
    // One short write in append mode: lines of concurrent tests do not interleave.
    let line = format!("{binary} {test}\n");
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&file)
        .and_then(|mut f| f.write_all(line.as_bytes()));
    if let Err(e) = written {
        panic!("recording the test in {}: {e}", file.to_string_lossy());
    }
}

/// `url` with its database (the path) replaced by `name`, its query kept.
fn with_database(url: &str, name: &str) -> String {
    let (prefix, query) = match url.split_once('?') {
        Some((p, q)) => (p, format!("?{q}")),
        None => (url, String::new()),
    };
    let (server, _) = prefix.rsplit_once('/').expect("a database URL has a path");
    format!("{server}/{name}{query}")
}

/// Creates a schema or database named `<prefix>_<random>` on the server of `admin`.
pub async fn create(admin: &str, prefix: &str, place: Place) -> Result<Scratch, sqlx::Error> {
    let name = format!("{prefix}_{}", uuid::Uuid::new_v4().simple());
    if is_mysql(admin) {
        record_mysql_test();
    }
    let place = if is_mysql(admin) {
        Place::Database
    } else {
        place
    };
    let (sql, url) = match place {
        Place::Database => (
            format!("CREATE DATABASE {name}"),
            with_database(admin, &name),
        ),
        Place::Schema => {
            let sep = if admin.contains('?') { '&' } else { '?' };
            (
                format!("CREATE SCHEMA {name}"),
                format!("{admin}{sep}options=-c%20search_path%3D{name}"),
            )
        }
    };
    execute(admin, &sql).await?;
    Ok(Scratch {
        url,
        admin: admin.to_string(),
        name,
        place,
    })
}

impl Scratch {
    /// Drops the schema or database, with everything in it.
    pub async fn drop(&self) -> Result<(), sqlx::Error> {
        let name = &self.name;
        let sql = match (self.place, is_mysql(&self.admin)) {
            (Place::Schema, _) => format!("DROP SCHEMA IF EXISTS {name} CASCADE"),
            (Place::Database, true) => format!("DROP DATABASE IF EXISTS {name}"),
            (Place::Database, false) => format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
        };
        execute(&self.admin, &sql).await
    }
}

/// One statement on a connection of its own to the server of `url`.
async fn execute(url: &str, sql: &str) -> Result<(), sqlx::Error> {
    if is_mysql(url) {
        let mut conn = sqlx::MySqlConnection::connect(url).await?;
        sqlx::query(sql).execute(&mut conn).await?;
        conn.close().await
    } else {
        let mut conn = sqlx::PgConnection::connect(url).await?;
        sqlx::query(sql).execute(&mut conn).await?;
        conn.close().await
    }
}

#[cfg(test)]
mod tests {
    use super::with_database;

    #[test]
    fn the_database_is_replaced_and_the_query_kept() {
        assert_eq!(
            with_database("mysql://root@127.0.0.1:3306/test", "x"),
            "mysql://root@127.0.0.1:3306/x"
        );
        assert_eq!(
            with_database("postgres://u@h/db?sslmode=disable", "x"),
            "postgres://u@h/x?sslmode=disable"
        );
    }
}
