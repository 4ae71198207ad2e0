//! The demo's stand-ins for the outside world, served over real HTTP on loopback: a fake
//! Chaingateway API, an EVM JSON-RPC node, a Solana node and the merchant's events receiver.
//! `payrecon demo` needs them (the tests and benchmarks use them too); nothing here is used by
//! `serve` or `run`. A crate of its own, not a module of the product: payrecon depends on it
//! only with its `demo` feature (on by default), so a build with `--no-default-features`
//! compiles none of it, and it depends on nothing of payrecon's (it speaks the wire formats,
//! alloy's primitives and plain strings). They serve a fixed world: what tests need besides
//! (faults, latency, counters, lists that move while read, other chains' block numbers, older
//! nodes) and the fakes only tests need (Qvard, Paymos) live in the `payrecon-testkit` dev
//! crate.
#![forbid(unsafe_code)]

pub mod chain;
pub mod chaingateway;
pub mod merchant;
pub mod solana;

/// The token contract the sandbox pretends is USDT (6 decimals).
pub const SANDBOX_TOKEN: &str = "0xdac17f958d2ee523a2206206994597c13d831ec7";
/// The provider's name in sandbox configurations.
pub const SANDBOX_PROVIDER: &str = "sandbox";
/// The API key the fake Chaingateway expects in sandbox configurations.
pub const SANDBOX_API_KEY: &str = "sandbox-demo-key";

/// A complete configuration for a ledger at `database_url`, the fake Chaingateway at
/// `provider_url` and the sandbox node at `rpc_url` (chain `ethereum`, 12 confirmations,
/// `finalized` tag). `extra` is appended verbatim (e.g. a `[reconcile]` table).
pub fn config_toml(database_url: &str, provider_url: &str, rpc_url: &str, extra: &str) -> String {
    format!(
        r#"[database]
url = "{database_url}"

[http]
listen = "127.0.0.1:9187"

[chains.ethereum]
rpc_url = "{rpc_url}"
confirmations = 12
finality = "finalized"
# No deposit scan: the demo shows what the provider's lists and the receipts find, and what
# the balance check finds besides.
scan_unpaid = false

[assets."ethereum:{SANDBOX_TOKEN}"]
symbol = "USDT"
decimals = 6

[providers.{SANDBOX_PROVIDER}]
kind = "chaingateway"
base_url = "{provider_url}"
api_key = "{SANDBOX_API_KEY}"
network = "mainnet"
chains = ["ethereum"]
timeout = "5s"
max_concurrency = 4
max_retries = 3
backoff = "50ms"
{extra}
"#
    )
}
