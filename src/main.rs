#![forbid(unsafe_code)]
//! The payrecon command line: parse, load config, init logging, dispatch.

use std::process::ExitCode;

use clap::Parser;

use payrecon::cli::{Cli, Command, Format};

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
            let redact = |e: &dyn std::fmt::Display| {
                payrecon::secret::redact(&e.to_string(), &config.secrets())
            };
            let url = config.database.url.expose();
            let store = match payrecon::store::Store::connect(url, 2).await {
                Ok(s) => s,
                Err(e) => return fail(&redact(&e)),
            };
            let before = match store.applied_migrations().await {
                Ok(n) => n,
                Err(e) => return fail(&redact(&e)),
            };
            if let Err(e) = store.migrate().await {
                return fail(&format!("migrating the database: {}", redact(&e)));
            }
            let after = store.applied_migrations().await.unwrap_or(before);
            // Whether it created, upgraded or found the schema current.
            match (before, after - before) {
                (0, n) => eprintln!("payrecon: schema created ({n} migrations applied)"),
                (_, 0) => eprintln!("payrecon: schema is up to date ({after} migrations)"),
                (_, n) => {
                    eprintln!("payrecon: schema upgraded ({n} of {after} migrations applied now)")
                }
            }
            ExitCode::SUCCESS
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
        Command::Run(args) => payrecon::run::command(config, args).await,
        Command::Status { format } => match payrecon::status::collect(&config).await {
            Ok(status) => {
                match format {
                    Format::Json => println!("{}", status.to_json()),
                    Format::Text => print!(
                        "{}",
                        status.to_text_with(&payrecon::assets::Assets::of(&config))
                    ),
                }
                ExitCode::SUCCESS
            }
            Err(e) => fail(&e.to_string()),
        },
        Command::Events(args) => payrecon::events::admin::command(&config, args).await,
        Command::Exceptions(args) => payrecon::exceptions::command(config, args).await,
        Command::Export(args) => payrecon::export::command(config, args).await,
        Command::Orders(args) => payrecon::orders::command(config, args).await,
        Command::Serve => {
            // Before anything else, so that no signal finds the default handlers.
            let shutdown = payrecon::serve::shutdown_signal();
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
