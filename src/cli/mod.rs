//! The command line: its definitions (`args`, also the man pages' and completions' source)
//! and the body of every command, one module each. `main` parses and calls `dispatch`;
//! every command returns its exit code or a `CliError`, which `main` prints once.
//!
//! Exit codes, the same for every command: 0 done; 1 failed (the database, a chain, a
//! refusal; what was done before the failure is kept); 2 usage (a bad flag, file or id);
//! 3 `run --fail-on-gaps` and gaps were found.

use std::process::ExitCode;

use crate::config::Config;

mod args;
mod balances;
mod check;
#[cfg(feature = "demo")]
pub mod demo;
mod events;
pub mod exceptions;
pub mod export;
mod man;
mod migrate;
mod operators;
pub mod orders;
mod run;
mod serve;
mod status;

pub use args::*;
pub use man::*;

/// How a command ended: the exit codes of the module's header, decided here only. A command
/// answers `Done`, `Failed` (its work was done and something in it failed, as `check`'s
/// FAILED lines) or `Gaps`, or stops with a `CliError` (`Failed` or `Usage`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Done = 0,
    Failed = 1,
    Usage = 2,
    Gaps = 3,
}

impl Exit {
    /// `Done` when `ok`, `Failed` otherwise.
    pub fn of(ok: bool) -> Exit {
        if ok {
            Exit::Done
        } else {
            Exit::Failed
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> ExitCode {
        ExitCode::from(e as u8)
    }
}

/// Why a command stopped, and its exit code. Its text is printed once, by `main.rs`, after
/// `dispatch` has scrubbed every secret of the configuration from it.
#[derive(Debug)]
pub struct CliError {
    code: Exit,
    message: String,
}

impl CliError {
    /// Exit 1: the command could not do its work.
    pub fn failed(e: impl std::fmt::Display) -> CliError {
        CliError {
            code: Exit::Failed,
            message: e.to_string(),
        }
    }

    /// Exit 2: the command line (a flag, a file, an id) is wrong.
    pub fn usage(e: impl std::fmt::Display) -> CliError {
        CliError {
            code: Exit::Usage,
            message: e.to_string(),
        }
    }

    pub fn exit_code(&self) -> Exit {
        self.code
    }

    /// The text with every secret of `config` masked.
    fn redacted(self, config: &[crate::secret::Secret]) -> CliError {
        CliError {
            code: self.code,
            message: crate::secret::redact_all(&self.message, config),
        }
    }
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<crate::store::StoreError> for CliError {
    /// A store error; a missing schema (`StoreError::NoSchema`) says to migrate.
    fn from(e: crate::store::StoreError) -> CliError {
        CliError::failed(e)
    }
}

impl From<crate::app::AppError> for CliError {
    fn from(e: crate::app::AppError) -> CliError {
        CliError::failed(e)
    }
}

/// What a command returns.
pub type Outcome = Result<Exit, CliError>;

/// `--since` and `--until` (`config::parse_time_arg`: a time, a date or a duration back from
/// `now`), `default_since` and `now` where not given; a bad value or `--since` after `--until`
/// is a usage error.
fn window(
    since: Option<&str>,
    until: Option<&str>,
    default_since: jiff::Timestamp,
    now: jiff::Timestamp,
) -> Result<(jiff::Timestamp, jiff::Timestamp), CliError> {
    let parse = |s: Option<&str>, default: jiff::Timestamp| match s {
        Some(s) => crate::config::parse_time_arg(s, now),
        None => Ok(default),
    };
    match (parse(since, default_since), parse(until, now)) {
        (Ok(s), Ok(u)) if s <= u => Ok((s, u)),
        (Ok(_), Ok(_)) => Err(CliError::usage("--since is after --until")),
        (Err(e), _) => Err(CliError::usage(format!("--since: {e}"))),
        (_, Err(e)) => Err(CliError::usage(format!("--until: {e}"))),
    }
}

/// The program: parses the command line, starts logging and the runtime, runs the command
/// and prints its error once, a line for each problem (secrets already masked by `dispatch`).
/// All of it here, not in `main.rs`: the binary's crate then instantiates nothing of its own
/// (its release build is a link, not a second compile of the library's generic code), and
/// holds no code that depends on feature `demo`.
pub fn main() -> ExitCode {
    use clap::Parser;
    let cli = Cli::parse();
    let logs = start_logging(&cli);
    let outcome = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt.block_on(dispatch(cli, logs)),
        Err(e) => Err(CliError::failed(format!("cannot start the runtime: {e}"))),
    };
    match outcome {
        Ok(code) => code.into(),
        Err(e) => {
            for line in e.to_string().lines() {
                eprintln!("payrecon: {line}");
            }
            e.exit_code().into()
        }
    }
}

/// Starts logging for `cli`'s command: the demo holds its log lines to print them after its
/// report; every other command logs as it goes (`PAYRECON_LOG`).
fn start_logging(cli: &Cli) -> Option<crate::telemetry::HeldLog> {
    #[cfg(feature = "demo")]
    if let Command::Demo(_) = cli.command {
        return crate::telemetry::init_demo();
    }
    #[cfg(not(feature = "demo"))]
    let _ = cli;
    crate::telemetry::init();
    None
}

/// Runs `cli`'s command. `logs` are the demo's held log lines (printed after its report).
pub async fn dispatch(cli: Cli, logs: Option<crate::telemetry::HeldLog>) -> Outcome {
    #[cfg(feature = "demo")]
    if let Command::Demo(args) = &cli.command {
        return demo::command(args.dir.clone(), logs).await;
    }
    let _ = logs;
    let config = Config::load(&cli.config).map_err(CliError::failed)?;
    let secrets: Vec<crate::secret::Secret> = config.secrets().into_iter().cloned().collect();
    let outcome = match cli.command {
        Command::Migrate => migrate::command(&config).await,
        Command::Check => check::command(config).await,
        Command::Status { format } => status::command(&config, format).await,
        Command::Run(args) => run::command(config, args).await,
        Command::Events(args) => events::command(&config, args).await,
        Command::Exceptions(args) => exceptions::command(config, args).await,
        Command::Export(args) => export::command(config, args).await,
        Command::Orders(args) => orders::command(config, args).await,
        Command::Balances(args) => balances::command(config, args).await,
        Command::Operators(args) => operators::command(&config, args),
        Command::Serve => serve::command(config).await,
        #[cfg(feature = "demo")]
        Command::Demo(_) => unreachable!("dispatched above"),
    };
    outcome.map_err(|e| e.redacted(&secrets))
}
