//! In-process fakes on loopback (demo, benchmarks, tests): a Chaingateway API, and a chain.

pub mod chaingateway;
