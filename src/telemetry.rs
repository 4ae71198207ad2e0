//! Logging to stderr (never stdout): text, or JSON when `PAYRECON_LOG_FORMAT=json` (journald).
//! Level from `PAYRECON_LOG` (or `RUST_LOG`), default `info`.
//! A JSON line is one object: `timestamp`, `level`, `fields` (the message and the event's
//! fields), `target`, `span` (the innermost span: a run's `run_id`, a provider's `provider`)
//! and `spans` (every span it is in, outermost first).

use tracing_subscriber::EnvFilter;

pub fn init() {
    let filter = std::env::var("PAYRECON_LOG")
        .ok()
        .or_else(|| std::env::var("RUST_LOG").ok())
        .and_then(|f| EnvFilter::try_new(f).ok())
        .unwrap_or_else(|| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let json = std::env::var("PAYRECON_LOG_FORMAT").is_ok_and(|v| v == "json");
    let _ = if json {
        builder
            .json()
            .with_current_span(true)
            .with_span_list(true)
            .try_init()
    } else {
        builder.with_ansi(false).try_init()
    };
}
