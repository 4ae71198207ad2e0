#![forbid(unsafe_code)]
//! The payrecon command line: parse, load config, init logging, dispatch.

use std::process::ExitCode;

use clap::Parser;

use payrecon::cli::{Cli, Command, EventStatus, EventsAction, EventsArgs, Format, RunArgs};

fn main() -> ExitCode {
    let cli = Cli::parse();
    #[cfg(feature = "demo")]
    let held = match cli.command {
        Command::Demo(_) => payrecon::telemetry::init_demo(),
        _ => {
            payrecon::telemetry::init();
            None
        }
    };
    #[cfg(not(feature = "demo"))]
    payrecon::telemetry::init();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail(&format!("cannot start the runtime: {e}")),
    };
    #[cfg(feature = "demo")]
    if let Command::Demo(args) = &cli.command {
        return rt.block_on(async {
            let result = payrecon::demo::run_demo(args.dir.clone()).await;
            // The log comes after the report, on stderr, whether the demo worked or not.
            if let Some(log) = held.map(|h| h.take()).filter(|l| !l.is_empty()) {
                if !payrecon::telemetry::json() {
                    eprintln!();
                    eprintln!(
                        "Log (warn and above; PAYRECON_LOG=info shows every line as it happens):"
                    );
                }
                eprint!("{log}");
            }
            match result {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => fail(&e.to_string()),
            }
        });
    }
    rt.block_on(dispatch(cli))
}

fn fail(msg: &str) -> ExitCode {
    eprintln!("payrecon: {msg}");
    ExitCode::from(1)
}

async fn dispatch(cli: Cli) -> ExitCode {
    let config = match payrecon::config::Config::load(&cli.config) {
        Ok(c) => c,
        Err(e) => return fail(&e.to_string()),
    };
    match cli.command {
        Command::Migrate => {
            let mut config = config;
            config.database.migrate = true;
            match payrecon::app::App::build(config).await {
                Ok(_) => {
                    eprintln!("payrecon: schema is up to date");
                    ExitCode::SUCCESS
                }
                Err(e) => fail(&e.to_string()),
            }
        }
        Command::Check => {
            // Every item is reported, the database included: an unreachable database is a
            // FAILED line, and the chains and providers are still checked.
            let (lines, ok) = match payrecon::app::App::check_config(config).await {
                Ok(r) => r,
                Err(e) => return fail(&e.to_string()),
            };
            for l in lines {
                println!("{l}");
            }
            if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Command::Run(args) => run(config, args).await,
        Command::Status { format } => match payrecon::status::collect(&config).await {
            Ok(status) => {
                match format {
                    Format::Json => println!("{}", status.to_json()),
                    Format::Text => print!("{}", status.to_text()),
                }
                ExitCode::SUCCESS
            }
            Err(e) => fail(&e.to_string()),
        },
        Command::Events(args) => events(&config, args).await,
        Command::Exceptions(args) => payrecon::exceptions::command(config, args).await,
        Command::Export(args) => payrecon::export::command(config, args).await,
        Command::Orders(args) => payrecon::orders::command(config, args).await,
        Command::Serve => {
            // Before anything else, so that no signal finds the default handlers.
            let shutdown = shutdown_signal();
            // A second serve on a SQLite file is refused before it migrates or reads a chain
            // (serve takes the lock for good once started).
            if let Err(e) = payrecon::serve::exclusive_sqlite(config.database.url.expose()) {
                return fail(&e.to_string());
            }
            let app = match payrecon::app::App::start(config).await {
                Ok(a) => a,
                Err(e) => return fail(&e.to_string()),
            };
            match payrecon::serve::serve(app, shutdown, |_| {}).await {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => fail(&e.to_string()),
            }
        }
        #[cfg(feature = "demo")]
        Command::Demo(_) => unreachable!("handled in main"),
    }
}

async fn run(config: payrecon::config::Config, args: RunArgs) -> ExitCode {
    use std::io::IsTerminal;
    let now = jiff::Timestamp::now();
    let parse = |s: &Option<String>, default: jiff::Timestamp| match s {
        Some(s) => payrecon::config::parse_time_arg(s, now),
        None => Ok(default),
    };
    let lookback = jiff::SignedDuration::try_from(config.schedule.lookback)
        .unwrap_or(jiff::SignedDuration::ZERO);
    let default_since = now
        .checked_sub(lookback)
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    let (since, until) = match (parse(&args.since, default_since), parse(&args.until, now)) {
        (Ok(s), Ok(u)) if s <= u => (s, u),
        (Ok(_), Ok(_)) => return usage("--since is after --until"),
        (Err(e), _) => return usage(&format!("--since: {e}")),
        (_, Err(e)) => return usage(&format!("--until: {e}")),
    };
    // A usage error, whatever the state of the database.
    if let Some(p) = args
        .providers
        .iter()
        .find(|p| !config.providers.iter().any(|c| c.name() == p.as_str()))
    {
        return usage(&format!("--provider {p:?} is not configured"));
    }
    let app = match payrecon::app::App::start(config).await {
        Ok(a) => a,
        Err(e) => return fail(&e.to_string()),
    };
    let opts = payrecon::engine::RunOptions {
        since,
        until,
        providers: args.providers,
        dry_run: args.dry_run,
        no_resend: args.no_resend,
        trigger: payrecon::engine::Trigger::Cli,
        progress: std::io::stderr().is_terminal(),
    };
    let report = match app.engine.run(&opts).await {
        Ok(r) => r,
        Err(payrecon::engine::EngineError::UnknownProvider(p)) => {
            return usage(&format!("--provider {p:?} is not configured"))
        }
        Err(e) => return fail(&app.engine.redact(&e)),
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
            if let Err(e) = report.write_json(std::io::stdout().lock()) {
                return fail(&format!("could not write the report: {e}"));
            }
        }
        Format::Text => print!("{}", report.to_text()),
    }
    #[cfg(feature = "stats")]
    payrecon::stats::write_run_stats_if_asked();
    if report.any_failed() {
        ExitCode::from(1)
    } else if args.fail_on_gaps && report.totals.gaps > 0 {
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    }
}

