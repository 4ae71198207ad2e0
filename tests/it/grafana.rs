//! `grafana/`: the alerting rules pass `promtool check rules` and their unit tests, and every
//! alert has a firing and a quiet test case; the dashboard is a provisionable model whose
//! every query parses and returns data in a real Prometheus scraping an in-process `serve`
//! that has reconciled a scenario with gaps (which also fires the matching alerts).

mod dashboard;
mod prometheus;
mod rules;

use std::path::{Path, PathBuf};

pub(crate) const RULES: &str = "grafana/alerts/payrecon.rules.yml";
pub(crate) const RULE_TESTS: &str = "grafana/alerts/payrecon.rules.test.yml";
/// The runbook, whose `## Runbook` has a `### <AlertName>` entry per alert.
pub(crate) const RUNBOOK: &str = "docs/runbook.md";
pub(crate) const DASHBOARD: &str = "grafana/dashboards/payrecon.json";

/// The repository root (where `promtool` is run from, as CI does).
pub(crate) fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

pub(crate) fn read(path: &str) -> String {
    std::fs::read_to_string(repo().join(path)).unwrap_or_else(|e| panic!("read {path}: {e}"))
}

/// `$env_var` when set, else `name` on PATH, else None (the caller skips).
pub(crate) fn tool(env_var: &str, name: &str) -> Option<PathBuf> {
    if let Ok(bin) = std::env::var(env_var) {
        return Some(PathBuf::from(bin));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// The names of the alerts in the rules file (`- alert: Name` lines), in file order.
pub(crate) fn alert_names(rules: &str) -> Vec<String> {
    rules
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- alert:"))
        .map(|n| n.trim().to_string())
        .collect()
}
