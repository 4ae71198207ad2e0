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

/// What a command's man page says beyond its flags (docs/man/, rendered by
/// `tests/it/cli_docs.rs` from these and the definitions above: one source).
pub struct ManExtra {
    /// EXIT STATUS: `(code, meaning)`.
    pub exit_status: &'static [(&'static str, &'static str)],
    /// EXAMPLES: `(command line, what it does)`.
    pub examples: &'static [(&'static str, &'static str)],
}

/// ENVIRONMENT, the same for every command: `(variable, meaning)`.
pub const MAN_ENVIRONMENT: &[(&str, &str)] = &[
    ("PAYRECON_CONFIG", "The configuration file when --config is not given (default ./config.toml)."),
    ("PAYRECON_<SECTION>__<KEY>", "Overrides a configuration key (upper case, __ between levels), e.g. PAYRECON_DATABASE__URL or PAYRECON_PROVIDERS__CG__API_KEY."),
    ("CREDENTIALS_DIRECTORY", "Set by systemd's LoadCredential=: a relative <key>_file names a credential in it."),
    ("PAYRECON_LOG", "The log filter (error, warn, info, debug, or per module), default info; RUST_LOG is read when it is unset. Logs go to stderr."),
    ("PAYRECON_LOG_FORMAT", "json: one JSON object per stderr line (for journald), with the run's id and the provider in its spans."),
    ("SUDO_USER, USER", "Who decides on an exception when --by is not given."),
];

/// FILES, the same for every command: `(path, meaning)`.
pub const MAN_FILES: &[(&str, &str)] = &[
    ("./config.toml", "The configuration read by default (every key: the reference config.toml)."),
    ("/etc/payrecon/config.toml", "The packaged configuration, read by payrecon.service."),
    ("/var/lib/payrecon/payrecon.db", "The packaged SQLite ledger (StateDirectory=payrecon). A relative SQLite file or *_file in the configuration is relative to the configuration file's folder."),
    ("/etc/payrecon/credentials/", "Secrets for LoadCredential= (mode 0700)."),
];

/// `(term, text)` rows of a man page section.
type Pairs = &'static [(&'static str, &'static str)];

/// Exit status 2 as most pages word it.
const USAGE: (&str, &str) = ("2", "Usage error: an unknown flag or a bad value.");

