//! The checkers of the invariants of ARCHITECTURE.md, run against the ledger and the ground
//! truth the generator wrote.

use std::collections::{BTreeMap, HashMap, HashSet};

use payrecon::domain::State;
use payrecon::report::Report;
use payrecon_testkit::sandbox::SANDBOX_API_KEY;

use crate::world::{SimPay, World};
use payrecon_testkit::inspect::Inspect;

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

/// Every check that needs the whole history: after the fault-free runs.
pub async fn final_state(w: &World) -> Result<(), String> {
    let s = w.store();
    audit(s).await?;
    exceptions(w).await?;
    block_times(w).await?;

    // (3) convergence, (4) nothing stray or reverted credited, (5) amounts.
    let head = w.chain.head();
    let by_key: HashMap<(&str, i64), &SimPay> = w
        .pays
        .iter()
        .filter(|p| !p.reverted)
        .map(|p| ((p.tx.as_str(), p.log_index), p))
        .collect();
    let reverted: HashSet<&str> = w
        .pays
        .iter()
        .filter(|p| p.reverted)
        .map(|p| p.tx.as_str())
        .collect();
    let credited = crate::credited(s).await?;
    for o in &w.orders {
        let snap = db(s.order_by_ref(&o.order_ref).await)?
            .ok_or_else(|| format!("order {} vanished", o.order_ref))?;
        // Listed by the provider, or delivered by an accepted webhook.
        let creditable: Vec<(String, i64, u128)> = w
            .pays
            .iter()
            .enumerate()
            .filter(|(i, p)| {
                (p.notified || w.delivered(*i) || w.qv_listed(*i))
                    && !p.reverted
                    && p.to == o.pay_to
                    && p.native == o.native
            })
            .map(|(_, p)| (p.tx.clone(), p.log_index, p.amount))
            .collect();
        let mine = credited.get(&o.order_ref).map(Vec::as_slice).unwrap_or(&[]);
        for c in mine {
            if reverted.contains(c.tx.as_str()) {
                return Err(format!(
                    "{} credited a reverted transfer: {c:?}",
                    o.order_ref
                ));
            }
        }
        // (3) convergence, (4) nothing stray or reverted credited, (5) amounts: invariant 9
        // (ARCHITECTURE.md) and the cover rule.
        let due = w.due_after_tolerance(o.due);
        let Some(key) = crate::check_cover(&o.order_ref, due, &snap, mine, &creditable)? else {
            continue;
        };
        let Some(p) = by_key.get(&(key.tx.as_str(), key.log_index)) else {
            return Err(format!(
                "{} holds a payment not on chain: {snap:?}",
                o.order_ref
            ));
        };
        let want = implied(p.block, head);
        if snap.state < want {
            return Err(format!(
                "{} did not converge: {:?}, the chain implies {want:?} (block {}, head {head})",
                o.order_ref, snap.state, p.block
            ));
        }
    }

    // (4) every listed transfer that matches no order (stray, other asset) or reverted is
    // flagged as an unknown payment.
    let findings = db(s.findings().await)?;
    for p in w.pays.iter().filter(|p| p.notified) {
        let matches_order = w
            .orders
            .iter()
            .any(|o| o.pay_to == p.to && o.native == p.native);
        if (p.reverted || !matches_order)
            && !findings
                .iter()
                .any(|f| f.kind == "unknown_payment" && f.tx_hash.as_deref() == Some(&p.tx))
        {
            return Err(format!(
                "listed transfer {} (reverted: {}, to {}) is not flagged unknown_payment",
                p.tx, p.reverted, p.to
            ));
        }
    }

    // (6) at most one resend per notification per cooldown (1 h: once in a simulation).
    let mut resends: BTreeMap<String, u32> = BTreeMap::new();
    for (_, id) in w.cg.retries() {
        *resends.entry(id).or_default() += 1;
    }
    if let Some((id, n)) = resends.iter().find(|(_, n)| **n > 1) {
        return Err(format!(
            "notification {id} resent {n} times in one cooldown"
        ));
    }

    // (8) no secret in findings or a run's error.
    for f in &findings {
        if has_secret(&format!("{f:?}")) {
            return Err(format!("a secret is in a finding: {f:?}"));
        }
    }
    for id in &w.run_ids {
        if let Some(run) = db(s.run_by_id(id).await)? {
            if has_secret(&format!("{run:?}")) {
                return Err(format!("a secret is in a run row: {run:?}"));
            }
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

/// Events (docs/reference.md §6) over the whole seed: every transition payrecon applied has
/// exactly one event of its type and order (and no event lacks its transition); in the end
/// every event is delivered; and each order that ends `final` was fulfilled exactly once, by
/// the merchant's handler when its conditional update won, or by payrecon's event when
/// payrecon's did.
pub async fn effects(w: &World) -> Result<(), String> {
    let refs: Vec<&str> = w.orders.iter().map(|o| o.order_ref.as_str()).collect();
    effects_of(w.store(), &w.merchant, &refs, || w.deliver_events()).await
}

/// `effects` for any world: its ledger, its merchant, its orders, and how it delivers.
pub async fn effects_of<F, Fut>(
    s: &payrecon::store::Store,
    merchant: &crate::merchant::Merchant,
    order_refs: &[&str],
    deliver: F,
) -> Result<(), String>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    // Claims of processes that are gone (a SIGKILLed child, a record cut off by the proxy)
    // expire after `timeout` + 10 s. Safe to expire them at once only because nothing
    // delivers now: every caller has joined its flushes (and child processes) before.
    let expire = "UPDATE payrecon_events SET claimed_by = NULL, claimed_until = NULL \
                  WHERE delivered_at IS NULL";
    payrecon_testkit::on_pool!(s, p => sqlx::query(expire).execute(p).await.map(|_| ()))
        .map_err(|e| format!("database: {e}"))?;
    for _ in 0..20 {
        let c = db(s.event_counts().await)?;
        if c.pending == 0 && c.dead == 0 {
            break;
        }
        if c.dead > 0 {
            let dead = payrecon::store::EventFilter {
                status: Some("dead".into()),
                ..Default::default()
            };
            db(s.replay_events(&dead, jiff::Timestamp::now()).await)?;
        }
        deliver().await;
    }
    let c = db(s.event_counts().await)?;
    if c.pending != 0 || c.dead != 0 {
        return Err(format!("events left undelivered at the end: {c:?}"));
    }
    // One event per transition payrecon applied, and one per payment it credited
    // (docs/reference.md §6), each naming its cause and its cause's order.
    let transitions = db(s.count("payrecon_transitions").await)?;
    let events = db(s.count("payrecon_events").await)?;
    let count = |sql: &'static str| async move {
        payrecon_testkit::on_pool!(s, p => {
            sqlx::query_scalar::<_, i64>(sql).fetch_one(p).await
        })
        .map_err(|e| format!("database: {e}"))
    };
    let payments =
        count("SELECT COUNT(*) FROM payrecon_payments WHERE source IN ('reconcile', 'webhook')")
            .await?;
    let unmatched = count(
        "SELECT COUNT(*) FROM payrecon_events e LEFT JOIN payrecon_transitions t \
         ON t.id = e.transition_id LEFT JOIN payrecon_payments p ON p.id = e.payment_id \
         WHERE CASE WHEN e.transition_id IS NOT NULL THEN t.id IS NULL \
         OR t.order_id <> e.order_id OR e.type <> CONCAT('order.', t.to_state) \
         ELSE p.id IS NULL OR p.order_id <> e.order_id \
         OR e.type <> 'order.payment_received' END",
    )
    .await?;
    if transitions + payments != events || unmatched != 0 {
        return Err(format!(
            "{transitions} transitions, {payments} payments, {events} events, {unmatched} \
             events without their transition or payment"
        ));
    }
    let disorder = merchant.out_of_order();
    if !disorder.is_empty() {
        return Err(format!("events out of order: {disorder:?}"));
    }
    if merchant.bad_signatures() > 0 {
        return Err(format!(
            "{} event(s) with a bad signature",
            merchant.bad_signatures()
        ));
    }
    let fulfilled = merchant.fulfilments();
    let unknown = merchant.commits_unknown();
    let audit = db(s.transitions().await)?;
    for &order_ref in order_refs {
        let snap = db(s.order_by_ref(order_ref).await)?
            .ok_or_else(|| format!("order {order_ref} vanished"))?;
        let by = fulfilled.get(order_ref).cloned().unwrap_or_default();
        let want = usize::from(snap.state == State::Final);
        // The merchant's own update to final committed while its reply was cut: no effect was
        // recorded here (a real handler's fulfilment commits with its update), and payrecon,
        // which found the order final, owed none. Not a lost effect of payrecon's, which
        // would show as an audit row to final without its fulfilment.
        let by_payrecon = audit
            .iter()
            .any(|t| t.order_ref == order_ref && t.to_state == State::Final);
        if by.is_empty() && want == 1 && unknown.contains(order_ref) && !by_payrecon {
            continue;
        }
        if by.len() != want {
            return Err(format!(
                "{order_ref} ends {:?} and was fulfilled {} time(s): {by:?}",
                snap.state,
                by.len()
            ));
        }
    }
    Ok(())
}

/// Every credited payment carries its block's time (read for every credit: the console's delay
/// counts from it, docs/operations.md, "The operator console"; late payments are judged by
/// it), and none but its block's; a payment without one only where a chain request failed on
/// purpose in this seed (a credit whose block's time could not be read goes in without it, and
/// its part fails).
async fn block_times(w: &World) -> Result<(), String> {
    let mut rows = Vec::new();
    let until = jiff::Timestamp::now() + jiff::SignedDuration::from_hours(24);
    let read = w
        .store()
        .export_payments(jiff::Timestamp::UNIX_EPOCH, until, |r| {
            rows.push(r);
            Ok(())
        })
        .await;
    db(read)?;
    let mut missing = Vec::new();
    for r in &rows {
        let block = r.block_number.and_then(|n| u64::try_from(n).ok());
        let want = block.and_then(|n| w.chain.block_time(n));
        match (r.block_time, want) {
            (None, _) => missing.push(format!("{} {}:{}", r.order_ref, r.tx_hash, r.log_index)),
            (Some(t), Some(want)) if u64::try_from(t.as_second()).ok() == Some(want) => {}
            (got, want) => {
                return Err(format!(
                    "{} {}:{} has block time {got:?}; its block {block:?} was at {want:?}",
                    r.order_ref, r.tx_hash, r.log_index
                ))
            }
        }
    }
    if missing.len() as u64 > w.chain_faults {
        return Err(format!(
            "{} payments have no block time, with {} chain requests failed: {missing:?}",
            missing.len(),
            w.chain_faults
        ));
    }
    Ok(())
}
