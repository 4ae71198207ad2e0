//! Drives the real `payrecon` binary as a child process against a sandbox provider and chain
//! hosted in the test process on loopback. Every child is killed on drop.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use alloy::primitives::U256 as EvmU256;
use payrecon::domain::{Address, U256};
use payrecon::store::{NewOrder, Store};
use payrecon_testkit::inspect::Inspect;
use payrecon_testkit::sandbox::chain::SandboxChain;
use payrecon_testkit::sandbox::chaingateway::{notification, FakeChaingateway};
use payrecon_testkit::sandbox::{config_toml, SANDBOX_API_KEY, SANDBOX_TOKEN};
use tokio::io::AsyncReadExt;
use tokio::process::{Child, Command};

pub const BIN: &str = env!("CARGO_BIN_EXE_payrecon");
/// How long any one-shot command may take before the test fails.
pub const CMD_TIMEOUT: Duration = Duration::from_secs(90);

/// What a finished child printed and how it ended.
#[derive(Debug)]
pub struct Out {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Out {
    /// All of stdout as one JSON document (fails if there is anything else on stdout).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not one JSON document ({e}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }
    pub fn assert_code(&self, code: i32) -> &Self {
        assert_eq!(
            self.code,
            Some(code),
            "exit code\nstdout:\n{}\nstderr:\n{}",
            self.stdout,
            self.stderr
        );
        self
    }
    pub fn assert_no_panic(&self) {
        for s in [&self.stdout, &self.stderr] {
            assert!(!s.contains("panicked"), "a panic:\n{s}");
            assert!(!s.contains("stack backtrace"), "a backtrace:\n{s}");
        }
    }
}

/// A `payrecon` command with a clean environment (nothing inherited from the test's).
pub fn command(config: &std::path::Path, args: &[&str]) -> Command {
    payrecon_testkit::process::payrecon(BIN, config, args)
}

/// Runs a command to completion (bounded by `CMD_TIMEOUT`).
pub async fn output(mut cmd: Command) -> Out {
    let fut = cmd.output();
    let out = tokio::time::timeout(CMD_TIMEOUT, fut)
        .await
        .expect("payrecon did not finish in time")
        .expect("spawn payrecon");
    Out {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

pub async fn payrecon(config: &std::path::Path, args: &[&str]) -> Out {
    output(command(config, args)).await
}

/// A long-running child (serve, or a run to kill) whose stdout and stderr are collected.
pub struct Running {
    pub child: Child,
    pub stderr: Arc<Mutex<String>>,
    pub stdout: Arc<Mutex<String>>,
    /// The tasks reading the child's streams: `wait` lets them reach the end of what the
    /// child wrote before it exited.
    readers: Vec<tokio::task::JoinHandle<()>>,
}

impl Running {
    pub fn spawn(mut cmd: Command) -> Running {
        let mut child = cmd.spawn().expect("spawn payrecon");
        let stderr = Arc::new(Mutex::new(String::new()));
        let stdout = Arc::new(Mutex::new(String::new()));
        let readers = vec![
            collect(child.stderr.take().expect("piped stderr"), stderr.clone()),
            collect(child.stdout.take().expect("piped stdout"), stdout.clone()),
        ];
        Running {
            child,
            stderr,
            stdout,
            readers,
        }
    }
    pub fn pid(&self) -> u32 {
        self.child.id().expect("the child is running")
    }
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
    pub fn stdout(&self) -> String {
        self.stdout.lock().unwrap().clone()
    }
    /// Sends a signal with `kill(1)` (`TERM`, `INT`, `KILL`).
    pub async fn signal(&self, sig: &str) {
        let st = Command::new("kill")
            .args([format!("-{sig}"), self.pid().to_string()])
            .status()
            .await
            .expect("run kill");
        assert!(st.success(), "kill -{sig} failed");
    }
    /// Waits for the exit; returns the code (None: killed by a signal) and the time it took.
    pub async fn wait(&mut self, timeout: Duration) -> (Option<i32>, Duration) {
        let t0 = Instant::now();
        let st = tokio::time::timeout(timeout, self.child.wait())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "payrecon did not exit within {timeout:?}:\n{}",
                    self.stderr()
                )
            })
            .expect("wait for payrecon");
        let took = t0.elapsed();
        // The child has exited: its last lines may still be in the pipes.
        for r in std::mem::take(&mut self.readers) {
            let _ = tokio::time::timeout(Duration::from_secs(2), r).await;
        }
        (st.code(), took)
    }
}

fn collect<R: tokio::io::AsyncRead + Unpin + Send + 'static>(
    mut r: R,
    into: Arc<Mutex<String>>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut buf = [0u8; 8192];
        loop {
            match r.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => into
                    .lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n])),
            }
        }
    })
}

pub fn addr(n: u32) -> Address {
    Address::parse(&format!("0x{:040x}", 0x1000_0000u64 + u64::from(n))).unwrap()
}

pub fn usdt(whole: u64) -> U256 {
    U256::from(whole) * U256::from(1_000_000u64)
}

/// A sandbox world: fake Chaingateway, sandbox chain, a ledger, a temp dir for config files.
pub struct World {
    pub chain: SandboxChain,
    pub cg: FakeChaingateway,
    pub cg_url: String,
    pub rpc_url: String,
    pub db_url: String,
    pub store: Store,
    pub dir: tempfile::TempDir,
}

