//! Running under systemd: the units in `deploy/` pass `systemd-analyze verify` and score at
//! most 2.0 on `systemd-analyze security`, and `serve` speaks sd_notify to a real
//! `NOTIFY_SOCKET`: `READY=1` once it answers, `WATCHDOG=1` from the schedule loop, `STATUS=`
//! after runs, `STOPPING=1` at SIGTERM, then exit 0.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use payrecon_testkit::sandbox::SANDBOX_API_KEY;

use crate::cli::harness::{command, Running, World, BIN};
use crate::serve::EVERY_SECOND;
use crate::support::{free_port, skip};

const UNITS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/deploy");
const INSTALLED_BIN: &str = "/usr/bin/payrecon";

/// `systemd-analyze`, or None (skipped; a failure under PAYRECON_TEST_STRICT=1).
fn systemd_analyze() -> Option<PathBuf> {
    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .chain([PathBuf::from("/usr/bin"), PathBuf::from("/bin")])
        .map(|d| d.join("systemd-analyze"))
        .find(|p| p.is_file());
    if found.is_none() {
        skip("systemd-analyze is not installed (systemd unit tests)");
    }
    found
}

fn read_unit(name: &str) -> String {
    std::fs::read_to_string(Path::new(UNITS).join(name))
        .unwrap_or_else(|e| panic!("deploy/{name}: {e}"))
}

/// Runs `systemd-analyze args…`; returns the exit code and stdout + stderr.
fn analyze(bin: &Path, args: &[&str]) -> (Option<i32>, String) {
    let out = std::process::Command::new(bin)
        .args(args)
        .output()
        .expect("run systemd-analyze");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

#[test]
fn systemd_units_pass_systemd_analyze_verify() {
    let Some(sa) = systemd_analyze() else { return };
    // verify wants the ExecStart binary to exist: the units are checked as installed, with
    // ExecStart pointing at the binary built for this test instead of /usr/bin.
    let dir = payrecon_testkit::tmp::dir().unwrap();
    for name in ["payrecon.service", "payrecon-backfill@.service"] {
        let text = read_unit(name);
        assert!(
            text.contains(&format!("ExecStart={INSTALLED_BIN} ")),
            "{name}"
        );
        std::fs::write(dir.path().join(name), text.replace(INSTALLED_BIN, BIN)).unwrap();
    }
    // The template through instances: a duration and a date (whose dashes %I would mangle).
    for unit in [
        "payrecon.service",
        "payrecon-backfill@7d.service",
        "payrecon-backfill@2026-11-01.service",
    ] {
        let path = dir.path().join(unit);
        let (code, text) = analyze(&sa, &["verify", path.to_str().unwrap()]);
        assert_eq!(code, Some(0), "systemd-analyze verify {unit}:\n{text}");
        // Unknown keys and unparseable values are only warnings: they fail this test too.
        let complaints: Vec<&str> = text.lines().filter(|l| l.contains("payrecon")).collect();
        assert!(
            complaints.is_empty(),
            "systemd-analyze verify {unit}:\n{text}"
        );
    }
    let backfill = read_unit("payrecon-backfill@.service");
    assert!(backfill.contains("run --since %i\n"), "{backfill}");
    assert!(backfill.contains("Type=oneshot"), "{backfill}");
}

/// The number on the "Overall exposure level for <unit>: N.N …" line.
fn exposure(text: &str) -> f64 {
    let line = text
        .lines()
        .find(|l| l.contains("Overall exposure level"))
        .unwrap_or_else(|| panic!("no overall exposure line:\n{text}"));
    let (_, rest) = line.split_once(": ").expect("a score after the colon");
    rest.split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no number in {line:?}"))
}

#[test]
fn systemd_analyze_security_scores_the_units_at_most_2_0() {
    let Some(sa) = systemd_analyze() else { return };
    for name in ["payrecon.service", "payrecon-backfill@.service"] {
        let path = Path::new(UNITS).join(name);
        let (code, text) = analyze(
            &sa,
            &[
                "security",
                "--offline=true",
                "--no-pager",
                path.to_str().unwrap(),
            ],
        );
        assert_eq!(code, Some(0), "systemd-analyze security {name}:\n{text}");
        let score = exposure(&text);
        eprintln!("{name}: overall exposure {score}");
        assert!(score <= 2.0, "{name} exposure {score} > 2.0:\n{text}");
    }
    assert_eq!(
        exposure("→ Overall exposure level for x.service: 9.6 UNSAFE 😨"),
        9.6
    );
}

/// Every datagram received on the notify socket until `done` says so (or the deadline).
async fn receive_until(
    sock: &tokio::net::UnixDatagram,
    got: &mut Vec<String>,
    within: Duration,
    what: &str,
    proc: &Running,
    done: impl Fn(&[String]) -> bool,
) {
    let deadline = Instant::now() + within;
    let mut buf = vec![0u8; 4096];
    while !done(got) {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, sock.recv(&mut buf)).await {
            Ok(Ok(n)) => got.push(String::from_utf8_lossy(&buf[..n]).into_owned()),
            Ok(Err(e)) => panic!("recv on the notify socket: {e}"),
            Err(_) => panic!(
                "timed out waiting for {what}; received {got:?}\nstderr:\n{}",
                proc.stderr()
            ),
        }
    }
}

