//! Shared test helpers: fresh databases and waits; the anvil driver and the skip-or-fail rule
//! are `payrecon_testkit`'s (one harness for tests, simulator and benchmarks).
#![allow(dead_code)]

use std::net::TcpListener;
use std::time::{Duration, Instant};

/// Writes `state` directly, as the merchant's own handler may: no rank check, no audit row.
/// Test support only: payrecon itself has no way around invariant 1. Whether a row changed.
pub async fn set_state_raw(
    store: &payrecon::store::Store,
    order_ref: &str,
    state: payrecon::domain::State,
) -> Result<bool, sqlx::Error> {
    let sql = match store {
        payrecon::store::Store::Postgres(_) => "UPDATE orders SET state = $1 WHERE order_ref = $2",
        _ => "UPDATE orders SET state = ? WHERE order_ref = ?",
    };
    let n = payrecon_testkit::on_pool!(store, p => sqlx::query(sql)
            .bind(state.as_str())
            .bind(order_ref)
            .execute(p)
            .await?
            .rows_affected());
    Ok(n == 1)
}

pub use payrecon_testkit::anvil::Anvil;
pub use payrecon_testkit::env::{backend_selected, skip, strict};
use payrecon_testkit::scratch::{self, Place};

/// A fresh SQLite database file in a temp dir (kept alive by the returned guard).
pub fn sqlite_url() -> (tempfile::TempDir, String) {
    let dir = payrecon_testkit::tmp::dir().expect("temp dir");
    let url = format!("sqlite://{}", dir.path().join("ledger.db").display());
    (dir, url)
}

/// A fresh schema or database named `payrecon_t_…` on the server of `var`, or None: skipped
/// without it, or not chosen (`PAYRECON_TEST_BACKENDS` without `backend`).
async fn scratch_on(var: &str, backend: &str, what: &str, place: Place) -> Option<String> {
    if !backend_selected(backend) {
        return None;
    }
    let Ok(admin) = std::env::var(var) else {
        skip(&format!("{var} is not set ({what} tests)"));
        return None;
    };
    let made = scratch::create(&admin, "payrecon_t", place).await;
    Some(
        made.unwrap_or_else(|e| panic!("a fresh {place:?} on {var}: {e}"))
            .url,
    )
}

/// A fresh PostgreSQL schema for this test (tables created there through `search_path`), or
/// None (skipped) without PAYRECON_TEST_PG_URL.
pub async fn pg_url() -> Option<String> {
    scratch_on(
        "PAYRECON_TEST_PG_URL",
        "postgres",
        "PostgreSQL",
        Place::Schema,
    )
    .await
}

/// A fresh PostgreSQL database (for tests that take the whole database away).
pub async fn pg_database_url() -> Option<String> {
    scratch_on(
        "PAYRECON_TEST_PG_URL",
        "postgres",
        "PostgreSQL",
        Place::Database,
    )
    .await
}

/// A fresh MariaDB/MySQL database on `PAYRECON_TEST_MYSQL_URL`'s server, or None (skipped)
/// without it. A database per test: MySQL's schema is its database.
pub async fn mysql_url() -> Option<String> {
    scratch_on(
        "PAYRECON_TEST_MYSQL_URL",
        "mysql",
        "MariaDB/MySQL",
        Place::Database,
    )
    .await
}

/// SQLite and PostgreSQL (when available): only for the tests of SQLite's and PostgreSQL's
/// older migrations (MariaDB/MySQL has one). Each when chosen (`backend_selected`). The
/// guard keeps the SQLite file.
pub async fn backends() -> (tempfile::TempDir, Vec<String>) {
    let (dir, sqlite) = sqlite_url();
    let mut urls = Vec::new();
    if backend_selected("sqlite") {
        urls.push(sqlite);
    }
    if let Some(pg) = pg_url().await {
        urls.push(pg);
    }
    (dir, urls)
}

/// How many backends the tests run their arms on: the three, or those
/// `PAYRECON_TEST_BACKENDS` chooses.
pub fn backends_chosen() -> usize {
    ["sqlite", "postgres", "mysql"]
        .into_iter()
        .filter(|b| backend_selected(b))
        .count()
}

/// Every backend: SQLite, PostgreSQL and MariaDB/MySQL when available, each when chosen.
pub async fn all_backends() -> (tempfile::TempDir, Vec<String>) {
    let (dir, mut urls) = backends().await;
    if let Some(my) = mysql_url().await {
        urls.push(my);
    }
    (dir, urls)
}

/// A loopback port free now, for a child process to listen on. Drawn below Linux's ephemeral
/// range (32768–60999), which the kernel hands to outgoing connections and to `bind(0)`:
/// a port from that range may be taken by another test's connection between this pick and
/// the child's bind.
pub fn free_port() -> u16 {
    use rand::Rng;
    let mut rng = rand::thread_rng();
    for _ in 0..1000 {
        let port = rng.gen_range(20_000..32_000);
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port in 20000..32000")
}

/// Waits for a condition with a deadline (no sleeps for ordering).
pub async fn wait_until<F, Fut>(what: &str, timeout: Duration, mut f: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    while !f().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Runs one statement on the store's own pool (a test's direct write, as the merchant's code
/// would make it).
pub async fn exec(store: &payrecon::store::Store, sql: &str) {
    payrecon_testkit::on_pool!(store, p => sqlx::query(sql).execute(p).await.map(|_| ()))
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
}
