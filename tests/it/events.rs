//! Events to the merchant's application (docs/reference.md §6), end to end: a real anvil chain,
//! the fake Chaingateway, real SQLite and PostgreSQL, and real HTTP receivers on loopback.
//! Signatures are checked by the official `standardwebhooks` library (PyPI) in a Python
//! process.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use payrecon::store::{EventFilter, EventRow, Store};

use crate::reconcile::{on_backends, opts, payee, usdt, World};
use crate::support;

mod cli;
mod delivery;
mod ingest;
mod outbox;
pub(crate) mod receiver;
pub(crate) mod reference;
mod sandbox;

/// The events secret of these scenarios (also a secret that must never leak).
pub(crate) const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// An `[events]` table for `url` with a short schedule (`retries` delays of 100 ms).
pub(crate) fn events_table(url: &str, retries: usize, extra: &str) -> String {
    let schedule = vec!["\"100ms\""; retries].join(", ");
    format!(
        "[events]\nurl = \"{url}\"\nsecret = \"{SECRET}\"\ntimeout = \"2s\"\n\
         retry_schedule = [{schedule}]\nflush_timeout = \"10s\"\n{extra}\n"
    )
}

/// A world whose events go to `url`.
pub(crate) async fn world(db_url: &str, events: &str) -> Option<World> {
    World::start_with(db_url, "", events).await
}

/// Every event, oldest first.
pub(crate) async fn all_events(store: &Store) -> Vec<EventRow> {
    store
        .list_events(&EventFilter {
            limit: 100_000,
            ..Default::default()
        })
        .await
        .expect("list events")
}

/// Three orders paid on chain and listed by the provider (two final, one pending after the
/// run), none known to the ledger: three `missing` transitions.
pub(crate) async fn three_missing(w: &World) {
    w.orders(&[
        ("E-1", &payee(1), usdt(10)),
        ("E-2", &payee(2), usdt(20)),
        ("E-3", &payee(3), usdt(30)),
    ])
    .await;
    let t1 = w.pay(&payee(1), usdt(10)).await;
    let t2 = w.pay(&payee(2), usdt(20)).await;
    w.anvil.mine(70).await;
    let t3 = w.pay(&payee(3), usdt(30)).await;
    w.notify("201", &t1, &payee(1), "10");
    w.notify("202", &t2, &payee(2), "20");
    w.notify("203", &t3, &payee(3), "30");
}

/// Verifies each `(webhook-id, webhook-timestamp, webhook-signature, body)` with the official
/// Python library; returns how many verified (None: skipped, the library is missing).
pub(crate) fn verify_with_standardwebhooks(
    secret: &str,
    requests: &[receiver::Received],
) -> Option<usize> {
    let probe = std::process::Command::new("python3")
        .args(["-c", "import standardwebhooks"])
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        support::skip("python3 with standardwebhooks (pip install standardwebhooks) is missing");
        return None;
    }
    let items: Vec<serde_json::Value> = requests
        .iter()
        .map(|r| {
            serde_json::json!({"id": r.id, "timestamp": r.timestamp,
                "signature": r.signature, "body": r.body})
        })
        .collect();
    let dir = payrecon_testkit::tmp::dir().unwrap();
    let path = dir.path().join("requests.json");
    std::fs::write(&path, serde_json::to_string(&items).unwrap()).unwrap();
    let script = r#"
import json, sys
from standardwebhooks.webhooks import Webhook
wh = Webhook(sys.argv[1])
ok = 0
for r in json.load(open(sys.argv[2])):
    wh.verify(r["body"], {"webhook-id": r["id"], "webhook-timestamp": r["timestamp"],
                          "webhook-signature": r["signature"]})
    ok += 1
print(ok)
"#;
    let out = std::process::Command::new("python3")
        .args(["-c", script, secret, path.to_str().unwrap()])
        .output()
        .expect("run python3");
    assert!(
        out.status.success(),
        "standardwebhooks refused a signature: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&out.stdout).trim().parse().unwrap())
}

/// `(order_ref, to_state)` of each event body.
pub(crate) fn effects(events: &[receiver::Received]) -> BTreeMap<(String, String), usize> {
    let mut out = BTreeMap::new();
    for r in events {
        let v = r.json();
        let key = (
            v["data"]["order_ref"].as_str().unwrap().to_string(),
            v["data"]["to_state"].as_str().unwrap().to_string(),
        );
        *out.entry(key).or_insert(0) += 1;
    }
    out
}

pub(crate) fn distinct_ids(events: &[receiver::Received]) -> HashSet<String> {
    events.iter().map(|r| r.id.clone()).collect()
}

pub(crate) const WAIT: Duration = Duration::from_secs(20);

#[allow(dead_code)]
pub(crate) fn run_opts() -> payrecon::engine::RunOptions {
    opts()
}

#[allow(dead_code)]
pub(crate) async fn each_backend<F, Fut>(f: F)
where
    F: Fn(String) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    on_backends(f).await
}
