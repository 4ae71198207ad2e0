//! A generic `kind = "http"` provider beside Chaingateway on some seeds: the Qvard preset
//! against the fake Qvard (`sandbox::qvard`), listing completed payments by order id, with
//! its own faults; its resends are inferred (no failed list) and must stay one per payment.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use payrecon_testkit::qvard::{FakeQvard, QvardPayment};
use payrecon_testkit::sandbox::SANDBOX_TOKEN;
use payrecon_testkit::HttpFault;
use rand::rngs::StdRng;
use rand::Rng;

use crate::world::{decimal, World};

/// The fake Qvard's API key.
pub const KEY: &str = "qk_sim_8d41c0e2f7";

pub const NAMES: [&str; 3] = ["qvard_payments", "qvard_faults", "qvard_resends"];
pub static COUNTS: [AtomicU64; 3] = [const { AtomicU64::new(0) }; 3];

fn bump(i: usize, n: u64) {
    COUNTS[i].fetch_add(n, Ordering::Relaxed);
}

/// The provider table (appended after every other table of the configuration).
pub fn config(base_url: &str) -> String {
    format!(
        r#"
[providers.qvard]
kind = "http"
preset = "qvard"
base_url = "{base_url}"
api_key = "{KEY}"
chains = ["ethereum"]
timeout = "5s"
max_retries = 2
backoff = "20ms"
"#
    )
}

pub async fn start() -> FakeQvard {
    FakeQvard::start(KEY).await
}

/// Lists some mined payments of orders not listed yet (one payment per order: Qvard's `id`
/// is the order id), and queues a few faults.
pub fn plan(w: &mut World, xr: &mut StdRng) {
    let Some(qv) = &w.qv else {
        return;
    };
    let mut faults = 0;
    for (i, p) in w.pays.iter().enumerate() {
        if p.block == 0 || p.reverted || w.qv_listed.contains(&i) || !xr.gen_bool(0.5) {
            continue;
        }
        let Some(o) = w
            .orders
            .iter()
            .find(|o| o.pay_to == p.to && o.native == p.native)
        else {
            continue;
        };
        let taken = w.qv_listed.iter().any(|&j| w.pays[j].to == p.to);
        if taken {
            continue;
        }
        let (asset, dec, li) = if p.native {
            ("native", 18, None)
        } else {
            (SANDBOX_TOKEN, 6, Some(p.log_index))
        };
        qv.add_payment(&QvardPayment {
            id: o.order_ref.clone(),
            status: "completed".into(),
            chain: "ethereum".into(),
            tx_hash: Some(p.tx.clone()),
            log_index: li,
            asset: asset.into(),
            amount: decimal(p.amount, dec),
            completed_at: jiff::Timestamp::now() - jiff::SignedDuration::from_mins(30),
        });
        w.qv_listed.insert(i);
        bump(0, 1);
    }
    if xr.gen_bool(0.4) {
        for _ in 0..xr.gen_range(1..=3) {
            let f = match xr.gen_range(0..4) {
                0 => HttpFault::MalformedJson,
                1 => HttpFault::Status(500),
                2 => HttpFault::Status(503),
                _ => HttpFault::Status(429),
            };
            qv.push_fault(f, 1);
            faults += 1;
        }
    }
    bump(1, faults);
    w.qv_faults += faults;
}

/// Faults stop: the faults still queued in the fake (pushed, minus the requests that got
/// neither a page nor a resend answer) are used up by requests of our own.
pub async fn clear_faults(w: &World) {
    let Some(qv) = &w.qv else {
        return;
    };
    let consumed = qv.requests().len() as u64 - qv.list_requests() - qv.resends().len() as u64;
    let left = w.qv_faults.saturating_sub(consumed);
    let http = reqwest::Client::new();
    for _ in 0..left {
        let _ = http
            .get(format!("{}/v1/payments?status=completed", qv.base_url()))
            .bearer_auth(KEY)
            .send()
            .await;
    }
}

/// At most one resend per payment (one cooldown in a simulation).
pub fn check(w: &World) -> Result<(), String> {
    let Some(qv) = &w.qv else {
        return Ok(());
    };
    let mut n: BTreeMap<String, u32> = BTreeMap::new();
    for id in qv.resends() {
        *n.entry(id).or_default() += 1;
    }
    bump(2, n.values().map(|&c| u64::from(c)).sum());
    match n.iter().find(|(_, c)| **c > 1) {
        Some((id, c)) => Err(format!(
            "Qvard payment {id} resent {c} times in one cooldown"
        )),
        None => Ok(()),
    }
}
