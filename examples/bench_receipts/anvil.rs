//! A real anvil node for the benchmark (`ANVIL_BIN`) and the hand-assembled token of
//! `tests/it/evm.rs` (the LOG3 path only): deploy it, send many transfers, mine them.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const TRANSFER: &str = "ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";

pub struct Anvil {
    child: Child,
    pub url: String,
    http: reqwest::Client,
}

impl Drop for Anvil {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Anvil {
    pub async fn start(bin: &str) -> anyhow::Result<Anvil> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let child = Command::new(bin)
            .args([
                "--host",
                "127.0.0.1",
                "--port",
                &port.to_string(),
                "--silent",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        let anvil = Anvil {
            child,
            url: format!("http://127.0.0.1:{port}"),
            http: reqwest::Client::new(),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while anvil.rpc("eth_blockNumber", json!([])).await.is_err() {
            anyhow::ensure!(Instant::now() < deadline, "anvil did not answer in 20 s");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(anvil)
    }

    pub async fn rpc(&self, method: &str, params: Value) -> anyhow::Result<Value> {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let v: Value = self
            .http
            .post(&self.url)
            .json(&body)
            .send()
            .await?
            .json()
            .await?;
        match v.get("error") {
            Some(e) => anyhow::bail!("{method}: {e}"),
            None => Ok(v["result"].clone()),
        }
    }

    /// One JSON-RPC batch; the results in order.
    async fn batch(&self, calls: Vec<(&str, Value)>) -> anyhow::Result<Vec<Value>> {
        let body: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(i, (m, p))| json!({"jsonrpc": "2.0", "id": i, "method": m, "params": p}))
            .collect();
        let mut v: Vec<Value> = self
            .http
            .post(&self.url)
            .json(&body)
            .send()
            .await?
            .json()
            .await?;
        v.sort_by_key(|r| r["id"].as_u64());
        v.into_iter()
            .map(|r| match r.get("error") {
                Some(e) => anyhow::bail!("{e}"),
                None => Ok(r["result"].clone()),
            })
            .collect()
    }

    pub async fn accounts(&self) -> anyhow::Result<Vec<String>> {
        let v = self.rpc("eth_accounts", json!([])).await?;
        Ok(v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|a| a.as_str().map(str::to_lowercase))
            .collect())
    }

    /// Deploys the token from the first account; returns its address.
    pub async fn deploy_token(&self, from: &str) -> anyhow::Result<String> {
        let data = format!("0x{}", hex::encode(init_code()));
        let tx = self
            .rpc(
                "eth_sendTransaction",
                json!([{"from": from, "data": data, "gas": "0x100000"}]),
            )
            .await?;
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut receipt = Value::Null;
        while receipt.is_null() {
            anyhow::ensure!(
                Instant::now() < deadline,
                "the token deployment was not mined"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
            receipt = self.rpc("eth_getTransactionReceipt", json!([tx])).await?;
        }
        receipt["contractAddress"]
            .as_str()
            .map(str::to_lowercase)
            .ok_or_else(|| anyhow::anyhow!("no contract address: {receipt}"))
    }

    /// `n` token transfers of 1..=n base units to `to`, sent in JSON-RPC batches of 200 with
    /// automine off and one block mined per batch; returns the hashes once all are mined.
    pub async fn send_transfers(
        &self,
        token: &str,
        from: &str,
        to: &str,
        n: usize,
    ) -> anyhow::Result<Vec<String>> {
        self.rpc("evm_setAutomine", json!([false])).await?;
        let nonce = self
            .rpc("eth_getTransactionCount", json!([from, "pending"]))
            .await?;
        let nonce =
            u64::from_str_radix(nonce.as_str().unwrap_or("0x0").trim_start_matches("0x"), 16)?;
        let mut hashes = Vec::with_capacity(n);
        for chunk in (1..=n).collect::<Vec<_>>().chunks(200) {
            let calls = chunk
                .iter()
                .map(|i| {
                    let data = format!("0x{:0>64}{:064x}", to.trim_start_matches("0x"), i);
                    let nonce = format!("{:#x}", nonce + *i as u64 - 1);
                    let tx = json!([{"from": from, "to": token, "data": data, "gas": "0x10000", "nonce": nonce}]);
                    ("eth_sendTransaction", tx)
                })
                .collect();
            for h in self.batch(calls).await? {
                hashes.push(h.as_str().unwrap_or_default().to_lowercase());
            }
            self.rpc("anvil_mine", json!(["0x1"])).await?;
        }
        self.rpc("evm_setAutomine", json!([true])).await?;
        let deadline = Instant::now() + Duration::from_secs(60);
        let last = hashes.last().cloned().unwrap_or_default();
        while self
            .rpc("eth_getTransactionReceipt", json!([last]))
            .await?
            .is_null()
        {
            anyhow::ensure!(Instant::now() < deadline, "transfers not mined in 60 s");
            self.rpc("anvil_mine", json!(["0x1"])).await?;
        }
        Ok(hashes)
    }
}

/// Runtime: `LOG3(Transfer, caller, calldata[0..32])` with `calldata[32..64]` as data.
fn runtime() -> Vec<u8> {
    let mut code = vec![0x60, 0x20, 0x35, 0x60, 0x00, 0x52]; // mstore(0, calldataload(32))
    code.extend([0x60, 0x00, 0x35, 0x33, 0x7f]); // calldataload(0), caller, push32
    code.extend(hex::decode(TRANSFER).expect("hex"));
    code.extend([0x60, 0x20, 0x60, 0x00, 0xa3, 0x00]); // log3(0, 32, ...), stop
    code
}

/// Init code that returns `runtime()`.
fn init_code() -> Vec<u8> {
    let runtime = runtime();
    let len = runtime.len() as u8;
    let mut code = vec![
        0x60, len, 0x60, 12, 0x60, 0x00, 0x39, 0x60, len, 0x60, 0x00, 0xf3,
    ];
    code.extend(runtime);
    code
}
