//! The demo's sandbox (its fixed world: the `payrecon-sandbox` crate) with what only tests and
//! benchmarks need around it: injected faults and latency, counters, lists that move while
//! read, block numbers in each chain's shape, nodes that answer the `finalized`/`safe` tags as
//! older nodes do, and the EVM node's transfers in payrecon's domain types. The same paths as
//! the sandbox crate's, so a test names this one only.

pub mod chain;
pub mod chaingateway;

pub use payrecon_sandbox::{config_toml, SANDBOX_API_KEY, SANDBOX_PROVIDER, SANDBOX_TOKEN};
pub use payrecon_sandbox::{merchant, solana};
