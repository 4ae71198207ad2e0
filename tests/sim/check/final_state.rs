//! The checks that need a seed's whole history, after its fault-free runs, and the block
//! time every credited payment carries.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::world::{SimPay, World};
use payrecon_testkit::inspect::Inspect;

use super::{audit, db, exceptions, has_secret, implied};

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
