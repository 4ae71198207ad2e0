//! systemd's notification protocol (`sd_notify`), in safe std: one datagram per message to
//! `$NOTIFY_SOCKET` (a path, or an abstract socket written `@name`). `READY=1`, `STOPPING=1`,
//! `STATUS=…` and `WATCHDOG=1`. Without `NOTIFY_SOCKET` (not under systemd, or not
//! `Type=notify`) everything here is a no-op.
//!
//! The watchdog is fed by the schedule loop itself (`schedule::run_loop_fed`), never by a
//! timer task of its own, so that a loop that no longer turns stops feeding it. See
//! [`Watchdog`] for what "no longer turns" means.

use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::sync::Arc;
use std::time::Duration;

/// Where notifications go: nowhere (the default), or systemd's socket.
#[derive(Default)]
pub struct Notifier {
    target: Option<(UnixDatagram, SocketAddr)>,
}

impl Notifier {
    /// From `$NOTIFY_SOCKET`; a value that cannot be used is logged once and disables it.
    pub fn from_env() -> Notifier {
        match std::env::var_os("NOTIFY_SOCKET") {
            Some(v) if !v.is_empty() => match Notifier::connect(&v.to_string_lossy()) {
                Ok(n) => n,
                Err(e) => {
                    tracing::warn!(error = %e, "NOTIFY_SOCKET cannot be used; systemd will not be notified.");
                    Notifier::default()
                }
            },
            _ => Notifier::default(),
        }
    }

    /// A notifier that sends to `socket`: a filesystem path, or `@name` for an abstract one.
    pub fn connect(socket: &str) -> std::io::Result<Notifier> {
        let addr = match socket.strip_prefix('@') {
            Some(name) => {
                use std::os::linux::net::SocketAddrExt;
                SocketAddr::from_abstract_name(name.as_bytes())?
            }
            None => SocketAddr::from_pathname(socket)?,
        };
        let sock = UnixDatagram::unbound()?;
        // A full receive queue must not stall the runtime: such a message is dropped (logged).
        sock.set_nonblocking(true)?;
        Ok(Notifier {
            target: Some((sock, addr)),
        })
    }

    pub fn is_enabled(&self) -> bool {
        self.target.is_some()
    }

    /// Sends one message (`KEY=value` lines). Failures are logged, never fatal.
    pub fn notify(&self, message: &str) {
        if let Some((sock, addr)) = &self.target {
            if let Err(e) = sock.send_to_addr(message.as_bytes(), addr) {
                tracing::debug!(error = %e, "Notifying systemd failed.");
            }
        }
    }

    /// The database is migrated and the listener bound: `systemctl start` returns.
    pub fn ready(&self, status: &str) {
        self.notify(&format!("READY=1\nSTATUS={}", one_line(status)));
    }

    pub fn stopping(&self, status: &str) {
        self.notify(&format!("STOPPING=1\nSTATUS={}", one_line(status)));
    }

    /// Shown by `systemctl status`.
    pub fn status(&self, status: &str) {
        self.notify(&format!("STATUS={}", one_line(status)));
    }

    pub fn watchdog(&self) {
        self.notify("WATCHDOG=1");
    }
}

/// A STATUS value is one line.
fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

/// How often to feed systemd's watchdog: half of `WATCHDOG_USEC`, when it is set and
/// `WATCHDOG_PID` is unset or names this process. None: no watchdog.
pub fn watchdog_interval_from_env() -> Option<Duration> {
    watchdog_interval(
        std::env::var("WATCHDOG_USEC").ok().as_deref(),
        std::env::var("WATCHDOG_PID").ok().as_deref(),
        std::process::id(),
    )
}

fn watchdog_interval(usec: Option<&str>, pid: Option<&str>, own_pid: u32) -> Option<Duration> {
    if let Some(pid) = pid {
        if pid.trim().parse::<u32>().ok() != Some(own_pid) {
            return None;
        }
    }
    let usec: u64 = usec?.trim().parse().ok().filter(|u| *u > 0)?;
    Some(Duration::from_micros(usec / 2).max(Duration::from_millis(1)))
}

/// What the schedule loop feeds, and how often.
///
/// The loop feeds it every `interval` while it waits for the next tick, and while it awaits
/// a run: a healthy long run keeps the service alive. It stops feeding when the loop is
/// stuck:
/// - the loop's task is no longer polled (a blocked worker thread, a runtime that no longer
///   turns): nothing else feeds the watchdog, so it fires;
/// - the current run has lasted longer than `stuck_after` (a run whose future never
///   completes: an await that nothing will wake): the loop goes on turning but stops
///   feeding, logs it once, and systemd restarts payrecon (`Restart=on-failure`); a run
///   killed at any instant is completed by the next one (invariant 5, ARCHITECTURE.md).
pub struct Watchdog {
    pub interval: Duration,
    pub stuck_after: Duration,
    feed: Box<dyn Fn() + Send + Sync>,
}

impl Watchdog {
    pub fn new(
        interval: Duration,
        stuck_after: Duration,
        feed: impl Fn() + Send + Sync + 'static,
    ) -> Watchdog {
        Watchdog {
            interval,
            stuck_after,
            feed: Box::new(feed),
        }
    }

    /// systemd's watchdog (`WatchdogSec=`), when the environment asks for one.
    pub fn systemd(notifier: Arc<Notifier>, stuck_after: Duration) -> Option<Watchdog> {
        if !notifier.is_enabled() {
            return None;
        }
        let interval = watchdog_interval_from_env()?;
        Some(Watchdog::new(interval, stuck_after, move || {
            notifier.watchdog()
        }))
    }

    pub fn feed(&self) {
        (self.feed)()
    }
}

#[cfg(test)]
mod tests;
