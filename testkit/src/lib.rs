//! Test support for payrecon, a dev-dependency only: nothing here is in the product. The one
//! harness the integration tests (`tests/it`), the simulator (`tests/sim`) and the benchmarks
//! (`benches/`) share:
//!
//! - `env`: skip with a reason where a tool is missing, fail under `PAYRECON_TEST_STRICT=1`;
//!   every need probed, for the end-of-run report; the backends chosen.
//! - `tmp`: temporary directories on the tmpfs where the machine has one.
//! - `anvil`: a real anvil node on a free loopback port and its JSON-RPC.
//! - `process`: the real binary as a child, with a clean environment.
//! - `esplora`: a fake Esplora REST API (docs/configuration.md, "Bitcoin").
//! - `tron`: a fake Tron node (java-tron's JSON-RPC and HTTP API, their documented shapes).
//! - `surfnet`: a real local Solana cluster (surfpool) and payments made with Solana's own
//!   libraries, through a Node helper (`testkit/surfnet.js`).
//! - `sandbox`: the demo's sandbox (the `payrecon-sandbox` crate: its Chaingateway, EVM and
//!   Solana nodes, events receiver) with faults, latency, counters, lists that move while
//!   read, block numbers, older nodes' tags, and the EVM node in payrecon's domain types.
//! - `logguard`: the ERROR events a run logged, for tests to hold against what they injected.
//! - `inspect`: read-back of the ledger (orders, transitions, findings, runs, counts) as an
//!   extension of `Store`.
//! - `scratch`: a fresh schema or database on a PostgreSQL or MariaDB/MySQL server, and its
//!   drop.
//! - `rpc_counter`: a JSON-RPC proxy in front of a real node that counts requests and calls
//!   by method.
//! - `bench`: what the benchmarks share (the release binary, a `serve` of it on a free port,
//!   a PostgreSQL schema of their own, percentiles).
//! - `qvard`, `paymos`: fake provider APIs on loopback (served exactly as the providers
//!   document them), sharing one front door (`json_api`: bearer token, request log, latency,
//!   injected faults) and one handle shape.
#![forbid(unsafe_code)]

pub mod anvil;
pub mod bench;
pub mod env;
pub mod esplora;
pub mod inspect;
mod json_api;
pub mod logguard;
pub mod paymos;
pub mod pgproxy;
pub mod process;
pub mod qvard;
pub mod rpc_counter;
pub mod sandbox;
pub mod scratch;
pub mod surfnet;
pub mod tmp;
pub mod tron;

pub use json_api::{HttpFault, JsonApi};

/// A fake chain's fork number at height `n`: `forks` holds `(from_height, fork)` per reorg.
pub(crate) fn fork_at(forks: &[(u64, u64)], n: u64) -> u64 {
    forks
        .iter()
        .filter(|(h, _)| n >= *h)
        .map(|(_, f)| *f)
        .max()
        .unwrap_or(0)
}

#[doc(hidden)]
pub use payrecon as __payrecon;

/// Runs `$body` with `$p` bound to the pool a `Store` holds, whatever its backend: a test's own
/// SQL against the store's database (the SQL must suit the backends the test runs on).
#[macro_export]
macro_rules! on_pool {
    ($store:expr, $p:ident => $body:expr) => {
        match $store {
            $crate::__payrecon::store::Store::Sqlite($p) => $body,
            $crate::__payrecon::store::Store::Postgres($p) => $body,
            $crate::__payrecon::store::Store::MySql($p) => $body,
        }
    };
}
