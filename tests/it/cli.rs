//! `payrecon run`, `migrate` and `check` as child processes: the report on stdout, exit
//! codes, dry runs, environment overrides, secrets, resends across processes, a killed run.

pub(crate) mod harness;

mod balances;
pub(crate) mod codes;
mod commands;
mod kill;
mod operators;
mod paths;
mod report;
mod writes;
