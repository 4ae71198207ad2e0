//! What each man page says beyond its flags (EXIT STATUS, EXAMPLES, ENVIRONMENT, FILES):
//! rendered with the definitions of `args.rs` into docs/man/ by `tests/it/cli_docs.rs`.

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
            &[("0", "Queued (with --since, 0 events too)."), ("1", "A database error; events off; --id or --order naming no event, or only pending ones."), USAGE],
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
        _ => later_page(page).unwrap_or((
            &[("0", "The command succeeded."), ("1", "It did not (the reason on stderr, in one line)."), ("2", "Usage error."), ("3", "run --fail-on-gaps found gaps.")],
            &[("payrecon demo", "Tries payrecon in a sandbox."), ("payrecon --config /etc/payrecon/config.toml run", "One reconciliation pass.")],
        )),
    };
    ManExtra {
        exit_status,
        examples,
    }
}

/// The pages of the later commands (export, orders, balances, operators), else `None`.
fn later_page(page: &str) -> Option<(Pairs, Pairs)> {
    Some(match page {
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
        "payrecon-operators" | "payrecon-operators-add" | "payrecon-operators-remove" => (
            &[("0", "Written."), ("1", "The operators file cannot be read (a malformed line: its number) or written."), ("2", "A bad name, an empty password or two that differ, or remove of an operator the file does not hold.")],
            &[("printf '%s\\n' \"$PASSWORD\" | payrecon operators add ana@shop.example", "Adds an operator, the password from stdin."), ("payrecon operators remove ana@shop.example", "Removes one; her sessions end at the next request.")],
        ),
        _ => return None,
    })
}
