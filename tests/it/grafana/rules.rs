//! The alerting rules: promtool accepts them and their unit tests pass; each alert is named,
//! labelled and annotated the mixin way, has a runbook section, a test case where it fires
//! and one where it stays quiet; and the tests notice when an alert's expression is broken.

use std::path::Path;
use std::process::{Command, Output};

use super::{alert_names, read, repo, tool, RULES, RULE_TESTS, RUNBOOK};
use crate::support::skip;

fn promtool(bin: &Path, dir: &Path, args: &[&str]) -> Output {
    let out = Command::new(bin)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("run {} {args:?}: {e}", bin.display()));
    eprintln!(
        "promtool {args:?}: {}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn alert_rules_pass_promtool_check_and_their_unit_tests() {
    let Some(bin) = tool("PROMTOOL_BIN", "promtool") else {
        skip("promtool is not installed (apt-get install prometheus)");
        return;
    };
    let check = promtool(&bin, repo(), &["check", "rules", RULES]);
    assert!(check.status.success(), "promtool check rules failed");
    let n = alert_names(&read(RULES)).len();
    assert!(
        text(&check).contains(&format!("SUCCESS: {n} rules found")),
        "promtool did not find the {n} alerts"
    );
    let test = promtool(&bin, repo(), &["test", "rules", RULE_TESTS]);
    assert!(test.status.success(), "promtool test rules failed");
}

/// The alerts the rules must hold at least.
const REQUIRED: [&str; 8] = [
    "PayreconNoRecentSuccess",
    "PayreconRunsFailing",
    "PayreconGapRatioHigh",
    "PayreconFailedNotificationsGrowing",
    "PayreconReorgedPaymentOpen",
    "PayreconResendsFailing",
    "PayreconProviderServerErrors",
    "PayreconAbsent",
];

/// One alert's block of the rules file: whole lines, from its `- alert:` line to the next.
fn alert_block<'a>(rules: &'a str, name: &str) -> &'a str {
    let line_start = |at: usize| rules[..at].rfind('\n').map_or(0, |i| i + 1);
    let at = rules
        .find(&format!("- alert: {name}\n"))
        .unwrap_or_else(|| panic!("no alert {name}"));
    let start = line_start(at);
    let end = rules[at + 2..]
        .find("- alert:")
        .map_or(rules.len(), |i| line_start(at + 2 + i));
    &rules[start..end]
}

#[test]
fn every_alert_is_labelled_annotated_and_has_a_runbook_section() {
    let rules = read(RULES);
    let runbook = read(RUNBOOK);
    let names = alert_names(&rules);
    for r in REQUIRED {
        assert!(names.iter().any(|n| n == r), "no alert {r} in {RULES}");
    }
    for name in &names {
        assert!(
            name.starts_with("Payrecon") && name.chars().all(|c| c.is_ascii_alphanumeric()),
            "{name}: CamelCase with the Payrecon prefix"
        );
        let block = alert_block(&rules, name);
        assert!(
            block.contains("severity: critical") || block.contains("severity: warning"),
            "{name}: severity critical or warning"
        );
        for key in ["summary:", "description:"] {
            assert!(block.contains(key), "{name}: no {key}");
        }
        let url = format!(
            "runbook_url: \"https://github.com/payrecon/payrecon/blob/main/{RUNBOOK}#{}\"",
            name.to_lowercase()
        );
        assert!(block.contains(&url), "{name}: expected {url}");
        assert!(
            runbook.lines().any(|l| l == format!("### {name}")),
            "{RUNBOOK} has no `### {name}` runbook entry"
        );
    }
}

/// `(alertname, fires)` of every `alert_rule_test` case: it fires when its `exp_alerts` lists
/// alerts, stays quiet when it is `[]`.
fn test_cases(tests: &str) -> Vec<(String, bool)> {
    let mut cases = Vec::new();
    let mut lines = tests.lines().map(str::trim).peekable();
    let mut current: Option<String> = None;
    while let Some(line) = lines.next() {
        if let Some(name) = line.strip_prefix("alertname:") {
            current = Some(name.trim().to_string());
        } else if let Some(exp) = line.strip_prefix("exp_alerts:") {
            let name = current.take().expect("exp_alerts after an alertname");
            let fires = match exp.trim() {
                "[]" => false,
                "" => lines.peek().is_some_and(|l| l.starts_with("- exp_labels:")),
                other => panic!("{name}: write exp_alerts as [] or a list, not {other}"),
            };
            cases.push((name, fires));
        }
    }
    cases
}

