#![forbid(unsafe_code)]
//! payrecon: reconciles crypto payment providers and chains against a merchant's ledger.
//!
//! - `domain`: the pure core (keys, states, amounts, the diff). No IO.
//! - `store`: SQLite, PostgreSQL and MariaDB/MySQL; the only module with SQL.
//! - `chain`: chain truth by kind: EVM JSON-RPC via alloy, Tron, Bitcoin (Esplora).
//! - `providers`: provider HTTP APIs (Chaingateway, generic `kind = "http"` with presets).
//! - `engine`: a run (pipeline, sweep, apply, resend, report).
//! - `app`: assembles store, clients, metrics and engine from a config; `app::db` is the one way
//!   to open the database.
//! - `cli`: the command line's definitions and the body of every command, one module each.
//! - `daemon`: `serve`, its schedule loop, its HTTP listener and systemd's readiness and watchdog.
//! - `events`: delivers the events of applied transitions to the merchant's application
//!   (Standard Webhooks, retries, per-order order; the outbox rows are `store`'s).
//! - `status`: `payrecon status`, the operator's read-only view (text and JSON).
//! - `webhook`: `POST /webhooks/{provider}`: signature check, then the inbox table.
//! - `api`: the expected-payments API on `serve`'s listener (`/v1/orders`, its OpenAPI
//!   document); `cli::orders`: `payrecon orders add|import`, the same registration.
//! - `stats` (feature `stats`, tests and benchmarks only): SQL statements, CPU, peak RSS.
//! - `body`: a request body read within a limit, for the HTTP surfaces (`webhook`, `api`).
//! - `config`, `metrics`, `report`, `secret`, `telemetry`: as named.
//! - `fuzz_api` (hidden): thin wrappers the `fuzz/` targets call; not an API.
//!
//! The stand-ins `payrecon demo` serves (fake Chaingateway, nodes, events receiver) are not
//! here: they are the `payrecon-sandbox` crate (`sandbox/`), a dependency only with feature
//! `demo` (on by default).

pub mod api;
pub mod app;
pub mod assets;
pub mod body;
pub mod chain;
pub mod cli;
pub mod config;
pub mod console;
pub mod daemon;
pub mod domain;
pub mod engine;
pub mod events;
pub mod metrics;
pub mod providers;
pub mod report;
pub mod secret;
#[cfg(feature = "stats")]
pub mod stats;
pub mod status;
pub mod store;
pub mod telemetry;
pub mod webhook;

/// `payrecon --version`: the crate's version and the commit it was built from (`build.rs`;
/// `PAYRECON_COMMIT` set at build time overrides it, for builds outside a git checkout).
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("PAYRECON_COMMIT"),
    ")"
);

/// Entry points for the fuzz targets in `fuzz/` that are not otherwise public (hidden; not an
/// API). See `fuzz/README.md`.
#[doc(hidden)]
pub mod fuzz_api {
    pub use crate::providers::chaingateway::fuzz_api::{last_page, page_data, read_page};
}
