//! A real anvil node on a free loopback port (killed on drop), its JSON-RPC, and a
//! hand-assembled token whose every call emits one ERC-20 `Transfer(caller, to, amount)`: the
//! one driver the integration tests, the simulator and the benchmarks share.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::env::skip;

const TRANSFER: &str = "ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";

pub struct Anvil {
    child: Child,
    pub url: String,
    client: reqwest::Client,
}

impl Drop for Anvil {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A JSON-RPC hex quantity as a number (panics on anything else: a test's broken premise).
pub fn hex_u64(v: &Value) -> u64 {
    v.as_str()
        .and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok())
        .unwrap_or_else(|| panic!("not a hex quantity: {v}"))
}

impl Anvil {
    /// Starts `ANVIL_BIN` with automine; None (skipped, or a failure under
    /// `PAYRECON_TEST_STRICT=1`) when it is not set.
    pub async fn start() -> Option<Anvil> {
        Anvil::start_with(&[]).await
    }

    /// As `start`, with extra arguments for anvil.
    pub async fn start_with(extra: &[&str]) -> Option<Anvil> {
        let Ok(bin) = std::env::var("ANVIL_BIN") else {
            skip("ANVIL_BIN is not set (anvil tests)");
            return None;
        };
        Some(Anvil::launch(&bin, extra).await)
    }

    /// Starts anvil at `bin` on a free port. The port is free when picked but may be taken
    /// before anvil binds it (by another test's server): then anvil exits, or something else
    /// answers, and another port is tried.
    pub async fn launch(bin: &str, extra: &[&str]) -> Anvil {
        for _ in 0..5 {
            if let Some(anvil) = Anvil::try_launch(bin, extra).await {
                return anvil;
            }
        }
        panic!("anvil did not start on any of 5 free ports");
    }

    async fn try_launch(bin: &str, extra: &[&str]) -> Option<Anvil> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new(bin)
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
            // No idle connections: anvil may close one just as a request is written on it
            // (seen once under load as "error sending request"); a fresh connection per call
            // cannot race that way.
            client: reqwest::Client::builder()
                .pool_max_idle_per_host(0)
                .build()
                .expect("an HTTP client"),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if anvil.child.try_wait().ok().flatten().is_some() {
                return None; // it could not bind: the port was taken meanwhile
            }
            if let Ok(v) = anvil.try_rpc("web3_clientVersion", json!([])).await {
                // Ours, or another server that took the port (dropping `anvil` kills ours).
                return v
                    .as_str()
                    .is_some_and(|s| s.to_ascii_lowercase().starts_with("anvil"))
                    .then_some(anvil);
            }
            assert!(
                Instant::now() < deadline,
                "anvil did not answer within 20 s"
            );
            tokio::time::sleep(Duration::from_millis(30)).await;
        }
    }

    /// One JSON-RPC call: its `result`, or the error (with its causes).
    pub async fn try_rpc(&self, method: &str, params: Value) -> Result<Value, String> {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        // A connection that could not be made sent nothing: safe to try again, even for
        // calls that change the node. Any other error is reported with its causes.
        let mut attempt = 0;
        let resp = loop {
            match self.client.post(&self.url).json(&body).send().await {
                Err(e) if e.is_connect() && attempt < 5 => {
                    attempt += 1;
                    tokio::time::sleep(Duration::from_millis(20 * attempt)).await;
                }
                other => break other,
            }
        };
        let v: Value = resp
            .map_err(|e| {
                let mut msg = e.to_string();
                let mut src = std::error::Error::source(&e);
                while let Some(s) = src {
                    msg.push_str(&format!(": {s}"));
                    src = s.source();
                }
                msg
            })?
            .json()
            .await
            .map_err(|e| e.to_string())?;
        match v.get("error") {
            Some(e) => Err(format!("{method}: {e}")),
            None => Ok(v["result"].clone()),
        }
    }

    /// A JSON-RPC call that must succeed.
    pub async fn rpc(&self, method: &str, params: Value) -> Value {
        self.try_rpc(method, params.clone())
            .await
            .unwrap_or_else(|e| panic!("{method} {params}: {e}"))
    }

    /// Mines `n` blocks (none for 0).
    pub async fn mine(&self, n: u64) {
        if n > 0 {
            self.rpc("anvil_mine", json!([format!("{n:#x}")])).await;
        }
    }

    pub async fn head(&self) -> u64 {
        hex_u64(&self.rpc("eth_blockNumber", json!([])).await)
    }

    pub async fn nonce(&self, who: &str) -> u64 {
        hex_u64(
            &self
                .rpc("eth_getTransactionCount", json!([who, "latest"]))
                .await,
        )
    }

    /// The node's unlocked accounts, lowercase.
    pub async fn accounts(&self) -> Vec<String> {
        let v = self.rpc("eth_accounts", json!([])).await;
        let list = v.as_array().expect("eth_accounts is a list");
        list.iter()
            .map(|a| a.as_str().unwrap_or_default().to_lowercase())
            .collect()
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

    /// The receipt's `(block number, block hash, log index of its first log or -1, status)`,
    /// None when the canonical chain has no receipt.
    pub async fn placed(&self, tx: &str) -> Option<(u64, String, i64, bool)> {
        let r = self.rpc("eth_getTransactionReceipt", json!([tx])).await;
        if r.is_null() {
            return None;
        }
        let li = r["logs"]
            .get(0)
            .map(|l| hex_u64(&l["logIndex"]) as i64)
            .unwrap_or(-1);
        let hash = r["blockHash"].as_str().unwrap_or_default().to_lowercase();
        Some((hex_u64(&r["blockNumber"]), hash, li, r["status"] == "0x1"))
    }

    /// Sends a request (automine) and waits for its receipt; the lowercase hash.
    pub async fn send(&self, req: &Value) -> String {
        let hash = self.rpc("eth_sendTransaction", json!([req])).await;
        let hash = hash.as_str().unwrap_or_default().to_lowercase();
        self.receipt(&hash).await;
        hash
    }

    /// One JSON-RPC batch; the results in order.
    pub async fn batch(&self, calls: Vec<(&str, Value)>) -> Result<Vec<Value>, String> {
        let body: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(i, (m, p))| json!({"jsonrpc": "2.0", "id": i, "method": m, "params": p}))
            .collect();
        let resp = self.client.post(&self.url).json(&body).send().await;
        let mut v: Vec<Value> = resp
            .map_err(|e| e.to_string())?
            .json()
            .await
            .map_err(|e| e.to_string())?;
        v.sort_by_key(|r| r["id"].as_u64());
        v.into_iter()
            .map(|r| match r.get("error") {
                Some(e) => Err(e.to_string()),
                None => Ok(r["result"].clone()),
            })
            .collect()
    }

    /// Deploys the token (`token_init_code`) from `from`; its lowercase address.
    pub async fn deploy_token(&self, from: &str) -> String {
        self.deploy_code(from, &token_init_code()).await
    }

    /// Deploys init code `code` from `from`; the contract's lowercase address.
    pub async fn deploy_code(&self, from: &str, code: &[u8]) -> String {
        let req = json!({"from": from, "data": format!("0x{}", hex::encode(code)),
            "gas": "0x100000"});
        let tx = self.send(&req).await;
        let r = self.rpc("eth_getTransactionReceipt", json!([tx])).await;
        assert_eq!(r["status"], "0x1", "token deployment failed: {r}");
        r["contractAddress"]
            .as_str()
            .unwrap_or_default()
            .to_lowercase()
    }
}