#[test]
fn every_alert_has_a_firing_and_a_quiet_test_case() {
    let names = alert_names(&read(RULES));
    let cases = test_cases(&read(RULE_TESTS));
    for name in &names {
        for (fires, what) in [(true, "fires"), (false, "stays quiet")] {
            assert!(
                cases.iter().any(|(n, f)| n == name && *f == fires),
                "{RULE_TESTS} has no case where {name} {what}"
            );
        }
    }
    for (n, _) in &cases {
        assert!(names.contains(n), "a test case for unknown alert {n}");
    }
}

/// The rules with `name`'s expression replaced by `expr` (and its `for:` dropped).
fn mutate(rules: &str, name: &str, expr: &str) -> String {
    let block = alert_block(rules, name);
    let mut out = Vec::new();
    let mut in_expr: Option<usize> = None;
    for line in block.lines() {
        let indent = line.len() - line.trim_start().len();
        if let Some(at) = in_expr {
            if indent > at || line.trim().is_empty() {
                continue;
            }
            in_expr = None;
        }
        if line.trim_start().starts_with("expr:") {
            in_expr = Some(indent);
            out.push(format!("{}expr: {expr}", " ".repeat(indent)));
        } else if !line.trim_start().starts_with("for:") {
            out.push(line.to_string());
        }
    }
    rules.replacen(block, &(out.join("\n") + "\n"), 1)
}

/// The unit tests with only the groups that test `name` (`alertname: <name>` in one of their
/// cases): a mutant of that alert changes no other group's outcome, and promtool evaluates
/// every rule over each group's series, 6 CPU-seconds for the whole file.
fn tests_of(tests: &str, name: &str) -> String {
    let start = "  - interval:";
    let head_end = tests.find(&format!("\n{start}")).expect("a test group") + 1;
    let mut out = tests[..head_end].to_string();
    let rest = &tests[head_end..];
    let mut groups: Vec<&str> = Vec::new();
    let mut at = 0;
    while let Some(next) = rest[at + 1..].find(&format!("\n{start}")) {
        groups.push(&rest[at..at + 1 + next + 1]);
        at += next + 2;
    }
    groups.push(&rest[at..]);
    let mine = format!("alertname: {name}\n");
    let kept: Vec<&str> = groups.into_iter().filter(|g| g.contains(&mine)).collect();
    assert!(!kept.is_empty(), "no test group tests {name}");
    out.extend(kept);
    out
}

/// Runs the unit tests of `name` against mutated rules in a temp dir; promtool's output.
fn test_mutant(bin: &Path, rules: &str, name: &str) -> (bool, String) {
    let dir = payrecon_testkit::tmp::dir().unwrap();
    std::fs::write(dir.path().join("payrecon.rules.yml"), rules).unwrap();
    let tests = tests_of(&read(RULE_TESTS), name);
    std::fs::write(dir.path().join("payrecon.rules.test.yml"), tests).unwrap();
    let out = Command::new(bin)
        .args(["test", "rules", "payrecon.rules.test.yml"])
        .current_dir(dir.path())
        .output()
        .expect("run promtool");
    (out.status.success(), text(&out))
}

/// Whether promtool's output has a failed case of `name` that expected it quiet (or firing).
/// promtool prints each failed case as `alertname: X, time: T,` then `exp:[…]`.
fn case_failed(out: &str, name: &str, quiet: bool) -> bool {
    let lines: Vec<&str> = out.lines().map(str::trim).collect();
    lines.windows(2).any(|w| {
        w[0].starts_with(&format!("alertname: {name},")) && w[1].starts_with("exp:[]") == quiet
    })
}

#[test]
fn unit_tests_fail_when_an_alert_never_fires_or_always_fires() {
    let Some(bin) = tool("PROMTOOL_BIN", "promtool") else {
        skip("promtool is not installed (apt-get install prometheus)");
        return;
    };
    let rules = read(RULES);
    let names = alert_names(&rules);
    std::thread::scope(|s| {
        for name in &names {
            let (bin, rules) = (&bin, &rules);
            s.spawn(move || {
                let (ok, out) = test_mutant(bin, &mutate(rules, name, "vector(1) == 0"), name);
                assert!(!ok, "{name} never firing went unnoticed:\n{out}");
                assert!(
                    case_failed(&out, name, false),
                    "no firing case of {name} failed:\n{out}"
                );
                let (ok, out) = test_mutant(bin, &mutate(rules, name, "vector(1)"), name);
                assert!(!ok, "{name} always firing went unnoticed:\n{out}");
                assert!(
                    case_failed(&out, name, true),
                    "no quiet case of {name} failed:\n{out}"
                );
            });
        }
    });
}