/// The extra sections of the page named `page` (`payrecon-exceptions-accept`, ...).
pub fn man_extra(page: &str) -> ManExtra {
    let (exit_status, examples): (Pairs, Pairs) = match page {
        "payrecon-serve" => (
            &[("0", "Stopped by SIGTERM or SIGINT (the current run finished within reconcile.shutdown_grace)."), ("1", "The start was refused or failed: configuration, database, chain id, finality tag, migration, a SQLite file another serve holds, or a listener that cannot bind.")],
            &[("payrecon --config /etc/payrecon/config.toml serve", "Runs on schedule.cron, serves /metrics, /healthz, /readyz and the webhooks, logs when it runs next.")],
        ),
        "payrecon-run" => (
            &[("0", "Every provider and chain completed."), ("1", "Something did not: a provider or a chain failed after retries (the others' work is kept; the report names it), a store statement failed, or the run could not start (configuration, database, a chain refused, migration)."), USAGE, ("3", "--fail-on-gaps and the run found gaps (nothing failed).")],
            &[("payrecon run", "One pass over the last schedule.lookback."), ("payrecon run --since 2026-11-01 --format json", "A backfill from a date, the report as one JSON document."), ("payrecon run --dry-run --provider cg", "What one provider's lists would change, writing nothing.")],
        ),
        "payrecon-migrate" => (
            &[("0", "The schema is up to date."), ("1", "The configuration could not be loaded, the database could not be reached, or a migration failed.")],
            &[("PAYRECON_DATABASE__URL=postgres://payrecon@db/ledger payrecon migrate", "Creates or upgrades the schema on PostgreSQL.")],
        ),
        "payrecon-check" => (
            &[("0", "Every line is ok (or WARN)."), ("1", "A line is FAILED: the database (a missing SQLite file is never created), a chain or a provider.")],
            &[("payrecon check", "Reaches the database, every chain and every provider, one line each.")],
        ),
        "payrecon-demo" => (
            &[("0", "The demo ran."), ("1", "It failed.")],
            &[("payrecon demo", "A sandbox provider, chain and SQLite ledger on loopback; one real run.")],
        ),
        "payrecon-status" => (
            &[("0", "Printed."), ("1", "The database cannot be read: unreachable, a SQLite file that does not exist (never created), or payrecon's tables missing.")],
            &[("payrecon status", "The last run per provider and chain, recent gaps, open exceptions, events, when serve runs next."), ("payrecon status --format json", "The same as one JSON document.")],
        ),
        "payrecon-events" => (
            &[("0", "Listed."), ("1", "A database error (a missing table: run payrecon migrate)."), USAGE],
            &[("payrecon events --status dead", "The events the merchant's application never accepted.")],
        ),
        "payrecon-events-replay" => (
            &[("0", "Queued (including 0 events)."), ("1", "A database error."), USAGE],
            &[("payrecon events replay --order A-1001", "Sends an order's events again, in order.")],
        ),
        "payrecon-exceptions" | "payrecon-exceptions-show" => (
            &[("0", "Printed."), ("1", "A database error."), ("2", "Usage error, or show of an unknown id.")],
            &[("payrecon exceptions --kind amount_mismatch", "The open underpaid orders."), ("payrecon exceptions show 42", "One exception, whole.")],
        ),
        "payrecon-exceptions-accept" => (
            &[("0", "Decided: the problem is settled; the order moves when no other problem holds it."), ("1", "Refused (not a held order, a top-up meanwhile, a late payment that leaves the order short), already resolved by someone else (who and when are printed), or a database error."), ("2", "Unknown id, a blank --reason, or no --by and no $SUDO_USER/$USER.")],
            &[("payrecon exceptions accept 42 --reason \"customer paid the rest by card\"", "Accepts a held order's problem, as $SUDO_USER or $USER.")],
        ),
        "payrecon-exceptions-attach" => (
            &[("0", "Decided: the payment is credited to the order."), ("1", "Refused (an unknown order, a payment already credited, the chain cannot be read), already resolved by someone else, or a database error."), ("2", "Unknown id, a blank --reason, or no --by.")],
            &[("payrecon exceptions attach 43 --order A-1001 --reason \"paid to an old address\"", "Credits a payment to no order to A-1001; the chain decides its state.")],
        ),
        "payrecon-exceptions-dismiss" => (
            &[("0", "Closed, the ledger unchanged."), ("1", "Already resolved by someone else, or a database error."), ("2", "Unknown id, a blank --reason, or no --by.")],
            &[("payrecon exceptions dismiss 44 --reason \"refunded 5 USDT\"", "Closes it; nothing in the ledger changes.")],
        ),
        "payrecon-export" => (
            &[("0", "Written."), ("1", "--output's folder cannot be written, or a database error (an existing --output is left untouched)."), USAGE],
            &[("payrecon export --since 2026-11-01 --until 2026-12-01 --output november.csv", "November's credited payments for finance, CSV.")],
        ),
        "payrecon-orders" | "payrecon-orders-add" => (
            &[("0", "Registered, or already registered with the same fields."), ("1", "The ref is registered with other fields, or a database error."), ("2", "A field is invalid.")],
            &[("payrecon orders add --ref A-1001 --chain ethereum --pay-to 0x52908400098527886e0f7030069857d2e4169ee7 --asset native --amount 15000000000000000", "Expects 0.015 ETH (in wei) for A-1001.")],
        ),
        "payrecon-orders-import" => (
            &[("0", "Every row registered or already registered."), ("1", "A row conflicting or invalid, or a database error."), ("2", "The file cannot be opened, or its header is bad.")],
            &[("payrecon orders import orders.csv", "Registers a CSV file of expected payments.")],
        ),
        "payrecon-balances" => (
            &[("0", "Printed."), ("1", "A database error (a missing table: run payrecon migrate)."), USAGE],
            &[("payrecon balances --mismatched", "The deposit addresses whose balance nothing explains."), ("payrecon balances --chain ethereum --format json", "One chain's last checks as JSON, amounts in base units.")],
        ),
        "payrecon-balances-check" => (
            &[("0", "Every deposit address in scope was checked (differences are gaps in the report, not failures)."), ("1", "A chain could not be checked (its node, a past block it cannot answer, a kind not supported yet) or a database error; the others' work is kept."), USAGE],
            &[("payrecon balances check", "Checks every deposit address of the orders created within [balances] lookback, at each chain's final block."), ("payrecon balances check --chain ethereum --format json", "One chain, the report as JSON.")],
        ),
        _ => (
            &[("0", "The command succeeded."), ("1", "It did not (the reason on stderr, in one line)."), ("2", "Usage error."), ("3", "run --fail-on-gaps found gaps.")],
            &[("payrecon demo", "Tries payrecon in a sandbox."), ("payrecon --config /etc/payrecon/config.toml run", "One reconciliation pass.")],
        ),
    };
    ManExtra {
        exit_status,
        examples,
    }
}
