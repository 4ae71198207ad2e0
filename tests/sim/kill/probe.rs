//! What a kill left behind: the ledger's rows and audit trail, read from the test process
//! while no child runs, and the consistency a killed run must leave (SPEC §8 invariant 5).

use std::collections::HashMap;

use payrecon::domain::State;
use payrecon::store::{OrderSnapshot, Store};

use crate::world::World;

/// The ledger (orders and audit) and the runs a killed process left unfinished.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snap {
    pub orders: Vec<OrderSnapshot>,
    /// `(order_ref, to_state)` of every audit row, in id order.
    pub audit: Vec<(String, State)>,
    /// `payrecon_runs` rows without a finish time.
    pub unfinished: i64,
}

impl Snap {
    /// Whether the ledger (not the findings or run rows) differs.
    pub fn ledger_differs(&self, other: &Snap) -> bool {
        self.orders != other.orders || self.audit != other.audit
    }
}

async fn scalar(store: &Store, sql: &str) -> Result<i64, String> {
    let r = match store {
        Store::Sqlite(p) => sqlx::query_scalar::<_, i64>(sql).fetch_one(p).await,
        Store::Postgres(p) => sqlx::query_scalar::<_, i64>(sql).fetch_one(p).await,
    };
    r.map_err(|e| format!("{sql}: {e}"))
}

pub async fn snap(w: &World) -> Result<Snap, String> {
    let s = w.store();
    let mut orders = Vec::with_capacity(w.orders.len());
    for o in &w.orders {
        let row = s
            .order_by_ref(&o.order_ref)
            .await
            .map_err(|e| format!("reading {}: {e}", o.order_ref))?
            .ok_or_else(|| format!("order {} vanished", o.order_ref))?;
        orders.push(row);
    }
    let audit = s
        .transitions()
        .await
        .map_err(|e| format!("reading the audit: {e}"))?
        .into_iter()
        .map(|t| (t.order_ref, t.to_state))
        .collect();
    let unfinished = scalar(
        s,
        "SELECT COUNT(*) FROM payrecon_runs WHERE finished_at IS NULL",
    )
    .await?;
    Ok(Snap {
        orders,
        audit,
        unfinished,
    })
}

/// The ledger a kill left: the audit trail is monotone and once per state; every order is
/// at the highest state its audit rows name (nobody else writes here), with a complete
/// payment (key, amount, block) exactly when it has left `unpaid`; no order is behind
/// where it was before; no payment key is held twice.
pub async fn consistent(w: &World, before: &Snap, now: &Snap) -> Result<(), String> {
    crate::check::audit(w.store()).await?;
    let mut top: HashMap<&str, State> = HashMap::new();
    for (r, to) in &now.audit {
        let e = top.entry(r.as_str()).or_insert(*to);
        *e = (*e).max(*to);
    }
    let mut keys = HashMap::new();
    for (o, prev) in now.orders.iter().zip(&before.orders) {
        let audited = top
            .get(o.order_ref.as_str())
            .copied()
            .unwrap_or(State::Unpaid);
        if o.state != audited {
            return Err(format!(
                "{}: state {:?}, its audit trail says {audited:?}: {o:?}",
                o.order_ref, o.state
            ));
        }
        let complete = o.tx_hash.is_some()
            && o.log_index.is_some()
            && o.amount_paid.is_some()
            && o.block_number.is_some();
        let none = o.tx_hash.is_none() && o.log_index.is_none() && o.amount_paid.is_none();
        if (o.state == State::Unpaid && !none) || (o.state != State::Unpaid && !complete) {
            return Err(format!("{}: a half-written payment: {o:?}", o.order_ref));
        }
        if o.state < prev.state {
            return Err(format!(
                "{} moved backwards across a kill: {:?} -> {:?}",
                o.order_ref, prev.state, o.state
            ));
        }
        if prev.state != State::Unpaid
            && (o.tx_hash != prev.tx_hash || o.log_index != prev.log_index)
        {
            return Err(format!(
                "{}: its payment changed across a kill: {prev:?} -> {o:?}",
                o.order_ref
            ));
        }
        if let (Some(t), Some(li)) = (&o.tx_hash, o.log_index) {
            if let Some(other) = keys.insert((t.clone(), li), &o.order_ref) {
                return Err(format!(
                    "{other} and {} hold the same payment key",
                    o.order_ref
                ));
            }
        }
    }
    Ok(())
}
