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
    /// Exceptions waiting for a person: list, show, accept, attach or dismiss them.
    Exceptions(ExceptionsArgs),
    /// Credited payments for finance, one row each: CSV (RFC 4180) or JSON lines (read-only).
    Export(ExportArgs),
    /// Register expected payments: one (add), or a CSV file of them (import).
    Orders(OrdersArgs),
    /// Deposit addresses' balances against the ledger: the last checks (read-only), or check now.
    Balances(BalancesArgs),
    /// The console's operators ([console] operators_file): add one, or remove one.
    Operators(OperatorsArgs),
}

#[derive(clap::Args)]
pub struct OperatorsArgs {
    #[command(subcommand)]
    pub action: OperatorsAction,
}

#[derive(Subcommand)]
pub enum OperatorsAction {
    /// Add an operator, or give one a new password: read at a prompt without echo (twice), or
    /// one line of stdin when it is not a terminal; written as an argon2id hash.
    Add {
        /// 1 to 64 letters, digits, '.', '_', '-' or '@' (shown on its decisions).
        name: String,
    },
    /// Remove an operator.
    Remove { name: String },
}

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct BalancesArgs {
    #[command(subcommand)]
    pub action: Option<BalancesAction>,
    /// Only this chain's addresses.
    #[arg(long)]
    pub chain: Option<String>,
    /// Only the addresses with a difference nothing explains.
    #[arg(long)]
    pub mismatched: bool,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

#[derive(Subcommand)]
pub enum BalancesAction {
    /// Check now: each deposit address of the orders created within [balances] lookback, at
    /// the chain's final block; prints a run report (exit 1 when a chain could not be checked).
    Check {
        /// Only this chain's addresses.
        #[arg(long)]
        chain: Option<String>,
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
}

#[derive(clap::Args)]
pub struct OrdersArgs {
    #[command(subcommand)]
    pub action: OrdersAction,
}

#[derive(Subcommand)]
pub enum OrdersAction {
    /// Register one expected payment (the same again changes nothing; exit 1 when the ref is
    /// registered with other fields, 2 when a field is invalid).
    Add(OrderAddArgs),
    /// Register every row of a CSV file (header order_ref,chain,pay_to,asset,amount_due,
    /// expires_at,reference; the last two optional), committed per 1,000 rows; bad rows are
    /// named by line, the good ones kept.
    Import {
        /// The CSV file (RFC 4180; `-` reads standard input).
        file: PathBuf,
    },
}

#[derive(clap::Args)]
pub struct OrderAddArgs {
    /// The shop's order id (1 to 128 characters, unique).
    #[arg(long = "ref")]
    pub order_ref: String,
    /// A configured chain.
    #[arg(long)]
    pub chain: String,
    /// The deposit address, by the chain's rules.
    #[arg(long)]
    pub pay_to: String,
    /// `native`, or a token contract with an [assets] table.
    #[arg(long)]
    pub asset: String,
    /// The amount due in base units (25 USDT = 25000000).
    #[arg(long)]
    pub amount: String,
    /// When the order stops taking payments (RFC 3339).
    #[arg(long)]
    pub expires_at: Option<String>,
    /// Solana only: the order's Solana Pay reference (base58 of 32 bytes).
    #[arg(long)]
    pub reference: Option<String>,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ExceptionsArgs {
    #[command(subcommand)]
    pub action: Option<ExceptionsAction>,
    /// Which exceptions.
    #[arg(long, value_enum, default_value = "open")]
    pub status: ExceptionStatus,
    /// Only exceptions of this kind.
    #[arg(long, value_enum)]
    pub kind: Option<ExceptionKind>,
    /// Only the exceptions of this order (its order_ref).
    #[arg(long)]
    pub order: Option<String>,
    /// At most this many (the newest).
    #[arg(long, default_value_t = 100)]
    pub limit: i64,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

#[derive(Subcommand)]
pub enum ExceptionsAction {
    /// One exception in full.
    Show {
        /// The exception's id.
        id: i64,
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// A held order (amount_mismatch, late_payment): advance it to the state its payments have.
    Accept(DecideArgs),
    /// A payment to no order (unknown_payment): credit it to an order; the chain decides its state.
    Attach(AttachArgs),
    /// Close it with the ledger unchanged (refunded elsewhere, a test payment).
    Dismiss(DecideArgs),
}

#[derive(clap::Args)]
pub struct DecideArgs {
    /// The exception's id.
    pub id: i64,
    /// Why (kept on the exception, with who and when).
    #[arg(long)]
    pub reason: String,
    /// Who decides. Default: $SUDO_USER, then $USER.
    #[arg(long)]
    pub by: Option<String>,
}

#[derive(clap::Args)]
pub struct AttachArgs {
    /// The exception's id.
    pub id: i64,
    /// The order to credit the payment to (its order_ref).
    #[arg(long)]
    pub order: String,
    /// Why (kept on the exception, with who and when).
    #[arg(long)]
    pub reason: String,
    /// Who decides. Default: $SUDO_USER, then $USER.
    #[arg(long)]
    pub by: Option<String>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExceptionStatus {
    Open,
    Resolved,
    All,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum ExceptionKind {
    AmountMismatch,
    LatePayment,
    UnknownPayment,
    Reorged,
    UnexpectedOutflow,
    BalanceMismatch,
}

#[derive(clap::Args)]
pub struct ExportArgs {
    /// Payments in blocks at or after T: RFC 3339, a date (2026-11-01) or a duration back (7d).
    /// Default: the beginning.
    #[arg(long)]
    pub since: Option<String>,
    /// Payments in blocks before T (same forms). Default: now.
    #[arg(long)]
    pub until: Option<String>,
    #[arg(long, value_enum, default_value = "csv")]
    pub format: ExportFormat,
    /// Write here (created or truncated before anything is read). Default: standard output.
    #[arg(long)]
    pub output: Option<PathBuf>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    Csv,
    Json,
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