fn count(got: &[String], line: &str) -> usize {
    got.iter().filter(|m| m.lines().any(|l| l == line)).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sdnotify_serve_reports_ready_watchdog_status_and_stopping() {
    let w = World::sqlite().await;
    let config = w.config(EVERY_SECOND);
    let sock_path = w.dir.path().join("notify.sock");
    let sock = tokio::net::UnixDatagram::bind(&sock_path).unwrap();
    let port = free_port();
    let mut cmd = command(&config, &["serve"]);
    cmd.env("PAYRECON_HTTP__LISTEN", format!("127.0.0.1:{port}"))
        .env("NOTIFY_SOCKET", &sock_path)
        .env("WATCHDOG_USEC", "400000");
    let t0 = Instant::now();
    let mut proc = Running::spawn(cmd);

    // Arrange/Act: the first message is READY=1, and then /readyz answers at once.
    let mut got = Vec::new();
    receive_until(
        &sock,
        &mut got,
        Duration::from_secs(30),
        "READY=1",
        &proc,
        |g| !g.is_empty(),
    )
    .await;
    let ready_after = t0.elapsed();
    assert_eq!(got[0].lines().next(), Some("READY=1"), "{got:?}");
    let resp = reqwest::get(format!("http://127.0.0.1:{port}/readyz"))
        .await
        .expect("/readyz answers once READY=1 is sent");
    assert_eq!(resp.status().as_u16(), 200);

    // The schedule loop feeds the watchdog (every 200 ms) and reports each run.
    let t1 = Instant::now();
    receive_until(
        &sock,
        &mut got,
        Duration::from_secs(20),
        "3 WATCHDOG=1",
        &proc,
        |g| count(g, "WATCHDOG=1") >= 3,
    )
    .await;
    let three_feeds = t1.elapsed();
    receive_until(
        &sock,
        &mut got,
        Duration::from_secs(20),
        "a run's STATUS",
        &proc,
        |g| {
            g.iter()
                .any(|m| m.starts_with("STATUS=Last run ") && m.contains(": ok, "))
        },
    )
    .await;

    // SIGTERM: STOPPING=1, then exit 0.
    proc.signal("TERM").await;
    receive_until(
        &sock,
        &mut got,
        Duration::from_secs(20),
        "STOPPING=1",
        &proc,
        |g| count(g, "STOPPING=1") == 1,
    )
    .await;
    let (code, _) = proc.wait(Duration::from_secs(20)).await;
    assert_eq!(code, Some(0), "{}", proc.stderr());
    assert_eq!(count(&got, "READY=1"), 1, "{got:?}");
    for m in &got {
        assert!(!m.contains(SANDBOX_API_KEY), "a secret in {m:?}");
    }
    eprintln!(
        "READY=1 after {ready_after:?}, 3 watchdog feeds in {three_feeds:?}, {} messages",
        got.len()
    );
}
