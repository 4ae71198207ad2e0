//! Logging to stderr (never stdout): text, or JSON when `PAYRECON_LOG_FORMAT=json` (journald).
//! Level from `PAYRECON_LOG` (or `RUST_LOG`), default `info`; `payrecon demo` defaults to
//! `warn` and, unless a level was asked for, holds its log lines until after the report (then
//! writes them to stderr, as every log line).
//! A JSON line is one object: `timestamp`, `level`, `fields` (the message and the event's
//! fields), `target`, `span` (the innermost span: a run's `run_id`, a provider's `provider`)
//! and `spans` (every span it is in, outermost first).

use std::sync::{Arc, Mutex};

use tracing_subscriber::fmt::writer::BoxMakeWriter;
use tracing_subscriber::EnvFilter;

/// The level asked for in the environment, if any.
fn asked() -> Option<EnvFilter> {
    std::env::var("PAYRECON_LOG")
        .ok()
        .or_else(|| std::env::var("RUST_LOG").ok())
        .and_then(|f| EnvFilter::try_new(f).ok())
}

pub fn init() {
    install(asked().unwrap_or_else(|| EnvFilter::new("info")), None);
}

/// The demo's logging: at `warn` unless `PAYRECON_LOG` (or `RUST_LOG`) asks for a level; when
/// not asked, the lines are held (returned) so that the report is printed first.
pub fn init_demo() -> Option<HeldLog> {
    match asked() {
        Some(filter) => {
            install(filter, None);
            None
        }
        None => {
            let held = HeldLog::default();
            install(EnvFilter::new("warn"), Some(held.clone()));
            Some(held)
        }
    }
}

/// `PAYRECON_LOG_FORMAT=json`: one JSON object per line.
pub fn json() -> bool {
    std::env::var("PAYRECON_LOG_FORMAT").is_ok_and(|v| v == "json")
}

fn install(filter: EnvFilter, held: Option<HeldLog>) {
    let writer = match held {
        Some(h) => BoxMakeWriter::new(move || h.clone()),
        None => BoxMakeWriter::new(std::io::stderr),
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer);
    let _ = if json() {
        builder
            .json()
            .with_current_span(true)
            .with_span_list(true)
            .try_init()
    } else {
        builder.with_ansi(false).try_init()
    };
}

/// Log lines kept in memory until taken.
#[derive(Clone, Default)]
pub struct HeldLog(Arc<Mutex<Vec<u8>>>);

impl HeldLog {
    /// The lines held so far (and forgets them).
    pub fn take(&self) -> String {
        let mut buf = self.0.lock().unwrap_or_else(|p| p.into_inner());
        String::from_utf8_lossy(&std::mem::take(&mut *buf)).into_owned()
    }
}

impl std::io::Write for HeldLog {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        let mut buf = self.0.lock().unwrap_or_else(|p| p.into_inner());
        buf.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
