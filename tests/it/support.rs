//! Shared test helpers: fresh databases, an anvil node, skip-or-fail for missing services.
#![allow(dead_code)]

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// Writes `state` directly, as the merchant's own handler may: no rank check, no audit row.
/// Test support only: payrecon itself has no way around invariant 1. Whether a row changed.
pub async fn set_state_raw(
    store: &payrecon::store::Store,
    order_ref: &str,
    state: payrecon::domain::State,
) -> Result<bool, sqlx::Error> {
    use payrecon::store::Store;
    let sql = "UPDATE orders SET state = $1 WHERE order_ref = $2";
    let n = match store {
        Store::Sqlite(p) => sqlx::query(sql)
            .bind(state.as_str())
            .bind(order_ref)
            .execute(p)
            .await?
            .rows_affected(),
        Store::Postgres(p) => sqlx::query(sql)
            .bind(state.as_str())
            .bind(order_ref)
            .execute(p)
            .await?
            .rows_affected(),
    };
    Ok(n == 1)
}

/// `PAYRECON_TEST_STRICT=1`: a missing service fails the test instead of skipping it.
pub fn strict() -> bool {
    std::env::var("PAYRECON_TEST_STRICT").is_ok_and(|v| v == "1")
}

/// Prints why a test is skipped, or panics under strict mode.
pub fn skip(reason: &str) {
    if strict() {
        panic!("PAYRECON_TEST_STRICT=1 and {reason}");
    }
    eprintln!("SKIPPED: {reason}");
}

/// A fresh SQLite database file in a temp dir (kept alive by the returned guard).
pub fn sqlite_url() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}", dir.path().join("ledger.db").display());
    (dir, url)
}

/// The admin URL, a connection to it, and a fresh name; None (skipped) without
/// PAYRECON_TEST_PG_URL.
async fn pg_admin() -> Option<(String, sqlx::PgConnection, String)> {
    use sqlx::Connection;
    let Ok(base) = std::env::var("PAYRECON_TEST_PG_URL") else {
        skip("PAYRECON_TEST_PG_URL is not set (PostgreSQL tests)");
        return None;
    };
    let conn = sqlx::PgConnection::connect(&base)
        .await
        .expect("connect to PAYRECON_TEST_PG_URL");
    let name = format!("payrecon_t_{}", uuid::Uuid::new_v4().simple());
    Some((base, conn, name))
}

/// A fresh PostgreSQL schema for this test (tables created there through `search_path`), or
/// None (skipped) without PAYRECON_TEST_PG_URL. Schemas, not databases: creating and dropping
/// them is cheap, where each DROP DATABASE costs a checkpoint.
pub async fn pg_url() -> Option<String> {
    let (base, mut conn, name) = pg_admin().await?;
    sqlx::query(&format!("CREATE SCHEMA {name}"))
        .execute(&mut conn)
        .await
        .expect("create test schema");
    let sep = if base.contains('?') { '&' } else { '?' };
    Some(format!("{base}{sep}options=-c%20search_path%3D{name}"))
}

/// A fresh PostgreSQL database (for tests that take the whole database away).
pub async fn pg_database_url() -> Option<String> {
    let (base, mut conn, name) = pg_admin().await?;
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&mut conn)
        .await
        .expect("create test database");
    let (prefix, _) = base.rsplit_once('/').expect("database url has a path");
    Some(format!("{prefix}/{name}"))
}

/// Both backends: SQLite always, PostgreSQL when available. The guard keeps the SQLite file.
pub async fn backends() -> (tempfile::TempDir, Vec<String>) {
    let (dir, sqlite) = sqlite_url();
    let mut urls = vec![sqlite];
    if let Some(pg) = pg_url().await {
        urls.push(pg);
    }
    (dir, urls)
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A real anvil node on a free loopback port; killed on drop.
pub struct Anvil {
    child: Child,
    pub url: String,
}

impl Drop for Anvil {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Anvil {
    /// Starts anvil (`ANVIL_BIN`) with automine; None (skipped) when ANVIL_BIN is not set.
    pub async fn start() -> Option<Anvil> {
        Anvil::start_with(&[]).await
    }

    pub async fn start_with(extra: &[&str]) -> Option<Anvil> {
        let Ok(bin) = std::env::var("ANVIL_BIN") else {
            skip("ANVIL_BIN is not set (anvil tests)");
            return None;
        };
        // The port is free when picked but may be taken before anvil binds it (by another
        // test's server): then anvil exits, or something else answers; try another port.
        for _ in 0..5 {
            let port = free_port();
            let child = Command::new(&bin)
                .args([
                    "--host",
                    "127.0.0.1",
                    "--port",
                    &port.to_string(),
                    "--silent",
                ])
                .args(extra)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn anvil");
            let mut anvil = Anvil {
                child,
                url: format!("http://127.0.0.1:{port}"),
            };
            let deadline = Instant::now() + Duration::from_secs(20);
            loop {
                if anvil.child.try_wait().ok().flatten().is_some() {
                    break; // could not bind
                }
                if let Ok(v) = anvil.try_rpc("web3_clientVersion", json!([])).await {
                    if v.as_str()
                        .is_some_and(|s| s.to_ascii_lowercase().starts_with("anvil"))
                    {
                        return Some(anvil);
                    }
                    break; // another server holds the port; dropping ours kills it
                }
                assert!(
                    Instant::now() < deadline,
                    "anvil did not answer within 20 s"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        panic!("anvil did not start on any of 5 free ports");
    }

    pub async fn try_rpc(&self, method: &str, params: Value) -> Result<Value, String> {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let resp = reqwest::Client::new()
            .post(&self.url)
            .json(&body)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let v: Value = resp.json().await.map_err(|e| e.to_string())?;
        match v.get("error") {
            Some(e) => Err(e.to_string()),
            None => Ok(v["result"].clone()),
        }
    }

    /// A JSON-RPC call that must succeed.
    pub async fn rpc(&self, method: &str, params: Value) -> Value {
        self.try_rpc(method, params.clone())
            .await
            .unwrap_or_else(|e| panic!("{method} {params}: {e}"))
    }

    /// Mines `n` blocks.
    pub async fn mine(&self, n: u64) {
        self.rpc("anvil_mine", json!([format!("0x{n:x}")])).await;
    }

    /// Polls for a receipt (a send can answer before its block exists).
    pub async fn receipt(&self, tx: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let r = self.rpc("eth_getTransactionReceipt", json!([tx])).await;
            if !r.is_null() {
                return r;
            }
            assert!(Instant::now() < deadline, "no receipt for {tx}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub async fn accounts(&self) -> Vec<String> {
        let v = self.rpc("eth_accounts", json!([])).await;
        v.as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_lowercase())
            .collect()
    }
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
