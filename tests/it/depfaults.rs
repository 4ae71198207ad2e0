//! Dependency faults against the real `payrecon serve` binary: PostgreSQL restarted and
//! stopped under it (a private cluster, `depfaults/cluster.rs`), and a pool of one
//! connection (`database.max_connections = 1`) under concurrent webhook deliveries, a run
//! and `/readyz` polls, on SQLite and PostgreSQL.

mod cluster;
mod pg_outage;
mod pool;

use std::time::Duration;

use crate::serve::{series, Served};

/// `payrecon_runs_total{provider="sandbox", outcome}` (0 when absent).
pub(crate) async fn runs(s: &Served, outcome: &str) -> f64 {
    let m = s.metrics().await;
    series(
        &m,
        "payrecon_runs_total",
        &[("provider", "sandbox"), ("outcome", outcome)],
    )
    .unwrap_or(0.0)
}

/// `GET base+path` with a 10 s timeout: the status, or None when no answer came.
pub(crate) async fn status_of(http: &reqwest::Client, url: &str) -> Option<u16> {
    let resp = http
        .get(url)
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .ok()?;
    Some(resp.status().as_u16())
}

/// Panics unless the serve process is still running.
pub(crate) fn assert_alive(s: &mut Served, when: &str) {
    let exited = s.proc.child.try_wait().expect("try_wait");
    assert!(
        exited.is_none(),
        "serve exited {when}: {exited:?}\n{}",
        s.proc.stderr()
    );
}
