//! The only module that knows SQL: SQLite and PostgreSQL side by side behind one `Store`.
//! Lookups are batched (one query per page of records); a transition is one conditional
//! UPDATE plus its audit row in the same transaction.

use std::collections::HashSet;

use jiff::Timestamp;

use crate::domain::{LedgerRow, LedgerView, PaymentKey, PlannedTransition, State, U256};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database: {0}")]
    Db(String),
}

/// Who applies a transition (`payrecon_transitions.source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Reconcile,
    Webhook,
}

#[derive(Debug, Clone)]
pub struct ApplyContext {
    pub source: Source,
    /// Provider name (`chain` for the sweep).
    pub provider: String,
    pub run_id: String,
}

/// What happened to one planned transition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApplyOutcome {
    /// Applied; `from` is the state the row actually had.
    Applied { from: State },
    /// The row is already at or past the target state (someone else got there first).
    Backwards,
    /// The audit row for `(order, to_state)` exists, or the payment key is taken by another row.
    Duplicate,
}

/// A finding as stored in `payrecon_findings`.
#[derive(Debug, Clone)]
pub struct FindingRow {
    pub provider: String,
    pub kind: String,
    pub chain: String,
    pub tx_hash: Option<String>,
    pub log_index: Option<i64>,
    pub order_ref: Option<String>,
    pub local_state: Option<String>,
    pub observed_state: Option<String>,
    pub action: String,
    pub detail: String,
}

#[derive(Debug, Clone)]
pub struct RunRow {
    pub id: String,
    /// `schedule` | `cli`.
    pub trigger: String,
    pub started_at: Timestamp,
    pub since: Timestamp,
    pub until: Timestamp,
}

#[derive(Debug, Clone, Default)]
pub struct RunTotals {
    pub status: String,
    pub checked: i64,
    pub gaps: i64,
    pub applied: i64,
    pub resends_requested: i64,
    pub error: Option<String>,
}

/// An order as the merchant inserts it (demo, tests, benchmarks).
#[derive(Debug, Clone)]
pub struct NewOrder {
    pub order_ref: String,
    pub chain: String,
    pub pay_to: String,
    pub asset: String,
    pub amount_due: U256,
}

#[derive(Clone)]
pub enum Store {
    Sqlite(sqlx::SqlitePool),
    Postgres(sqlx::PgPool),
}

impl Store {
    /// `sqlite://path` (created if missing) or `postgres://…`. Errors never carry the password.
    pub async fn connect(url: &str, max_connections: u32) -> Result<Store, StoreError> {
        let _ = (url, max_connections);
        Err(StoreError::Db("not built yet".into()))
    }

    pub async fn migrate(&self) -> Result<(), StoreError> {
        Err(StoreError::Db("not built yet".into()))
    }

    /// A round trip (`SELECT 1`), for `/readyz` and `check`.
    pub async fn ping(&self) -> Result<(), StoreError> {
        Err(StoreError::Db("not built yet".into()))
    }

    /// Two batched queries: rows holding any of `keys`, and unpaid unkeyed orders for any of
    /// the `(chain, pay_to, asset)` slots (oldest first: created_at, then id).
    pub async fn load_view(
        &self,
        keys: &[PaymentKey],
        slots: &[(String, String, String)],
    ) -> Result<LedgerView, StoreError> {
        let _ = (keys, slots);
        Err(StoreError::Db("not built yet".into()))
    }

    /// Which of `keys` some order already holds (one query).
    pub async fn attached_keys(
        &self,
        keys: &[PaymentKey],
    ) -> Result<HashSet<PaymentKey>, StoreError> {
        let _ = keys;
        Err(StoreError::Db("not built yet".into()))
    }

    /// Applies a batch in one transaction; one outcome per transition, in order.
    pub async fn apply(
        &self,
        batch: &[PlannedTransition],
        ctx: &ApplyContext,
    ) -> Result<Vec<ApplyOutcome>, StoreError> {
        let _ = (batch, ctx);
        Err(StoreError::Db("not built yet".into()))
    }

    /// Keyset page of rows with a payment key in `pending`/`confirmed`, `id > after_id`, by id.
    pub async fn sweep_page(
        &self,
        after_id: i64,
        limit: i64,
    ) -> Result<Vec<LedgerRow>, StoreError> {
        let _ = (after_id, limit);
        Err(StoreError::Db("not built yet".into()))
    }

    /// Claims the right to request a resend: true (and recorded) when no request for this
    /// notification was made within `cooldown` before `now`. Atomic across processes.
    pub async fn claim_resend(
        &self,
        provider: &str,
        notification_id: &str,
        now: Timestamp,
        cooldown: std::time::Duration,
    ) -> Result<bool, StoreError> {
        let _ = (provider, notification_id, now, cooldown);
        Err(StoreError::Db("not built yet".into()))
    }

    pub async fn start_run(&self, run: &RunRow) -> Result<(), StoreError> {
        let _ = run;
        Err(StoreError::Db("not built yet".into()))
    }

    pub async fn finish_run(
        &self,
        run_id: &str,
        finished_at: Timestamp,
        totals: &RunTotals,
    ) -> Result<(), StoreError> {
        let _ = (run_id, finished_at, totals);
        Err(StoreError::Db("not built yet".into()))
    }

    /// Multi-row inserts, in chunks.
    pub async fn insert_findings(
        &self,
        run_id: &str,
        findings: &[FindingRow],
    ) -> Result<(), StoreError> {
        let _ = (run_id, findings);
        Err(StoreError::Db("not built yet".into()))
    }

    /// Multi-row inserts, in chunks (demo, tests, benchmarks).
    pub async fn insert_orders(&self, orders: &[NewOrder]) -> Result<(), StoreError> {
        let _ = orders;
        Err(StoreError::Db("not built yet".into()))
    }
}
