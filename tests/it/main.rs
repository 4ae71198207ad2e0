//! Integration tests: one binary, one file per feature, against real SQLite, real
//! PostgreSQL, real anvil and fake provider HTTP servers on loopback.

mod api;
mod balances;
mod bitcoin;
mod chain;
mod chaingateway;
mod cli;
mod cli_docs;
mod console;
mod depfaults;
mod environment;
mod events;
mod evm;
mod exceptions;
mod grafana;
mod house;
mod http_provider;
mod ingest;
mod lease;
mod logs;
mod mysql;
mod presets;
mod reconcile;
mod reorg;
mod rpc;
mod serve;
mod solana;
mod status;
mod store;
mod support;
mod systemd;
mod tron;
mod webhook;
