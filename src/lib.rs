#![forbid(unsafe_code)]
//! payrecon: reconciles crypto payment providers and EVM chains against a merchant's ledger.
//!
//! - `domain`: the pure core (keys, states, amounts, the diff). No IO.
//! - `store`: SQLite and PostgreSQL; the only module with SQL.
//! - `chain`: EVM JSON-RPC via alloy.
//! - `providers`: provider HTTP APIs (Chaingateway).
//! - `sandbox`: in-process fake provider and chain on loopback (demo, tests, benchmarks).
//! - `secret`: values that never print.

pub mod chain;
pub mod domain;
pub mod providers;
pub mod sandbox;
pub mod secret;
pub mod store;
