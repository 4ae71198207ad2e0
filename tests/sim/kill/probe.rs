//! What a kill left behind: the ledger's rows and audit trail, read from the test process
//! while no child runs, and the consistency a killed run must leave (invariant 5,
//! ARCHITECTURE.md).

use std::collections::HashMap;

use payrecon::domain::State;
use payrecon::store::Store;

use crate::world::World;
use crate::{Credited, CreditedRow, CREDITED};

/// One order's row: `(order_ref, state, tx_hash, log_index, amount_paid, block_number,
/// block_hash)`.
pub type Row = (
    String,
    String,
    Option<String>,
    Option<i64>,
    Option<String>,
    Option<i64>,
    Option<String>,
);

/// The ledger (orders, audit and payments) and the runs a killed process left unfinished,
/// read in one snapshot: a killed client's last COMMIT may still land on the server while we
/// read, so every read a check compares is in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snap {
    pub orders: Vec<Row>,
    /// `(order_ref, to_state)` of every audit row, in id order.
    pub audit: Vec<(String, String)>,
    /// The credited payments (`payrecon_payments`) by order.
    pub credited: HashMap<String, Vec<Credited>>,
    /// `payrecon_runs` rows without a finish time.
    pub unfinished: i64,
}

impl Snap {
    /// Whether the ledger (not the findings or run rows) differs.
    pub fn ledger_differs(&self, other: &Snap) -> bool {
        self.orders != other.orders || self.audit != other.audit
    }
}

const ORDERS: &str = "SELECT CAST(order_ref AS TEXT), state, tx_hash, log_index, \
    CAST(amount_paid AS TEXT), block_number, block_hash FROM orders ORDER BY id";
const AUDIT: &str = "SELECT CAST(o.order_ref AS TEXT), t.to_state FROM payrecon_transitions t \
    JOIN orders o ON o.id = t.order_id ORDER BY t.id";
const UNFINISHED: &str = "SELECT COUNT(*) FROM payrecon_runs WHERE finished_at IS NULL";

/// The four reads in one transaction (`first` opens it: a snapshot on PostgreSQL and
/// MariaDB/MySQL), each respelled for the store's backend.
macro_rules! read_snap {
    ($store:expr, $pool:expr, $first:expr) => {{
        let sql = |q: &str| payrecon_testkit::inspect::respell($store, q);
        let mut conn = $pool.acquire().await?;
        // Unprepared: MySQL refuses its transaction statements as prepared ones (1295).
        for q in $first {
            sqlx::Executor::execute(&mut *conn, q).await?;
        }
        let orders = sqlx::query_as(&sql(ORDERS)).fetch_all(&mut *conn).await;
        let audit = sqlx::query_as(&sql(AUDIT)).fetch_all(&mut *conn).await;
        let credited: Result<Vec<CreditedRow>, _> =
            sqlx::query_as(&sql(CREDITED)).fetch_all(&mut *conn).await;
        let unfinished = sqlx::query_scalar(&sql(UNFINISHED))
            .fetch_one(&mut *conn)
            .await;
        sqlx::query("ROLLBACK").execute(&mut *conn).await?;
        Snap {
            orders: orders?,
            audit: audit?,
            credited: crate::by_order(credited?).map_err(sqlx::Error::Protocol)?,
            unfinished: unfinished?,
        }
    }};
}

async fn read(store: &Store) -> Result<Snap, sqlx::Error> {
    Ok(match store {
        Store::Sqlite(p) => read_snap!(store, p, ["BEGIN"]),
        Store::Postgres(p) => read_snap!(
            store,
            p,
            [
                "BEGIN",
                "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"
            ]
        ),
        // The level is set for the next transaction, which the snapshot opens.
        Store::MySql(p) => read_snap!(
            store,
            p,
            [
                "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY",
                "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"
            ]
        ),
    })
}

pub async fn snap(w: &World) -> Result<Snap, String> {
    let snap = read(w.store())
        .await
        .map_err(|e| format!("reading the ledger: {e}"))?;
    if snap.orders.len() != w.orders.len() {
        return Err(format!(
            "{} orders in the ledger, {} inserted",
            snap.orders.len(),
            w.orders.len()
        ));
    }
    Ok(snap)
}

fn state(s: &str) -> Result<State, String> {
    State::parse(s).map_err(|_| format!("an unknown state {s:?}"))
}

/// The ledger a kill left: the audit trail is monotone and once per state; every order is
/// at the highest state its audit rows name (nobody else writes here), with a complete
/// payment (key, amount, block) exactly when it has left `unpaid`; no order is behind
/// where it was before; no payment key is held twice.
pub async fn consistent(w: &World, before: &Snap, now: &Snap) -> Result<(), String> {
    crate::check::audit(w.store()).await?;
    let mut top: HashMap<&str, State> = HashMap::new();
    for (r, to) in &now.audit {
        let to = state(to)?;
        let e = top.entry(r.as_str()).or_insert(to);
        *e = (*e).max(to);
    }
    let mut keys = HashMap::new();
    let credited = &now.credited;
    for (o, prev) in now.orders.iter().zip(&before.orders) {
        let (r, st, tx, li, paid, block, _) = o;
        let (st, prev_st) = (state(st)?, state(&prev.1)?);
        let audited = top.get(r.as_str()).copied().unwrap_or(State::Unpaid);
        if st != audited {
            return Err(format!(
                "{r}: state {st:?}, its audit trail says {audited:?}: {o:?}"
            ));
        }
        let complete = tx.is_some() && li.is_some() && paid.is_some() && block.is_some();
        // Unpaid: no key; `amount_paid` only for a payment held short (docs/configuration.md,
        // "Amounts").
        let none = tx.is_none() && li.is_none();
        if (st == State::Unpaid && !none) || (st != State::Unpaid && !complete) {
            return Err(format!("{r}: a half-written payment: {o:?}"));
        }
        // Invariant 9 across a kill: a payment row and the order's amount_paid are written
        // in one transaction, so the sum of its payments is what the order says.
        let parts = credited.get(r.as_str()).map(Vec::as_slice).unwrap_or(&[]);
        let sum: u128 = parts.iter().map(|c| c.amount).sum();
        let want = (!parts.is_empty()).then(|| sum.to_string());
        if *paid != want {
            return Err(format!(
                "{r}: amount_paid {paid:?}, its payments {parts:?} (a credit half-written)"
            ));
        }
        if st < prev_st {
            return Err(format!(
                "{r} moved backwards across a kill: {prev_st:?} -> {st:?}"
            ));
        }
        if prev_st != State::Unpaid && (tx, li) != (&prev.2, &prev.3) {
            return Err(format!(
                "{r}: its payment changed across a kill: {prev:?} -> {o:?}"
            ));
        }
        if let (Some(t), Some(li)) = (tx, li) {
            if let Some(other) = keys.insert((t.clone(), *li), r) {
                return Err(format!("{other} and {r} hold the same payment key"));
            }
        }
    }
    Ok(())
}
