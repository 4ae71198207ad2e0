//! `payrecon exceptions` (README.md, "Exceptions"): the list and one exception (read-only, like
//! `status`), and the decisions that settle one: `accept` and `attach` through the engine's
//! apply path (`engine::operator`), `dismiss` as one conditional UPDATE. Exit codes: 0 done, 1
//! refused or resolved by someone else first (who and when are said), 2 usage or an unknown id.

use std::fmt::Write as _;
use std::process::ExitCode;

use crate::cli::{ExceptionKind, ExceptionStatus, ExceptionsAction, ExceptionsArgs, Format};
use crate::config::Config;
use crate::engine::operator::{Decision, OperatorError};
use crate::store::{ExceptionFilter, ExceptionRow, Resolve, Store, StoreError};

/// Runs `payrecon exceptions …`.
pub async fn command(config: Config, args: ExceptionsArgs) -> ExitCode {
    match args.action {
        None => list(&config, &args).await,
        Some(ExceptionsAction::Show { id, format }) => show(&config, id, format).await,
        Some(ExceptionsAction::Dismiss(d)) => {
            let Some(r) = resolve(d.id, "dismissed", d.by, d.reason) else {
                return usage_by();
            };
            dismiss(&config, r).await
        }
        Some(ExceptionsAction::Accept(d)) => {
            let Some(r) = resolve(d.id, "accepted", d.by, d.reason) else {
                return usage_by();
            };
            decide(config, r, None).await
        }
        Some(ExceptionsAction::Attach(a)) => {
            let Some(r) = resolve(a.id, "attached", a.by, a.reason) else {
                return usage_by();
            };
            decide(config, r, Some(a.order)).await
        }
    }
}

/// Who decides: `--by`, else `$SUDO_USER`, else `$USER`; `None` when a reason is blank or no
/// name is known.
fn resolve(
    id: i64,
    resolution: &'static str,
    by: Option<String>,
    reason: String,
) -> Option<Resolve> {
    let by = by
        .or_else(|| std::env::var("SUDO_USER").ok())
        .or_else(|| std::env::var("USER").ok())
        .filter(|b| !b.trim().is_empty())?;
    let note = reason.trim().to_string();
    (!note.is_empty()).then_some(Resolve {
        id,
        resolution,
        by,
        note,
        order_paid: None,
    })
}

fn usage_by() -> ExitCode {
    eprintln!(
        "payrecon: a decision needs a non-empty --reason, and a name: --by, or $SUDO_USER or \
         $USER set"
    );
    ExitCode::from(2)
}

fn fail(config: &Config, e: &dyn std::fmt::Display) -> ExitCode {
    let text = crate::secret::redact(&e.to_string(), &config.secrets());
    if text.contains("payrecon_exceptions") {
        eprintln!("payrecon: {text}; run `payrecon migrate` first");
    } else {
        eprintln!("payrecon: {text}");
    }
    ExitCode::from(1)
}

async fn read_only(config: &Config) -> Result<Store, StoreError> {
    Store::connect_read_only(
        config.database.url.expose(),
        config.database.max_connections,
    )
    .await
}

async fn close(store: Store) {
    store.close().await;
}

async fn list(config: &Config, args: &ExceptionsArgs) -> ExitCode {
    if args.limit < 1 {
        eprintln!("payrecon: --limit must be at least 1");
        return ExitCode::from(2);
    }
    let filter = ExceptionFilter {
        status: match args.status {
            ExceptionStatus::Open => Some("open".into()),
            ExceptionStatus::Resolved => Some("resolved".into()),
            ExceptionStatus::All => None,
        },
        kind: args.kind.map(|k| kind_name(k).to_string()),
        order_ref: args.order.clone(),
        id: None,
        limit: args.limit,
    };
    let store = match read_only(config).await {
        Ok(s) => s,
        Err(e) => return fail(config, &e),
    };
    let rows = store.list_exceptions(&filter).await;
    close(store).await;
    match rows {
        Ok(rows) => {
            match args.format {
                Format::Json => println!(
                    "{}",
                    serde_json::to_string_pretty(&rows).unwrap_or_default()
                ),
                Format::Text => print!("{}", table(&rows, &crate::assets::Assets::of(config))),
            }
            ExitCode::SUCCESS
        }
        Err(e) => fail(config, &e),
    }
}

async fn show(config: &Config, id: i64, format: Format) -> ExitCode {
    let store = match read_only(config).await {
        Ok(s) => s,
        Err(e) => return fail(config, &e),
    };
    let row = store.exception(id).await;
    close(store).await;
    match row {
        Ok(Some(x)) => {
            match format {
                Format::Json => {
                    println!("{}", serde_json::to_string_pretty(&x).unwrap_or_default())
                }
                Format::Text => print!("{}", detail(&x, &crate::assets::Assets::of(config))),
            }
            ExitCode::SUCCESS
        }
        Ok(None) => unknown(id),
        Err(e) => fail(config, &e),
    }
}

fn unknown(id: i64) -> ExitCode {
    eprintln!("payrecon: no exception with id {id}");
    ExitCode::from(2)
}

