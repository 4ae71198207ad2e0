//! `payrecon run`: one reconciliation pass over a window (a backfill with `--since`), its
//! events flushed within `[events] flush_timeout`, the report printed. Exit codes: 0 every
//! part completed, 1 a part failed (the others' work is kept) or the run could not start, 2
//! usage (a bad time, `--since` after `--until`, an unknown `--provider`), 3 `--fail-on-gaps`
//! and gaps were found.

use super::Exit;

use super::{CliError, Format, Outcome, RunArgs};

/// Runs `payrecon run`.
pub async fn command(config: crate::config::Config, args: RunArgs) -> Outcome {
    use std::io::IsTerminal;
    let now = jiff::Timestamp::now();
    let lookback = jiff::SignedDuration::try_from(config.schedule.lookback)
        .unwrap_or(jiff::SignedDuration::ZERO);
    let default_since = now
        .checked_sub(lookback)
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    let (since, until) = super::window(
        args.since.as_deref(),
        args.until.as_deref(),
        default_since,
        now,
    )?;
    // A usage error, whatever the state of the database.
    configured(&config, &args.providers)?;
    // A dry run writes nothing: it never creates or migrates the database.
    let start = if args.dry_run {
        crate::app::App::start_dry(config).await
    } else {
        crate::app::App::start(config).await
    };
    let app = start?;
    let opts = crate::engine::RunOptions {
        since,
        until,
        providers: args.providers,
        dry_run: args.dry_run,
        no_resend: args.no_resend,
        trigger: crate::engine::Trigger::Cli,
        progress: std::io::stderr().is_terminal(),
        backfill: args.since.is_some(),
    };
    let report = match app.engine.run(&opts).await {
        Ok(r) => r,
        Err(crate::engine::EngineError::UnknownProvider(p)) => {
            return Err(CliError::usage(format!(
                "--provider {p:?} is not configured"
            )))
        }
        Err(e) => return Err(CliError::failed(e)),
    };
    // The run's events (and any others due) go out before it exits, within flush_timeout.
    if let (Some(d), false) = (&app.events, args.dry_run) {
        let within = d.config().flush_timeout;
        let f = d.flush(within).await;
        tracing::info!(
            delivered = f.delivered,
            failed = f.failed,
            dead = f.dead,
            "Events flushed."
        );
    }
    match args.format {
        Format::Json => {
            report
                .write_json(std::io::stdout().lock())
                .map_err(|e| CliError::failed(format!("could not write the report: {e}")))?;
        }
        Format::Text => print!(
            "{}",
            report.to_text_with(&crate::assets::Assets::of(&app.config))
        ),
    }
    #[cfg(feature = "stats")]
    crate::stats::write_run_stats_if_asked();
    Ok(if report.any_failed() {
        Exit::Failed
    } else if args.fail_on_gaps && report.totals.gaps > 0 {
        Exit::Gaps
    } else {
        Exit::Done
    })
}

/// Every `--provider` is a configured one.
fn configured(config: &crate::config::Config, asked: &[String]) -> Result<(), CliError> {
    let Some(p) = asked
        .iter()
        .find(|p| !config.providers.iter().any(|c| c.name() == p.as_str()))
    else {
        return Ok(());
    };
    let known: Vec<String> = config
        .providers
        .iter()
        .map(|c| format!("{:?}", c.name()))
        .collect();
    Err(CliError::usage(format!(
        "--provider {p:?} is not configured; {}",
        if known.is_empty() {
            "no provider is".to_string()
        } else {
            format!("the configured ones are {}", known.join(", "))
        }
    )))
}
