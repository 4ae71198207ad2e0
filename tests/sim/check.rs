//! The checkers of the invariants of ARCHITECTURE.md, run against the ledger and the ground
//! truth the generator wrote.

use std::collections::{HashMap, HashSet};

use payrecon::domain::State;
use payrecon::report::Report;
use payrecon_testkit::sandbox::SANDBOX_API_KEY;

use crate::world::World;
use payrecon_testkit::inspect::Inspect;

mod effects;
mod final_state;

pub use effects::{effects, effects_of};
pub use final_state::final_state;

fn db<T, E: std::fmt::Display>(r: Result<T, E>) -> Result<T, String> {
    r.map_err(|e| format!("reading the ledger: {e}"))
}

/// Every secret a simulated configuration holds.
pub const SECRETS: [&str; 4] = [
    SANDBOX_API_KEY,
    crate::webhooks::SECRET,
    crate::qvard::KEY,
    crate::merchant::SECRET,
];

fn has_secret(text: &str) -> bool {
    SECRETS.iter().any(|s| text.contains(s))
}

/// (8) no secret in the report; (9) a failed provider is reported, not thrown.
pub async fn report_clean(_w: &World, r: &Report) -> Result<(), String> {
    let json = r.to_json();
    if has_secret(&json) {
        return Err(format!("a secret is in a report:\n{json}"));
    }
    Ok(())
}

/// (1) on the rows themselves, between steps: no order's state is behind what it was after
/// the previous step (also catches a backwards write that left no audit row).
pub async fn monotone(w: &mut World) -> Result<(), String> {
    for o in &w.orders {
        let snap = db(w.store().order_by_ref(&o.order_ref).await)?
            .ok_or_else(|| format!("order {} vanished", o.order_ref))?;
        let prev = w.last.insert(o.order_ref.clone(), snap.state);
        if prev.is_some_and(|p| p > snap.state) {
            return Err(format!(
                "{} moved backwards: {prev:?} -> {:?}",
                o.order_ref, snap.state
            ));
        }
    }
    Ok(())
}

/// Everything a dry run must leave alone: ledger rows, audit, findings, runs, resends.
pub async fn snapshot(w: &World) -> String {
    let s = w.store();
    let mut orders = Vec::new();
    for o in &w.orders {
        orders.push(format!("{:?}", s.order_by_ref(&o.order_ref).await));
    }
    format!(
        "orders={orders:?} transitions={:?} findings={} runs={:?} resends={:?} cg_retries={}",
        s.transitions().await,
        s.findings().await.map(|f| f.len()).unwrap_or(usize::MAX),
        s.count("payrecon_runs").await,
        s.count("payrecon_resends").await,
        w.cg.retries().len()
    )
}

/// The state a transfer in block `block` has at head `head` (12 confirmations, finalized =
/// head - 64 in the sandbox).
fn implied(block: u64, head: u64) -> State {
    if head >= 64 && block <= head - 64 {
        State::Final
    } else if head + 1 - block >= 12 {
        State::Confirmed
    } else {
        State::Pending
    }
}

/// (1) never backwards, (2) once per (order, to_state), read off the audit table in order.
/// After a run of a chain slice (Tron, Bitcoin): nothing failed, no secret in the report,
/// the audit table consistent, no order of `refs` moved back since `last` (then updated).
pub async fn after_run(
    report: &Report,
    secrets: &[&str],
    store: &payrecon::store::Store,
    refs: Vec<String>,
    last: &mut std::collections::HashMap<String, payrecon::domain::State>,
) -> Result<(), String> {
    let json = report.to_json();
    if report.any_failed() {
        return Err(format!("a run failed:\n{json}"));
    }
    if secrets.iter().any(|k| json.contains(k)) {
        return Err(format!("a key is in the report:\n{json}"));
    }
    audit(store).await?;
    let rows = crate::order_rows(store, refs).await?;
    for r in rows {
        if let Some(before) = last.get(&r.order_ref) {
            if r.state < *before {
                return Err(format!(
                    "{} moved back from {before:?} to {:?}",
                    r.order_ref, r.state
                ));
            }
        }
        last.insert(r.order_ref, r.state);
    }
    Ok(())
}

pub async fn audit(s: &payrecon::store::Store) -> Result<(), String> {
    let audit = db(s.transitions().await)?;
    let mut last: HashMap<&str, State> = HashMap::new();
    let mut seen: HashSet<(&str, State)> = HashSet::new();
    for t in &audit {
        if t.from_state >= t.to_state {
            return Err(format!("a backwards or idle transition: {t:?}"));
        }
        if let Some(prev) = last.get(t.order_ref.as_str()) {
            if *prev >= t.to_state {
                return Err(format!("{}: {:?} after {prev:?}", t.order_ref, t.to_state));
            }
        }
        if !seen.insert((t.order_ref.as_str(), t.to_state)) {
            return Err(format!("applied twice: {t:?}"));
        }
        last.insert(t.order_ref.as_str(), t.to_state);
    }
    Ok(())
}

