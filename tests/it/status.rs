//! `payrecon status` through the real binary, on SQLite and PostgreSQL: after two runs (the
//! second with a provider failing), the last run per provider, the 24 h gap counts, the open
//! `reorged` / `amount_mismatch` findings, pending resends, the webhook inbox and leases
//! agree with what the runs reported and stored; status writes nothing; an unreachable or
//! missing database is exit 1 with one line on stderr and no secret.

use jiff::{SignedDuration, Timestamp};
use serde_json::Value;

use crate::cli::harness::{scalar, Out, World};

mod refusals;
mod runs;
mod view;

pub(crate) const KINDS: [&str; 9] = [
    "missing",
    "lagging",
    "failed_notification",
    "amount_mismatch",
    "unknown_payment",
    "reorged",
    "late_payment",
    "unexpected_outflow",
    "balance_mismatch",
];

pub(crate) const TABLES: [&str; 6] = [
    "orders",
    "payrecon_transitions",
    "payrecon_findings",
    "payrecon_runs",
    "payrecon_resends",
    "payrecon_webhook_events",
];

pub(crate) async fn counts(w: &World) -> Vec<i64> {
    let mut out = Vec::new();
    for t in TABLES {
        out.push(scalar(&w.db_url, &format!("SELECT COUNT(*) FROM {t}")).await);
    }
    out
}

pub(crate) fn ts(v: &Value) -> Timestamp {
    v.as_str()
        .unwrap_or_else(|| panic!("not a timestamp: {v}"))
        .parse()
        .unwrap()
}

/// Equal to the millisecond (SQLite keeps ms, PostgreSQL µs; status shows ms).
pub(crate) fn same_ms(a: &Value, b: &Value) {
    let d = ts(a).duration_since(ts(b)).abs();
    assert!(d < SignedDuration::from_millis(1), "{a} vs {b}");
}

pub(crate) fn provider<'a>(status: &'a Value, name: &str) -> &'a Value {
    status["providers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["provider"] == name)
        .unwrap_or_else(|| panic!("no provider {name} in {status}"))
}

pub(crate) fn report_gaps(r: &Value, name: &str, kind: &str) -> u64 {
    r["providers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["provider"] == name)
        .map(|p| p["gaps"][kind].as_u64().unwrap())
        .sum()
}

pub(crate) fn order_refs(items: &Value) -> Vec<String> {
    let mut v: Vec<String> = items
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["order_ref"].as_str().unwrap().to_string())
        .collect();
    v.sort();
    v
}

pub(crate) fn status_json(out: &Out) -> Value {
    out.assert_code(0);
    out.assert_no_panic();
    out.json()
}
