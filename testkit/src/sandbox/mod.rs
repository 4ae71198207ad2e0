//! The product's sandbox (the demo's fixed world: `payrecon::sandbox`) with what only tests
//! and benchmarks need around it: injected faults and latency, counters, lists that move while
//! read, block numbers in each chain's shape, and nodes that answer the `finalized`/`safe` tags
//! as older nodes do. The same paths as the product's module, so a test names one of them.

pub mod chain;
pub mod chaingateway;

pub use payrecon::sandbox::merchant;
pub use payrecon::sandbox::{config_toml, SANDBOX_API_KEY, SANDBOX_PROVIDER, SANDBOX_TOKEN};
