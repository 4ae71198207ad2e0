#![forbid(unsafe_code)]
//! The payrecon command line: parse, start logging and the runtime, dispatch (`payrecon::cli`),
//! print the error once.

use std::process::ExitCode;

use clap::Parser;

use payrecon::cli::{Cli, CliError};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let logs = payrecon::cli::start_logging(&cli);
    let outcome = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt.block_on(payrecon::cli::dispatch(cli, logs)),
        Err(e) => Err(CliError::failed(format!("cannot start the runtime: {e}"))),
    };
    match outcome {
        Ok(code) => code,
        Err(e) => {
            // Secrets are already masked (`dispatch`); a line for each problem.
            for line in e.to_string().lines() {
                eprintln!("payrecon: {line}");
            }
            e.exit_code()
        }
    }
}
