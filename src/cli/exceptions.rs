//! `payrecon exceptions` (README.md, "Exceptions"): the list and one exception (read-only, like
//! `status`), and the decisions that settle one: `accept` and `attach` through the engine's
//! apply path (`engine::operator`), `dismiss` as one conditional UPDATE. Exit codes: 0 done, 1
//! refused or resolved by someone else first (who and when are said), 2 usage or an unknown id.

use super::Exit;
use std::fmt::Write as _;

use super::{
    CliError, ExceptionKind, ExceptionStatus, ExceptionsAction, ExceptionsArgs, Format, Outcome,
};
use crate::app::{db, Access};
use crate::config::Config;
use crate::engine::operator::{Decision, OperatorError};
use crate::store::{ExceptionFilter, ExceptionRow, Resolve};

/// Runs `payrecon exceptions …`.
pub async fn command(config: Config, args: ExceptionsArgs) -> Outcome {
    match args.action {
        None => list(&config, &args).await,
        Some(ExceptionsAction::Show { id, format }) => show(&config, id, format).await,
        Some(ExceptionsAction::Dismiss(d)) => {
            let r = resolve(d.id, "dismissed", d.by, d.reason).ok_or_else(usage_by)?;
            dismiss(&config, r).await
        }
        Some(ExceptionsAction::Accept(d)) => {
            let r = resolve(d.id, "accepted", d.by, d.reason).ok_or_else(usage_by)?;
            decide(config, r, None).await
        }
        Some(ExceptionsAction::Attach(a)) => {
            let r = resolve(a.id, "attached", a.by, a.reason).ok_or_else(usage_by)?;
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

fn usage_by() -> CliError {
    CliError::usage(
        "a decision needs a non-empty --reason, and a name: --by, or $SUDO_USER or $USER set",
    )
}

async fn list(config: &Config, args: &ExceptionsArgs) -> Outcome {
    if args.limit < 1 {
        return Err(CliError::usage("--limit must be at least 1"));
    }
    let filter = ExceptionFilter {
        status: match args.status {
            ExceptionStatus::Open => Some("open".into()),
            ExceptionStatus::Resolved => Some("resolved".into()),
            ExceptionStatus::All => None,
        },
        kind: args.kind.map(|k| kind_name(k).to_string()),
        order_ref: args.order.clone(),
        limit: args.limit,
        ..Default::default()
    };
    let store = db::open(config, Access::Read).await?;
    let rows = store.list_exceptions(&filter).await;
    store.close().await;
    let rows = rows?;
    match args.format {
        Format::Json => println!(
            "{}",
            serde_json::to_string_pretty(&rows).unwrap_or_default()
        ),
        Format::Text => print!("{}", table(&rows, &crate::assets::Assets::of(config))),
    }
    Ok(Exit::Done)
}

async fn show(config: &Config, id: i64, format: Format) -> Outcome {
    let store = db::open(config, Access::Read).await?;
    let row = store.exception(id).await;
    store.close().await;
    let x = row?.ok_or_else(|| unknown(id))?;
    match format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&x).unwrap_or_default()),
        Format::Text => print!("{}", detail(&x, &crate::assets::Assets::of(config))),
    }
    Ok(Exit::Done)
}

fn unknown(id: i64) -> CliError {
    CliError::usage(format!("no exception with id {id}"))
}

async fn dismiss(config: &Config, r: Resolve) -> Outcome {
    let store = db::open(config, Access::Write).await?;
    let done = crate::engine::operator::dismiss(&store, r.clone()).await;
    store.close().await;
    told(done, r.id, &r.by, r.resolution)
}

/// `accept` (no order) or `attach` (to `order`), through the engine's apply path; the
/// decision's event is flushed before exit, like a run's.
async fn decide(config: Config, r: Resolve, order: Option<String>) -> Outcome {
    let app = crate::app::App::build(config).await?;
    let (id, by, resolution) = (r.id, r.by.clone(), r.resolution);
    let done = match &order {
        None => app.engine.accept_exception(r).await,
        Some(o) => app.engine.attach_exception(r, o).await,
    };
    if let (Ok(Decision::Done(_)), Some(d)) = (&done, &app.events) {
        d.flush(d.config().flush_timeout).await;
    }
    told(done, id, &by, resolution)
}

/// What became of a decision, as the command says it (exit 0, or 1 or 2 with why).
fn told(done: Result<Decision, OperatorError>, id: i64, by: &str, resolution: &str) -> Outcome {
    match done {
        Ok(Decision::Done(what)) => {
            tracing::info!(exception = id, by = %by, resolution, "Exception decided.");
            println!("exception {id} {resolution} by {by}: {what}");
            Ok(Exit::Done)
        }
        Ok(Decision::Taken(x)) => Err(taken(&x)),
        Err(OperatorError::Unknown(id)) => Err(unknown(id)),
        Err(OperatorError::Refused(why)) => Err(CliError::failed(format!("refused: {why}"))),
        Err(OperatorError::Store(e)) => Err(e.into()),
    }
}

/// Resolved already: who, how and when (exit 1).
fn taken(x: &ExceptionRow) -> CliError {
    CliError::failed(format!(
        "exception {} is resolved already: {} by {} at {}; nothing changed",
        x.id,
        x.resolution.as_deref().unwrap_or("resolved"),
        x.resolved_by.as_deref().unwrap_or("?"),
        x.resolved_at.as_deref().unwrap_or("?"),
    ))
}

fn kind_name(k: ExceptionKind) -> &'static str {
    match k {
        ExceptionKind::AmountMismatch => "amount_mismatch",
        ExceptionKind::LatePayment => "late_payment",
        ExceptionKind::UnknownPayment => "unknown_payment",
        ExceptionKind::Reorged => "reorged",
        ExceptionKind::UnexpectedOutflow => "unexpected_outflow",
        ExceptionKind::BalanceMismatch => "balance_mismatch",
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