async fn events(config: &payrecon::config::Config, args: EventsArgs) -> ExitCode {
    use payrecon::events::admin;
    use payrecon::store::EventFilter;
    if let Some(EventsAction::Replay(r)) = args.action {
        let since = match r
            .since
            .as_deref()
            .map(|s| payrecon::config::parse_time_arg(s, jiff::Timestamp::now()))
        {
            Some(Err(e)) => return usage(&format!("--since: {e}")),
            Some(Ok(t)) => Some(t),
            None => None,
        };
        let filter = EventFilter {
            id: r.id,
            order_ref: r.order,
            since,
            ..Default::default()
        };
        return match admin::replay(config, &filter).await {
            Ok(n) => {
                println!("{n} event(s) put back in the queue (ids unchanged)");
                ExitCode::SUCCESS
            }
            Err(e) => fail(&e.to_string()),
        };
    }
    if args.limit < 1 {
        return usage("--limit must be at least 1");
    }
    let filter = EventFilter {
        status: args.status.map(|s| {
            match s {
                EventStatus::Pending => "pending",
                EventStatus::Dead => "dead",
                EventStatus::Delivered => "delivered",
            }
            .to_string()
        }),
        order_ref: args.order,
        limit: args.limit,
        ..Default::default()
    };
    match admin::list(config, &filter).await {
        Ok(list) => {
            match args.format {
                Format::Json => println!("{}", list.to_json()),
                Format::Text => print!("{}", list.to_text()),
            }
            ExitCode::SUCCESS
        }
        Err(e) => fail(&e.to_string()),
    }
}

fn usage(msg: &str) -> ExitCode {
    eprintln!("payrecon: {msg}");
    ExitCode::from(2)
}

/// Resolves at the first SIGTERM or SIGINT. The handlers are installed when this is called,
/// not when the future is first polled: a signal that arrives while serve starts up (after the
/// listener answers, before the schedule loop waits) is a graceful shutdown, never the
/// default action that kills the process.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let term = signal(SignalKind::terminate());
        let int = signal(SignalKind::interrupt());
        async move {
            match (term, int) {
                (Ok(mut term), Ok(mut int)) => {
                    tokio::select! {
                        _ = term.recv() => {}
                        _ = int.recv() => {}
                    }
                }
                (Err(e), _) | (_, Err(e)) => {
                    tracing::error!(error = %e, "Cannot install the signal handlers; stopping.");
                }
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
