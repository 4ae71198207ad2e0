//! Logs for journald: `PAYRECON_LOG_FORMAT=json` writes one JSON object per stderr line,
//! carrying the current span's fields (a run's `run_id`, a provider's `provider`), and
//! `PAYRECON_LOG` (or `RUST_LOG`) filters them. Driven through `payrecon demo` (a whole
//! sandbox run), which on its own logs at `warn`, after its report.

use serde_json::Value;
use tokio::process::Command;

use crate::cli::harness::{output, Out, BIN};

/// `payrecon demo` with nothing from the test's environment but `env`.
async fn demo(env: &[(&str, &str)]) -> Out {
    let dir = payrecon_testkit::tmp::dir().unwrap();
    let mut cmd = Command::new(BIN);
    cmd.env_clear()
        .envs(env.iter().copied())
        .arg("demo")
        .arg("--dir")
        .arg(dir.path())
        .kill_on_drop(true);
    let out = output(cmd).await;
    out.assert_code(0);
    out
}

/// Every stderr line as a JSON object (the test fails on the first that is not one).
fn json_lines(out: &Out) -> Vec<Value> {
    out.stderr
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("a stderr line is not JSON ({e}): {l:?}"));
            assert!(v.is_object(), "not an object: {l}");
            v
        })
        .collect()
}

/// The value of `field` in the line's current span, or in any span it is in.
fn span_field<'a>(line: &'a Value, field: &str) -> Option<&'a str> {
    let spans = line["spans"].as_array().into_iter().flatten();
    std::iter::once(&line["span"])
        .chain(spans)
        .find_map(|s| s.get(field).and_then(Value::as_str))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_logs_are_one_object_per_line_with_run_id_and_provider_spans() {
    let out = demo(&[("PAYRECON_LOG_FORMAT", "json"), ("PAYRECON_LOG", "info")]).await;
    let lines = json_lines(&out);
    assert!(lines.len() > 5, "too few log lines:\n{}", out.stderr);
    for l in &lines {
        assert!(
            l["level"].is_string() && l["fields"]["message"].is_string(),
            "{l}"
        );
    }
    let run_line = lines
        .iter()
        .find(|l| l["span"]["name"] == "run" && l["span"]["run_id"].is_string())
        .unwrap_or_else(|| panic!("no line in a run span:\n{}", out.stderr));
    let run_id = run_line["span"]["run_id"].as_str().unwrap();
    // A provider's lines: in the provider span (the innermost), inside the run's span.
    let provider_line = lines
        .iter()
        .find(|l| l["span"]["name"] == "provider" && l["span"]["provider"] == "sandbox")
        .unwrap_or_else(|| panic!("no line in a provider span:\n{}", out.stderr));
    assert_eq!(span_field(provider_line, "run_id"), Some(run_id));
    assert!(
        lines
            .iter()
            .any(|l| span_field(l, "provider") == Some("chain")),
        "no line in the chain sweep's span:\n{}",
        out.stderr
    );
    // Logs never go to stdout: the demo's stdout is its report, not JSON lines.
    assert!(!out.stdout.contains("\"level\""), "{}", out.stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_rust_log_warn_drops_info_lines() {
    let info =
        json_lines(&demo(&[("PAYRECON_LOG_FORMAT", "json"), ("PAYRECON_LOG", "info")]).await);
    let levels = |lines: &[Value]| -> Vec<String> {
        lines
            .iter()
            .map(|l| l["level"].as_str().unwrap_or("").to_string())
            .collect()
    };
    assert!(levels(&info).iter().any(|l| l == "INFO"), "{info:?}");
    let out = demo(&[("PAYRECON_LOG_FORMAT", "json"), ("RUST_LOG", "warn")]).await;
    let warn = json_lines(&out);
    let lv = levels(&warn);
    // The demo has gaps, which are logged at WARN: filtered, not silenced.
    assert!(lv.iter().any(|l| l == "WARN"), "{}", out.stderr);
    assert!(
        lv.iter().all(|l| l == "WARN" || l == "ERROR"),
        "{}",
        out.stderr
    );
}

/// The demo on its own: its report on stdout, its log lines at `warn` on stderr, written
/// after the report (held while it runs), and no Rust debug formatting in either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_prints_its_report_first_and_logs_at_warn_after_it() {
    let out = demo(&[]).await;
    assert!(out.stdout.starts_with("payrecon demo: "), "{}", out.stdout);
    assert!(out.stdout.contains("totals: "), "{}", out.stdout);
    assert!(
        out.stderr.starts_with("\nLog (warn and above"),
        "stderr:\n{}",
        out.stderr
    );
    let log_lines: Vec<&str> = out.stderr.lines().skip(2).collect();
    assert!(!log_lines.is_empty(), "{}", out.stderr);
    assert!(
        log_lines
            .iter()
            .all(|l| l.contains(" WARN ") || l.contains(" ERROR ")),
        "{}",
        out.stderr
    );
    assert!(
        out.stdout
            .contains("resend 1 failed notification(s): ethereum notification 103"),
        "{}",
        out.stdout
    );
    for text in [&out.stdout, &out.stderr] {
        for debug in ["[(", "Some(", "None", "\\\"", "{ "] {
            assert!(
                !text.contains(debug),
                "Rust debug formatting ({debug}) in:\n{text}"
            );
        }
    }
}

/// JSON logs with no level asked: the held lines are JSON objects on stderr too (no heading).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demos_held_log_in_json_is_one_object_per_stderr_line() {
    let out = demo(&[("PAYRECON_LOG_FORMAT", "json")]).await;
    let lines = json_lines(&out);
    assert!(!lines.is_empty(), "{}", out.stderr);
    assert!(
        lines
            .iter()
            .all(|l| l["level"] == "WARN" || l["level"] == "ERROR"),
        "{}",
        out.stderr
    );
    assert!(!out.stdout.contains("\"level\""), "{}", out.stdout);
}