/// The exceptions invariant (ARCHITECTURE.md): at most one open exception per problem, and
/// every order held at the end (still `unpaid` with payments credited) has its open
/// `amount_mismatch` or `late_payment` exception (nothing settles them in a simulation).
pub async fn exceptions(w: &World) -> Result<(), String> {
    let s = w.store();
    let open = db(s
        .list_exceptions(&payrecon::store::ExceptionFilter {
            status: Some("open".into()),
            limit: 1_000_000,
            ..Default::default()
        })
        .await)?;
    let mut problems: HashSet<(String, String, String)> = HashSet::new();
    for x in &open {
        let key = match x.kind.as_str() {
            "amount_mismatch" | "late_payment" if x.order_ref.is_some() => (
                x.kind.clone(),
                x.order_ref.clone().unwrap_or_default(),
                String::new(),
            ),
            "reorged" => (
                x.kind.clone(),
                x.order_ref.clone().unwrap_or_default(),
                x.tx_hash.clone().unwrap_or_default(),
            ),
            _ => (
                x.kind.clone(),
                x.tx_hash.clone().unwrap_or_default(),
                format!("{:?}", x.log_index),
            ),
        };
        if !problems.insert(key) {
            return Err(format!("two open exceptions for one problem: {x:?}"));
        }
    }
    for o in &w.orders {
        let snap = db(s.order_by_ref(&o.order_ref).await)?
            .ok_or_else(|| format!("order {} vanished", o.order_ref))?;
        let paid: u128 = snap
            .amount_paid
            .as_deref()
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        if snap.state != State::Unpaid || paid == 0 {
            continue;
        }
        let held = open.iter().any(|x| {
            x.order_ref.as_deref() == Some(o.order_ref.as_str())
                && (x.kind == "amount_mismatch" || x.kind == "late_payment")
        });
        if !held {
            return Err(format!(
                "{} is held (unpaid, {paid} paid) with no open exception; open: {open:?}",
                o.order_ref
            ));
        }
    }
    Ok(())
}

/// Webhook ingest (seeds with it): every accepted event stored once and processed, no
/// tampered one stored; a payment that only a webhook reported was applied with
/// `source = 'webhook'`; a webhook transition only where a delivery was accepted.
pub async fn webhooks(w: &World) -> Result<(), String> {
    let Some(h) = &w.hooks else {
        return Ok(());
    };
    let s = w.store();
    let provider = payrecon_testkit::sandbox::SANDBOX_PROVIDER;
    let stored = db(s.webhook_delivery_count(provider).await)?;
    if stored != h.accepted.len() as i64 {
        return Err(format!(
            "{stored} webhook events stored, {} accepted (tampered: {:?})",
            h.accepted.len(),
            h.tampered
        ));
    }
    let left = db(s.unprocessed_webhook_deliveries(None, 10).await)?;
    if let Some(e) = left.first() {
        return Err(format!(
            "{} webhook events still unprocessed after the fault-free runs, e.g. {}",
            left.len(),
            e.event_id
        ));
    }
    let audit = db(s.transitions().await)?;
    let by_webhook: Vec<_> = audit.iter().filter(|t| t.source == "webhook").collect();
    crate::webhooks::count(
        crate::webhooks::WEBHOOK_TRANSITIONS,
        by_webhook.len() as u64,
    );
    for t in &by_webhook {
        let o = w
            .orders
            .iter()
            .find(|o| o.order_ref == t.order_ref)
            .ok_or_else(|| format!("a webhook transition of an unknown order: {t:?}"))?;
        let delivered = w
            .pays
            .iter()
            .enumerate()
            .any(|(i, p)| w.delivered(i) && p.to == o.pay_to && p.native == o.native);
        if !delivered || t.run_id.is_some() {
            return Err(format!(
                "a webhook transition without an accepted delivery, or with a run id: {t:?}"
            ));
        }
    }
    let credited = crate::credited(s).await?;
    let webhook_only = |tx: &str| {
        w.pays
            .iter()
            .enumerate()
            .any(|(i, p)| p.tx == tx && !p.notified && !w.qv_listed(i) && w.delivered(i))
    };
    for o in &w.orders {
        let snap = db(s.order_by_ref(&o.order_ref).await)?
            .ok_or_else(|| format!("order {} vanished", o.order_ref))?;
        let Some(tx) = snap.tx_hash.as_deref() else {
            continue;
        };
        // Paid by payments only a webhook reported (several: one of them covered it).
        let parts = credited.get(&o.order_ref).map(Vec::as_slice).unwrap_or(&[]);
        let only_webhook = webhook_only(tx) && parts.iter().all(|c| webhook_only(&c.tx));
        if only_webhook && !by_webhook.iter().any(|t| t.order_ref == o.order_ref) {
            return Err(format!(
                "{} holds {tx}, which only a webhook reported, with no webhook transition",
                o.order_ref
            ));
        }
    }
    Ok(())
}