/// Init code of a token whose runtime is `LOG3(Transfer, caller, calldata[0..32])` with
/// `calldata[32..64]` as data: any call is a transfer of that amount to that address.
pub fn token_init_code() -> Vec<u8> {
    let mut runtime = vec![0x60, 0x20, 0x35, 0x60, 0x00, 0x52]; // mstore(0, calldata[32])
    runtime.extend([0x60, 0x00, 0x35, 0x33, 0x7f]); // calldata[0], caller, push32
    runtime.extend(hex::decode(TRANSFER).expect("hex"));
    runtime.extend([0x60, 0x20, 0x60, 0x00, 0xa3, 0x00]); // log3(0, 32, ...), stop
    let len = runtime.len() as u8;
    // codecopy(0, 12, len); return(0, len)
    let mut code = vec![
        0x60, len, 0x60, 12, 0x60, 0x00, 0x39, 0x60, len, 0x60, 0x00, 0xf3,
    ];
    code.extend(runtime);
    code
}

/// Runtime of a token that keeps balances (the balance check reads `balanceOf`): a call with 36
/// bytes of calldata is `balanceOf(address)`; any other is a transfer of `calldata[32..64]` to
/// `calldata[0..32]` from the caller, reverting when the caller holds less, and logging
/// `Transfer(caller, to, amount)`. The deployer holds 2^200 from the start.
const LEDGER_TOKEN_RUNTIME: &str =
    "366024146054576020353354818110604f57033355602035600035805482019055\
600052600035337fddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef60206000a300\
5b600080fd5b6004355460005260206000f3";

/// Init code of the balance-keeping token (`LEDGER_TOKEN_RUNTIME`): gives the deployer 2^200,
/// then returns the runtime.
pub fn ledger_token_init_code() -> Vec<u8> {
    let runtime = hex::decode(LEDGER_TOKEN_RUNTIME).expect("hex");
    let len = u8::try_from(runtime.len()).expect("runtime under 256 bytes");
    // sstore(caller, 1 << 200); codecopy(0, 19, len); return(0, len)
    let mut code = vec![0x60, 0x01, 0x60, 200, 0x1b, 0x33, 0x55];
    code.extend([
        0x60, len, 0x60, 19, 0x60, 0x00, 0x39, 0x60, len, 0x60, 0x00, 0xf3,
    ]);
    code.extend(runtime);
    code
}
