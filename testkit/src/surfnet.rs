//! A real local Solana cluster (surfpool's `Surfnet`, npm `surfpool-sdk-linux-x64-gnu` 1.2.0,
//! a JSON-RPC server on loopback, offline) hosted by `testkit/surfnet.js` in a Node process
//! (killed on drop; surfpool 1.2.0 has no stop), with payments made by Solana's own libraries
//! (`@solana/web3.js`, `@solana/spl-token`). `SOLANA_NODE_MODULES` names the `node_modules`
//! holding the three packages (`.ci/run` installs them); without it the tests skip, or fail
//! under `PAYRECON_TEST_STRICT=1`. One slot per transaction; `finalized` trails `confirmed`
//! by about 30 slots (`settle` sends that many).

use std::process::Stdio;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::Mutex;

use crate::env::skip;

/// USDC's mint on mainnet, written offline by `mint` (the cluster has none).
pub const USDC: &str = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";

pub struct Surfnet {
    _child: Child,
    io: Mutex<(ChildStdin, Lines<BufReader<ChildStdout>>)>,
    pub url: String,
}

/// A token payment (`Surfnet::pay_token`).
#[derive(Debug, Clone, Default)]
pub struct TokenPay<'a> {
    pub from: &'a str,
    pub to: &'a str,
    pub mint: &'a str,
    pub amount: u64,
    pub decimals: u8,
    /// A plain `transfer` (no mint in the instruction) instead of `transferChecked`.
    pub unchecked: bool,
    pub reference: Option<&'a str>,
    /// Into the recipient's existing associated account, without creating it: the wallet is
    /// then not among the transaction's accounts (the transfer is instruction 0).
    pub existing: bool,
    /// More than the sender holds, sent past preflight: the transaction fails on chain.
    pub fail: bool,
}

impl Surfnet {
    /// Starts a cluster; None (skipped, or a failure under strict mode) without
    /// `SOLANA_NODE_MODULES`.
    pub async fn start() -> Option<Surfnet> {
        let Ok(modules) = std::env::var("SOLANA_NODE_MODULES") else {
            skip("SOLANA_NODE_MODULES is not set (Solana tests: surfpool and @solana/web3.js)");
            return None;
        };
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/surfnet.js");
        let mut child = Command::new("node")
            .arg(script)
            .env("SOLANA_NODE_MODULES", modules)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn node testkit/surfnet.js");
        let stdin = child.stdin.take().expect("stdin");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let first = tokio::time::timeout(std::time::Duration::from_secs(30), lines.next_line())
            .await
            .expect("surfnet started within 30 s")
            .expect("surfnet's first line")
            .expect("surfnet printed its URL");
        let hello: Value = serde_json::from_str(&first).expect("surfnet's JSON hello");
        let url = hello["rpcUrl"].as_str().expect("rpcUrl").to_string();
        Some(Surfnet {
            _child: child,
            io: Mutex::new((stdin, lines)),
            url,
        })
    }

    /// One command to the helper; its answer, or its error.
    pub async fn try_op(&self, cmd: Value) -> Result<Value, String> {
        let mut io = self.io.lock().await;
        let line = format!("{cmd}\n");
        io.0.write_all(line.as_bytes())
            .await
            .expect("write to surfnet");
        let answer =
            io.1.next_line()
                .await
                .expect("read surfnet")
                .expect("an answer");
        let v: Value = serde_json::from_str(&answer).expect("a JSON answer");
        match v.get("error") {
            Some(e) => Err(e.to_string()),
            None => Ok(v["ok"].clone()),
        }
    }

    pub async fn op(&self, cmd: Value) -> Value {
        let what = cmd.to_string();
        self.try_op(cmd)
            .await
            .unwrap_or_else(|e| panic!("surfnet {what}: {e}"))
    }

    /// A named wallet holding 100 SOL (created at first use); its public key.
    pub async fn wallet(&self, name: &str) -> String {
        text(self.op(json!({"op": "wallet", "name": name})).await)
    }

    /// A fresh public key nobody holds (a shop's wallet, a reference).
    pub async fn key(&self) -> String {
        text(self.op(json!({"op": "keypair"})).await)
    }

    /// A mint of `decimals` at `address` (USDC's offline) or at a fresh key.
    pub async fn mint(&self, address: Option<&str>, decimals: u8) -> String {
        text(
            self.op(json!({"op": "mint", "address": address, "decimals": decimals}))
                .await,
        )
    }

    /// Gives wallet `name` `amount` of `mint` (no transaction: a cheat code).
    pub async fn fund_token(&self, name: &str, mint: &str, amount: u64) {
        self.op(json!({"op": "fundToken", "name": name, "mint": mint, "amount": amount}))
            .await;
    }

    /// Gives the wallet `owner` (a public key) `amount` of `mint`: its associated account.
    pub async fn fund_owner(&self, owner: &str, mint: &str, amount: u64) {
        self.op(json!({"op": "fundToken", "owner": owner, "mint": mint, "amount": amount}))
            .await;
    }

    /// `owner`'s associated token account for `mint`.
    pub async fn ata(&self, owner: &str, mint: &str) -> String {
        text(
            self.op(json!({"op": "ata", "owner": owner, "mint": mint}))
                .await,
        )
    }

    /// SOL from wallet `from` to `to`; the signature.
    pub async fn pay_sol(&self, from: &str, to: &str, lamports: u64, fail: bool) -> String {
        let c = json!({"op": "paySol", "from": from, "to": to, "lamports": lamports, "fail": fail});
        text(self.op(c).await)
    }

    /// A token payment (the recipient's associated account created, then the transfer at
    /// top-level instruction 1: log index 65536); the signature.
    pub async fn pay_token(&self, p: TokenPay<'_>) -> String {
        let c = json!({"op": "payToken", "from": p.from, "to": p.to, "mint": p.mint,
            "amount": p.amount, "decimals": p.decimals, "unchecked": p.unchecked,
            "reference": p.reference, "fail": p.fail, "existing": p.existing});
        text(self.op(c).await)
    }

    /// The `confirmed` slot.
    pub async fn slot(&self) -> u64 {
        self.op(json!({"op": "slot"}))
            .await
            .as_u64()
            .expect("a slot")
    }

    /// Sends `n` small transfers between helper wallets: `n` slots pass (32 make what was
    /// confirmed before `finalized`).
    pub async fn advance(&self, n: u32) {
        let to = self.wallet("ticker").await;
        for _ in 0..n {
            self.pay_sol("clock", &to, 1, false).await;
        }
    }
}

fn text(v: Value) -> String {
    v.as_str()
        .unwrap_or_else(|| panic!("not a string: {v}"))
        .to_string()
}