async fn dismiss(config: &Config, r: Resolve) -> ExitCode {
    let store = match Store::connect(config.database.url.expose(), 2).await {
        Ok(s) => s,
        Err(e) => return fail(config, &e),
    };
    let done = store.dismiss_exception(&r).await;
    close(store).await;
    match done {
        Ok(None) => {
            tracing::info!(exception = r.id, by = %r.by, "Exception dismissed.");
            println!(
                "exception {} dismissed by {}: the ledger is unchanged",
                r.id, r.by
            );
            ExitCode::SUCCESS
        }
        Ok(Some(x)) => taken(&x),
        Err(StoreError::Invalid(_)) => unknown(r.id),
        Err(e) => fail(config, &e),
    }
}

/// `accept` (no order) or `attach` (to `order`), through the engine's apply path; the
/// decision's event is flushed before exit, like a run's.
async fn decide(config: Config, r: Resolve, order: Option<String>) -> ExitCode {
    let secrets: Vec<crate::secret::Secret> = config.secrets().into_iter().cloned().collect();
    let app = match crate::app::App::build(config).await {
        Ok(a) => a,
        Err(e) => {
            let refs: Vec<&crate::secret::Secret> = secrets.iter().collect();
            eprintln!("payrecon: {}", crate::secret::redact(&e.to_string(), &refs));
            return ExitCode::from(1);
        }
    };
    let (id, by, resolution) = (r.id, r.by.clone(), r.resolution);
    let done = match &order {
        None => app.engine.accept_exception(r).await,
        Some(o) => app.engine.attach_exception(r, o).await,
    };
    match done {
        Ok(Decision::Done(what)) => {
            if let Some(d) = &app.events {
                d.flush(d.config().flush_timeout).await;
            }
            println!("exception {id} {resolution} by {by}: {what}");
            ExitCode::SUCCESS
        }
        Ok(Decision::Taken(x)) => taken(&x),
        Err(OperatorError::Unknown(id)) => unknown(id),
        Err(OperatorError::Refused(why)) => {
            eprintln!("payrecon: refused: {why}");
            ExitCode::from(1)
        }
        Err(OperatorError::Store(e)) => {
            eprintln!("payrecon: {}", app.engine.redact(&e));
            ExitCode::from(1)
        }
    }
}

/// Resolved already: who, how and when (exit 1).
fn taken(x: &ExceptionRow) -> ExitCode {
    eprintln!(
        "payrecon: exception {} is resolved already: {} by {} at {}; nothing changed",
        x.id,
        x.resolution.as_deref().unwrap_or("resolved"),
        x.resolved_by.as_deref().unwrap_or("?"),
        x.resolved_at.as_deref().unwrap_or("?"),
    );
    ExitCode::from(1)
}

fn kind_name(k: ExceptionKind) -> &'static str {
    match k {
        ExceptionKind::AmountMismatch => "amount_mismatch",
        ExceptionKind::LatePayment => "late_payment",
        ExceptionKind::UnknownPayment => "unknown_payment",
        ExceptionKind::Reorged => "reorged",
    }
}

/// The list as a table, newest first.
pub fn table(rows: &[ExceptionRow], assets: &crate::assets::Assets) -> String {
    let mut s = String::new();
    if rows.is_empty() {
        let _ = writeln!(s, "no exceptions match");
        return s;
    }
    let _ = writeln!(
        s,
        "{:>6}  {:<15} {:<8} {:<16} {:>5}  {:<24} detail",
        "id", "kind", "status", "order", "seen", "first seen"
    );
    for x in rows {
        let _ = writeln!(
            s,
            "{:>6}  {:<15} {:<8} {:<16} {:>5}  {:<24} {}",
            x.id,
            x.kind,
            x.status,
            x.order_ref.as_deref().unwrap_or("-"),
            x.seen_count,
            x.first_seen_at,
            assets.detail(&x.chain, x.asset.as_deref(), &x.detail)
        );
    }
    s
}

/// One exception, a field per line.
pub fn detail(x: &ExceptionRow, assets: &crate::assets::Assets) -> String {
    let mut s = String::new();
    let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
    let fields: [(&str, String); 17] = [
        ("id", x.id.to_string()),
        ("kind", x.kind.clone()),
        ("status", x.status.clone()),
        ("order", opt(&x.order_ref)),
        ("order id", x.order_id.map_or("-".into(), |i| i.to_string())),
        ("chain", x.chain.clone()),
        ("tx hash", opt(&x.tx_hash)),
        (
            "log index",
            match x.log_index {
                Some(-1) => "native (no log)".into(),
                Some(i) => i.to_string(),
                None => "-".into(),
            },
        ),
        (
            "amount",
            match &x.amount {
                Some(a) => match assets.tokens(&x.chain, x.asset.as_deref().unwrap_or(""), a) {
                    Some(t) => format!("{t} ({a} base units)"),
                    None => format!("{a} base units"),
                },
                None => "-".into(),
            },
        ),
        (
            "detail",
            assets.detail(&x.chain, x.asset.as_deref(), &x.detail),
        ),
        ("first seen", x.first_seen_at.clone()),
        ("last seen", x.last_seen_at.clone()),
        ("seen by runs", x.seen_count.to_string()),
        ("resolved at", opt(&x.resolved_at)),
        ("resolved by", opt(&x.resolved_by)),
        ("resolution", opt(&x.resolution)),
        ("note", opt(&x.note)),
    ];
    for (k, v) in fields {
        let _ = writeln!(s, "{k:<13} {v}");
    }
    s
}
