//! Leases between instances on one database: the store primitives and their fencing check
//! (`lease/store.rs`), scheduled runs skipping a provider leased elsewhere (`lease/engine.rs`),
//! one `serve` per SQLite file (`lease/sqlite.rs`), and two `serve` processes sharing a
//! PostgreSQL or a MariaDB/MySQL database with a SIGKILLed holder (`lease/shared.rs`).

mod engine;
mod pair;
mod shared;
mod sqlite;
mod store;
