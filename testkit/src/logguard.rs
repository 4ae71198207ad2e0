//! The log guard: a run that logs an ERROR the test did not inject fails the test (the
//! scenario tests of `tests/it` and the simulator's seeds). The run goes inside an ERROR-level
//! span `log_guard` carrying a guard id (`span`), and every ERROR event inside it (the
//! store's and the chain's errors among them: a failed part logs one) is kept under that id
//! for the test to read (`take`) and hold against what it injected. One subscriber per test
//! process (nextest runs each test in its own); a process with another subscriber installed
//! first sees nothing here.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::{Context, SubscriberExt as _};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::{Layer, Registry};

const SPAN: &str = "log_guard";

static ERRORS: OnceLock<Mutex<HashMap<u64, Vec<String>>>> = OnceLock::new();
static NEXT: AtomicU64 = AtomicU64::new(1);

fn errors() -> &'static Mutex<HashMap<u64, Vec<String>>> {
    ERRORS.get_or_init(Default::default)
}

/// Installs the guard as this process's subscriber (once; later calls do nothing).
pub fn install() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        let subscriber = Registry::default().with(Guard.with_filter(LevelFilter::ERROR));
        let _ = tracing::subscriber::set_global_default(subscriber);
    });
}

/// A span whose ERROR events are kept for [`take`] under the returned id.
pub fn span() -> (u64, tracing::Span) {
    install();
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    (id, tracing::error_span!(SPAN, guard = id))
}

/// The ERROR events logged inside `id`'s span so far (taken).
pub fn take(id: u64) -> Vec<String> {
    let mut m = errors().lock().unwrap_or_else(|p| p.into_inner());
    m.remove(&id).unwrap_or_default()
}

struct Guard;

/// The guard id a `log_guard` span carries.
struct Id(u64);

struct GuardId(Option<u64>);
impl Visit for GuardId {
    fn record_u64(&mut self, f: &Field, v: u64) {
        if f.name() == "guard" {
            self.0 = Some(v);
        }
    }
    fn record_debug(&mut self, _: &Field, _: &dyn std::fmt::Debug) {}
}

/// An event as one line: its message and fields.
struct Line(String);
impl Visit for Line {
    fn record_debug(&mut self, f: &Field, v: &dyn std::fmt::Debug) {
        let _ = write!(self.0, " {}={v:?}", f.name());
    }
    fn record_str(&mut self, f: &Field, v: &str) {
        let _ = write!(self.0, " {}={v}", f.name());
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Guard {
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        id: &tracing::span::Id,
        ctx: Context<'_, S>,
    ) {
        if attrs.metadata().name() != SPAN {
            return;
        }
        let mut v = GuardId(None);
        attrs.record(&mut v);
        if let (Some(g), Some(span)) = (v.0, ctx.span(id)) {
            span.extensions_mut().insert(Id(g));
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let Some(scope) = ctx.event_scope(event) else {
            return;
        };
        let Some(g) = scope
            .into_iter()
            .find_map(|s| s.extensions().get::<Id>().map(|i| i.0))
        else {
            return;
        };
        let mut line = Line(format!("{}:", event.metadata().target()));
        event.record(&mut line);
        let mut m = errors().lock().unwrap_or_else(|p| p.into_inner());
        m.entry(g).or_default().push(line.0);
    }
}