impl World {
    /// On a fresh SQLite file.
    pub async fn sqlite() -> World {
        let dir = payrecon_testkit::tmp::dir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("ledger.db").display());
        World::new(dir, url).await
    }

    pub async fn new(dir: tempfile::TempDir, db_url: String) -> World {
        let chain = SandboxChain::new(1);
        let rpc_url = chain.serve().await.unwrap();
        let (cg, cg_url) = FakeChaingateway::start(SANDBOX_API_KEY).await;
        let store = Store::connect(&db_url, 4).await.unwrap();
        store.migrate().await.unwrap();
        World {
            chain,
            cg,
            cg_url,
            rpc_url,
            db_url,
            store,
            dir,
        }
    }

    /// The sandbox configuration (`extra` appended) as a file; returns its path.
    pub fn config(&self, extra: &str) -> PathBuf {
        self.config_for(&self.cg_url, extra)
    }

    pub fn config_for(&self, provider_url: &str, extra: &str) -> PathBuf {
        let toml = config_toml(&self.db_url, provider_url, &self.rpc_url, extra);
        self.write("config.toml", &toml)
    }

    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    /// `n` unpaid orders `P-<first+i>` of 25 USDT, each paid on chain (final after the 70
    /// blocks mined here) and listed by the provider 30 minutes ago: `n` missing payments.
    pub async fn missing_payments(&self, first: u32, n: u32) -> Vec<String> {
        let token = Address::parse(SANDBOX_TOKEN).unwrap();
        let payer = Address::parse("0x00000000000000000000000000000000000000fe").unwrap();
        let ids: Vec<u32> = (first..first + n).collect();
        let orders: Vec<NewOrder> = ids
            .iter()
            .map(|i| NewOrder {
                order_ref: format!("P-{i}"),
                chain: "ethereum".into(),
                pay_to: addr(*i).to_string(),
                asset: SANDBOX_TOKEN.into(),
                amount_due: usdt(25),
            })
            .collect();
        self.store.insert_orders(&orders).await.unwrap();
        let payments: Vec<(Address, EvmU256)> = ids
            .iter()
            .map(|i| (addr(*i), EvmU256::from(usdt(25))))
            .collect();
        let txs = self.chain.add_token_transfers(&token, &payer, &payments);
        self.chain.mine_block();
        self.chain.mine(70);
        let created = jiff::Timestamp::now() - jiff::SignedDuration::from_mins(30);
        for (i, (tx, _)) in ids.iter().zip(&txs) {
            self.cg.add_notification(
                "ethereum",
                notification(
                    &format!("n-{i}"),
                    tx.as_str(),
                    SANDBOX_TOKEN,
                    addr(*i).as_str(),
                    Some("25"),
                    created,
                ),
            );
        }
        ids.iter().map(|i| format!("P-{i}")).collect()
    }

    /// One missing payment whose notification Chaingateway lists as failed.
    pub async fn failed_notification(&self, i: u32) -> String {
        let r = self.missing_payments(i, 1).await;
        assert!(self.cg.mark_failed("ethereum", &format!("n-{i}")));
        r[0].clone()
    }

    pub async fn count(&self, table: &str) -> i64 {
        self.store.count(table).await.unwrap()
    }
}

impl World {
    /// An order `P-<i>` paid on chain (final), and the provider record for it, not listed.
    pub async fn cg_notification(&self, i: u32) -> serde_json::Value {
        let (tx, _) = self.chain.add_token_transfer(
            &Address::parse(SANDBOX_TOKEN).unwrap(),
            &Address::parse("0x00000000000000000000000000000000000000fe").unwrap(),
            &addr(i),
            EvmU256::from(usdt(25)),
        );
        self.chain.mine_block();
        self.chain.mine(70);
        self.store
            .insert_orders(&[NewOrder {
                order_ref: format!("P-{i}"),
                chain: "ethereum".into(),
                pay_to: addr(i).to_string(),
                asset: SANDBOX_TOKEN.into(),
                amount_due: usdt(25),
            }])
            .await
            .unwrap();
        let created = jiff::Timestamp::now() - jiff::SignedDuration::from_mins(30);
        notification(
            &format!("n-{i}"),
            tx.as_str(),
            SANDBOX_TOKEN,
            addr(i).as_str(),
            Some("25"),
            created,
        )
    }
}

/// One integer from `sql` (a `COUNT(*)`, a `SUM`), on either backend, on its own pool.
pub async fn scalar(url: &str, sql: &str) -> i64 {
    if url.starts_with("sqlite") {
        let pool = sqlx::SqlitePool::connect(url).await.unwrap();
        let v = sqlx::query_scalar(sql).fetch_one(&pool).await.unwrap();
        pool.close().await;
        v
    } else if url.starts_with("mysql") {
        // The same SQL in MariaDB's spelling: backquoted identifiers, its casts.
        let sql = sql
            .replace('"', "`")
            .replace("AS BIGINT)", "AS SIGNED)")
            .replace("AS TEXT)", "AS CHAR)");
        let pool = sqlx::MySqlPool::connect(url).await.unwrap();
        let v = sqlx::query_scalar(&sql).fetch_one(&pool).await.unwrap();
        pool.close().await;
        v
    } else {
        let pool = sqlx::PgPool::connect(url).await.unwrap();
        let v = sqlx::query_scalar(sql).fetch_one(&pool).await.unwrap();
        pool.close().await;
        v
    }
}
