//! One `serve` per SQLite file: a second `serve` on the same file is refused (exit 1, one
//! stderr line naming the database), a `run` beside the first is not; once the first is
//! SIGKILLed, a new `serve` starts.

use std::time::{Duration, Instant};

use crate::cli::harness::{command, output, payrecon, World};
use crate::serve::{Served, NEVER};
use crate::support::free_port;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lease_sqlite_second_serve_is_refused_a_run_is_not() {
    let w = World::sqlite().await;
    w.missing_payments(1, 2).await;
    let config = w.config(NEVER);
    let db = w.db_url.trim_start_matches("sqlite://").to_string();

    let mut first = Served::start(&config).await;

    let port = free_port();
    let mut cmd = command(&config, &["serve"]);
    cmd.env("PAYRECON_HTTP__LISTEN", format!("127.0.0.1:{port}"));
    let t0 = Instant::now();
    let second = output(cmd).await;
    let took = t0.elapsed();
    second.assert_code(1);
    second.assert_no_panic();
    assert!(took < Duration::from_secs(10), "refused after {took:?}");
    assert!(second.stdout.is_empty(), "stdout: {}", second.stdout);
    // Besides log lines (timestamped; the start-up preflight logs at info), one line.
    let lines: Vec<&str> = second.stderr.lines().filter(|l| !l.is_empty()).collect();
    let plain: Vec<&&str> = lines.iter().filter(|l| !is_log(l)).collect();
    assert_eq!(
        plain.len(),
        1,
        "one error line on stderr:\n{}",
        second.stderr
    );
    assert!(
        !lines
            .iter()
            .any(|l| l.contains(" ERROR ") || l.contains(" WARN ")),
        "{}",
        second.stderr
    );
    let naming: Vec<&&str> = lines.iter().filter(|l| l.contains(&db)).collect();
    assert!(plain[0].contains(&db), "{}", second.stderr);
    assert_eq!(naming.len(), 1, "the line names {db}:\n{}", second.stderr);
    assert!(
        naming[0].contains("another payrecon serve"),
        "{}",
        second.stderr
    );
    assert!(
        !lines.iter().any(|l| l.contains("payrecon is serving")),
        "the second never served:\n{}",
        second.stderr
    );
    eprintln!("second serve refused in {took:?}: {}", naming[0]);
    // The first is unaffected.
    assert_eq!(first.get("/healthz").await.0, 200);

    // A manual run on the same file while serve runs: allowed, and it does the work.
    let run = payrecon(&config, &["run", "--format", "json"]).await;
    run.assert_code(0);
    assert_eq!(run.json()["totals"]["applied"], 2, "{}", run.stderr);
    assert_eq!(w.count("payrecon_transitions").await, 2);

    // The holder dies without cleaning up: the OS lock goes with it.
    first.proc.signal("KILL").await;
    let (code, _) = first.proc.wait(Duration::from_secs(10)).await;
    assert_eq!(code, None, "killed by a signal");
    let mut again = Served::start(&config).await;
    assert_eq!(again.get("/readyz").await.0, 200, "{}", again.proc.stderr());
    let (code, _) = again.stop("TERM", Duration::from_secs(10)).await;
    assert_eq!(code, Some(0), "{}", again.proc.stderr());
}

/// A log line: an RFC 3339 timestamp first (`2026-11-30T03:28:13.598006Z  INFO ...`).
fn is_log(line: &str) -> bool {
    line.split_whitespace()
        .next()
        .is_some_and(|w| w.parse::<jiff::Timestamp>().is_ok())
}
