//! The command line's definitions (clap): parsed by `main.rs`, and the source of the man
//! pages and shell completions (`docs/man/`, `completions/`, regenerated and checked against
//! these definitions by `tests/it/cli_docs.rs`).

use std::path::PathBuf;

use clap::{CommandFactory, Parser, Subcommand, ValueEnum};

#[derive(Parser)]
#[command(
    name = "payrecon",
    version = crate::VERSION,
    about = "Reconciles crypto payment providers and chains against your orders ledger"
)]
pub struct Cli {
    /// Configuration file.
    #[arg(
        long,
        global = true,
        env = "PAYRECON_CONFIG",
        default_value = "./config.toml"
    )]
    pub config: PathBuf,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Daemon: scheduled runs, HTTP endpoints, graceful SIGTERM/SIGINT.
    Serve,
    /// One reconciliation pass (a backfill with --since), then exit.
    Run(RunArgs),
    /// Create or upgrade the schema, then exit.
    Migrate,
    /// Validate config, reach database, providers and chain RPCs; report each.
    Check,
    /// Self-contained sandbox: simulated provider + chain, SQLite, one run.
    #[cfg(feature = "demo")]
    Demo(DemoArgs),
    /// Read-only operator view: last runs, recent gaps, open findings, resends, inbox, leases.
    Status {
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// Events to your application: list them (read-only), or replay delivered/dead ones.
    Events(EventsArgs),
}

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct EventsArgs {
    #[command(subcommand)]
    pub action: Option<EventsAction>,
    /// Only events in this state.
    #[arg(long, value_enum)]
    pub status: Option<EventStatus>,
    /// Only the events of this order (its order_ref).
    #[arg(long)]
    pub order: Option<String>,
    /// At most this many (the newest).
    #[arg(long, default_value_t = 100)]
    pub limit: i64,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

#[derive(Subcommand)]
pub enum EventsAction {
    /// Put delivered or dead events back in the queue, ids unchanged.
    Replay(ReplayArgs),
}

#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("which").required(true).args(["id", "order", "since"])))]
pub struct ReplayArgs {
    /// One event, by its id (the webhook-id).
    #[arg(long)]
    pub id: Option<String>,
    /// Every event of this order.
    #[arg(long)]
    pub order: Option<String>,
    /// Every event written since T (RFC 3339, a date, or a duration back: 90m, 36h, 7d).
    #[arg(long)]
    pub since: Option<String>,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum EventStatus {
    Pending,
    Dead,
    Delivered,
}

#[derive(clap::Args)]
pub struct RunArgs {
    /// Start of the window: RFC 3339, a date (2026-11-01) or a duration back (90m, 36h, 7d).
    #[arg(long)]
    pub since: Option<String>,
    /// End of the window (same forms). Default: now.
    #[arg(long)]
    pub until: Option<String>,
    /// Only this provider (repeatable).
    #[arg(long = "provider")]
    pub providers: Vec<String>,
    /// Compute and report everything, write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Apply transitions but request no resends.
    #[arg(long)]
    pub no_resend: bool,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Exit 3 if the run found at least one gap (and nothing failed).
    #[arg(long)]
    pub fail_on_gaps: bool,
}

#[cfg(feature = "demo")]
#[derive(clap::Args)]
pub struct DemoArgs {
    /// Where to keep the demo ledger (default: a new temporary directory).
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum Format {
    Text,
    Json,
}

/// The command tree, for the man pages and completions.
pub fn command() -> clap::Command {
    Cli::command()
}
