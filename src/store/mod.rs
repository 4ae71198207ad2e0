//! The only module that knows SQL: SQLite and PostgreSQL side by side behind one `Store`.
//! Lookups are batched (one query per page of records); a transition is one conditional
//! UPDATE plus its audit row in the same transaction.

mod apply;
mod attach;
mod error;
mod event_list;
mod events;
mod exceptions;
mod export;
mod inbox;
#[cfg(feature = "demo")]
mod inspect;
mod lease;
mod list_reads;
mod outbox;
mod payments;
mod pg_batch;
mod postgres;
mod readonly;
mod registry;
mod rows;
mod sqlite;
mod status;
mod sweep;
mod unpaid;

use std::collections::{BTreeSet, HashSet};

use jiff::Timestamp;

use crate::domain::{LedgerRow, LedgerView, PaymentKey, PlannedTransition, State, TxHash};

pub use error::StoreError;
use error::{is_retryable, is_unique_violation};
pub use event_list::{EventCounts, EventFilter, EventRow};
pub use events::{Attempt, ClaimedEvent};
pub use exceptions::{
    ExceptionFilter, ExceptionRow, FinalSeen, OpenExceptions, Resolve, EXCEPTION_KINDS,
};
pub use export::ExportRow;
pub use inbox::StoredEvent;
#[cfg(feature = "demo")]
pub use inspect::{OrderSnapshot, RunSnapshot, TransitionRow};
pub use lease::Fence;
pub use list_reads::{ListRead, ListReadRow};
pub use outbox::event_type;
pub use payments::HeldPayment;
pub use registry::{OrderPage, OrderView, PaymentView, Registered, REGISTER_BATCH};
pub use status::{LeaseRow, PendingResend, RunStatusRow, StatusData, STATUS_LIST_LIMIT};
pub use sweep::{Rekey, RekeyOutcome};

/// What a batch of transitions checks in its transaction before it writes anything.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Guard<'a> {
    None,
    /// The lease still holds (a scheduled run's part).
    Lease(&'a Fence),
    /// The exception is still open, and is now resolved by this decision.
    Exception(&'a Resolve),
}

/// Who applies a transition (`payrecon_transitions.source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Reconcile,
    Webhook,
    /// A person's decision on an exception (`payrecon exceptions accept|attach`).
    Operator,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Reconcile => "reconcile",
            Source::Webhook => "webhook",
            Source::Operator => "operator",
        }
    }
}

#[derive(Debug, Clone)]
pub struct ApplyContext {
    pub source: Source,
    /// Provider name (`chain` for the sweep).
    pub provider: String,
    pub run_id: String,
    /// Write each applied transition's event (`payrecon_events`) in its transaction:
    /// `[events] url` is set. The merchant's own writes (demo, tests) pass false.
    pub events: bool,
}

impl ApplyContext {
    /// An empty run id (a webhook outside any run) is stored as NULL.
    fn run_id_or_null(&self) -> Option<&str> {
        Some(self.run_id.as_str()).filter(|s| !s.is_empty())
    }
}

/// RFC 3339 UTC with exactly three fractional digits (how payrecon spells stored times).
pub fn rfc3339_ms(t: Timestamp) -> String {
    rows::sqlite_ts(t)
}

/// The database file of a SQLite URL (`None`: PostgreSQL, in-memory, or not a URL we read).
pub fn sqlite_file(url: &str) -> Option<std::path::PathBuf> {
    use std::str::FromStr;
    if !url.starts_with("sqlite:") || url.contains(":memory:") || url.contains("mode=memory") {
        return None;
    }
    let opts = sqlx::sqlite::SqliteConnectOptions::from_str(url).ok()?;
    let path = opts.get_filename();
    (!path.as_os_str().is_empty()).then(|| path.to_path_buf())
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
    /// The payment key was attached to an order already in the target state (no transition).
    Attached,
    /// A payment was credited to an order that stays where it is: short of its amount, it is
    /// held (docs/configuration.md, "Amounts").
    Credited,
    /// A payment was not credited: the order's amount or key changed since the step was
    /// planned (another writer got there first). Planned again, it is credited.
    Stale,
}

/// A finding as stored in `payrecon_findings` (and listed in the run report).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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
    /// The payment's amount in base units, where the finding names one transfer (kept on its
    /// exception, README.md, "Exceptions"; not a column of `payrecon_findings`, not in the
    /// report).
    #[serde(skip)]
    pub amount: Option<String>,
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
    /// The providers the run reconciled, as `",cg,chain,"` (`None`: not recorded).
    pub providers: Option<String>,
}

/// An order as the merchant inserts it (demo, tests, benchmarks; feature `demo`).
#[cfg(feature = "demo")]
#[derive(Debug, Clone)]
pub struct NewOrder {
    pub order_ref: String,
    pub chain: String,
    pub pay_to: String,
    pub asset: String,
    pub amount_due: crate::domain::U256,
}

#[derive(Clone)]
pub enum Store {
    Sqlite(sqlx::SqlitePool),
    Postgres(sqlx::PgPool),
}

/// How often a PostgreSQL batch is retried after a deadlock or serialization failure.
const APPLY_ATTEMPTS: usize = 6;

impl Store {
    /// `sqlite://path` (created if missing) or `postgres://…`. Errors never carry the password.
    pub async fn connect(url: &str, max_connections: u32) -> Result<Store, StoreError> {
        let scheme = url.split_once(':').map(|(s, _)| s).unwrap_or("");
        match scheme {
            "sqlite" => sqlite::connect(url, max_connections)
                .await
                .map(Store::Sqlite),
            "postgres" | "postgresql" => postgres::connect(url, max_connections)
                .await
                .map(Store::Postgres),
            _ => Err(StoreError::Invalid(format!(
                "unsupported database URL {}: expected sqlite://path or postgres://…",
                crate::secret::redact_url(url)
            ))),
        }
    }

    /// `"sqlite"` or `"postgres"`.
    pub fn backend_name(&self) -> &'static str {
        match self {
            Store::Sqlite(_) => "sqlite",
            Store::Postgres(_) => "postgres",
        }
    }

    pub async fn migrate(&self) -> Result<(), StoreError> {
        match self {
            Store::Sqlite(p) => sqlite::migrate(p).await,
            Store::Postgres(p) => postgres::migrate(p).await,
        }
    }

    /// Closes the pool (waits for its connections to be returned).
    pub async fn close(&self) {
        match self {
            Store::Sqlite(p) => p.close().await,
            Store::Postgres(p) => p.close().await,
        }
    }

    /// A round trip (`SELECT 1`), for `/readyz` and `check`.
    pub async fn ping(&self) -> Result<(), StoreError> {
        let res = match self {
            Store::Sqlite(p) => sqlx::query("SELECT 1").execute(p).await.map(|_| ()),
            Store::Postgres(p) => sqlx::query("SELECT 1").execute(p).await.map(|_| ()),
        };
        res.map_err(|e| rows::db_error("ping the database", e))
    }

    /// Two batched queries: rows holding any of `keys`, and unpaid unkeyed orders for any of
    /// the `(chain, pay_to, asset)` slots (oldest first: created_at, then id).
    pub async fn load_view(
        &self,
        keys: &[PaymentKey],
        slots: &[(String, String, String)],
    ) -> Result<LedgerView, StoreError> {
        let keys: Vec<PaymentKey> = keys
            .iter()
            .cloned()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let slots: Vec<&(String, String, String)> =
            slots.iter().collect::<BTreeSet<_>>().into_iter().collect();
        let mut view = match self {
            Store::Sqlite(p) => sqlite::load_view(p, &keys, &slots).await?,
            Store::Postgres(p) => postgres::load_view(p, &keys, &slots).await?,
        };
        let mut rows: Vec<&mut LedgerRow> = view
            .by_key
            .values_mut()
            .chain(view.unpaid.values_mut().flatten())
            .collect();
        payments::load_credits(self, &mut rows).await?;
        Ok(view)
    }

    /// Rows holding a payment of any of these `(chain, tx_hash)` transactions, whatever its
    /// log index: used to tell a held payment the chain lost (`reorged`) from a stray one.
    pub async fn rows_by_tx(&self, txs: &[(String, TxHash)]) -> Result<Vec<LedgerRow>, StoreError> {
        let txs: Vec<&(String, TxHash)> = txs.iter().collect::<BTreeSet<_>>().into_iter().collect();
        match self {
            Store::Sqlite(p) => sqlite::rows_by_tx(p, &txs).await,
            Store::Postgres(p) => postgres::rows_by_tx(p, &txs).await,
        }
    }

    /// The `final` payments of these transactions on `chain` unchanged since before
    /// `settled_before` (outside the chain's `recheck_final`), as the transfers they were:
    /// a record naming one needs no receipt (one query per 5,000 transactions).
    pub async fn settled_payments(
        &self,
        chain: &str,
        txs: &[&str],
        settled_before: Timestamp,
    ) -> Result<Vec<crate::domain::ChainTransfer>, StoreError> {
        payments::settled(self, chain, txs, settled_before).await
    }

    /// Which of `keys` some order already holds (one query per 5,000 keys).
    pub async fn attached_keys(
        &self,
        keys: &[PaymentKey],
    ) -> Result<HashSet<PaymentKey>, StoreError> {
        let found = match self {
            Store::Sqlite(p) => sqlite::attached_keys(p, keys).await?,
            Store::Postgres(p) => postgres::attached_keys(p, keys).await?,
        };
        Ok(keys
            .iter()
            .filter(|k| {
                found.contains(&(k.chain.clone(), k.tx_hash.as_str().to_string(), k.log_index))
            })
            .cloned()
            .collect())
    }

    /// Applies a batch in one transaction; one outcome per transition, in order.
    #[tracing::instrument(skip_all, fields(provider = %ctx.provider, run_id = %ctx.run_id, n = batch.len()))]
    pub async fn apply(
        &self,
        batch: &[PlannedTransition],
        ctx: &ApplyContext,
    ) -> Result<Vec<ApplyOutcome>, StoreError> {
        self.apply_fenced(batch, ctx, None).await
    }

    /// `apply`, after checking in the same transaction that `fence` (a lease) still holds;
    /// a lost lease fails the batch and writes nothing.
    pub async fn apply_fenced(
        &self,
        batch: &[PlannedTransition],
        ctx: &ApplyContext,
        fence: Option<&Fence>,
    ) -> Result<Vec<ApplyOutcome>, StoreError> {
        let guard = fence.map_or(Guard::None, Guard::Lease);
        self.apply_guarded(batch, ctx, guard).await
    }

    /// `apply` of an operator's decision on an exception (README.md, "Exceptions"): the
    /// exception is claimed (open → resolved) in the same transaction, so that of two people
    /// acting at once one wins; the loser gets `ExceptionTaken` and nothing is written.
    pub async fn apply_resolving(
        &self,
        batch: &[PlannedTransition],
        ctx: &ApplyContext,
        resolve: &Resolve,
    ) -> Result<Vec<ApplyOutcome>, StoreError> {
        self.apply_guarded(batch, ctx, Guard::Exception(resolve))
            .await
    }

    async fn apply_guarded(
        &self,
        batch: &[PlannedTransition],
        ctx: &ApplyContext,
        guard: Guard<'_>,
    ) -> Result<Vec<ApplyOutcome>, StoreError> {
        if batch.is_empty() {
            return Ok(Vec::new());
        }
        // A canonical order (by payment key, then order id) makes concurrent batches wait on
        // each other's unique-index entries in one direction only: no deadlock cycle.
        let order = canonical_order(batch);
        let sorted: Vec<PlannedTransition> = order.iter().map(|&i| batch[i].clone()).collect();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let res = match self {
                Store::Sqlite(p) => sqlite::apply(p, &sorted, ctx, guard).await,
                Store::Postgres(p) => postgres::apply(p, &sorted, ctx, guard).await,
            };
            match res {
                Err(e) if attempt < APPLY_ATTEMPTS && is_retryable(&e) => {
                    tracing::info!(attempt, error = %e, "Retrying a batch of transitions.");
                    let jitter = rand::random::<u64>() % (25 << attempt);
                    tokio::time::sleep(std::time::Duration::from_millis(10 + jitter)).await;
                }
                Err(sqlx::Error::Protocol(m)) if m == lease::FENCED => {
                    return Err(StoreError::LeaseLost {
                        provider: ctx.provider.clone(),
                    })
                }
                Err(sqlx::Error::Protocol(m)) if m == exceptions::TAKEN => {
                    let id = match guard {
                        Guard::Exception(r) => r.id,
                        _ => 0,
                    };
                    return Err(StoreError::ExceptionTaken { id });
                }
                Err(sqlx::Error::Protocol(m)) if m == exceptions::UNCHANGED => {
                    return Err(StoreError::Invalid(m));
                }
                other => {
                    let outcomes = other.map_err(|e| rows::db_error("apply transitions", e))?;
                    let mut out = vec![ApplyOutcome::Duplicate; batch.len()];
                    for (pos, &i) in order.iter().enumerate() {
                        out[i] = outcomes[pos];
                    }
                    return Ok(out);
                }
            }
        }
    }

    /// Keyset page of rows with a payment key in `pending`/`confirmed`, `id > after_id`, by id.
    /// Unreadable rows are skipped (and logged); the page is still filled up to `limit`.
    pub async fn sweep_page(
        &self,
        after_id: i64,
        limit: i64,
    ) -> Result<Vec<LedgerRow>, StoreError> {
        self.sweep_page_with(after_id, limit, &[]).await
    }

    /// As `sweep_page`, plus keyed `final` rows of each `(chain, since, before)` of
    /// `recent_final` whose `state_changed_at` is in `[since, before)` (the reorg recheck of
    /// young final rows).
    pub async fn sweep_page_with(
        &self,
        after_id: i64,
        limit: i64,
        recent_final: &[(String, Timestamp, Timestamp)],
    ) -> Result<Vec<LedgerRow>, StoreError> {
        let mut out: Vec<LedgerRow> = Vec::new();
        let mut after = after_id;
        while (out.len() as i64) < limit {
            let want = limit - out.len() as i64;
            let (rows, last, fetched) = match self {
                Store::Sqlite(p) => sweep::sqlite_page(p, after, want, recent_final).await?,
                Store::Postgres(p) => sweep::pg_page(p, after, want, recent_final).await?,
            };
            out.extend(rows);
            match last {
                Some(last) if fetched as i64 == want => after = last,
                _ => break,
            }
        }
        Ok(out)
    }

    /// Moves a payment the chain re-included elsewhere to its new position (`log_index`,
    /// `block_number`, `block_hash`) in one statement guarded by the old values; the state
    /// and the audit trail are not touched. Never fails on a key collision (an outcome).
    pub async fn rekey(&self, r: &Rekey) -> Result<RekeyOutcome, StoreError> {
        match self {
            Store::Sqlite(p) => sweep::sqlite_rekey(p, r).await,
            Store::Postgres(p) => sweep::pg_rekey(p, r).await,
        }
    }

    /// A keyset page (by payment id, after `after`) of the payments the sweep follows beside
    /// the keyed rows: those of orders still short, and the earlier parts of paid orders (not
    /// final, final since `recent_since`, or flagged gone); each with its order as a row keyed
    /// by that payment. Also the last id read (`None`: the end).
    pub async fn held_page(
        &self,
        after: i64,
        limit: i64,
        recent_since: Option<Timestamp>,
    ) -> Result<(Vec<HeldPayment>, Option<i64>), StoreError> {
        payments::held_page(self, after, limit, recent_since).await
    }

    /// Moves payments forward to the states the chain shows, never back (one statement).
    pub async fn advance_payment_states(&self, moves: &[(i64, State)]) -> Result<u64, StoreError> {
        payments::advance_states(self, moves).await
    }

    /// Flags held payment `payment_id` gone from the chain (`gone`) or on it again, and
    /// writes its order's `amount_paid` as the sum of its payments on chain (an order still
    /// short only), in one transaction. False when the flag was already so.
    pub async fn set_payment_gone(&self, payment_id: i64, gone: bool) -> Result<bool, StoreError> {
        payments::set_gone(self, payment_id, gone).await
    }

    /// Orders held now (docs/configuration.md, "Amounts"): unpaid, no key, part of their amount
    /// credited; as `(underpaid, late)`, late when one of their payments is in a block after
    /// `expires_at`.
    pub async fn count_held(&self) -> Result<(i64, i64), StoreError> {
        let held = "o.state = 'unpaid' AND o.tx_hash IS NULL AND o.amount_paid IS NOT NULL";
        let late = |bt: &str, exp: &str| {
            format!(
                "SELECT COUNT(*) FILTER (WHERE NOT l), COUNT(*) FILTER (WHERE l) FROM (SELECT \
                 EXISTS (SELECT 1 FROM payrecon_payments p WHERE p.order_id = o.id \
                 AND {bt} > {exp}) AS l FROM orders o WHERE {held}) h"
            )
        };
        let res = match self {
            Store::Sqlite(p) => {
                let sql = late(
                    &rows::sqlite_ms("p.block_time"),
                    &rows::sqlite_ms("o.expires_at"),
                );
                sqlx::query_as(&sql).fetch_one(rows::counted(p)).await
            }
            Store::Postgres(p) => {
                sqlx::query_as(&late("p.block_time", "o.expires_at"))
                    .fetch_one(rows::counted(p))
                    .await
            }
        };
        res.map_err(|e| rows::db_error("count the orders held", e))
    }

    /// Moves held payment `payment_id` to `r`'s new position, guarded like `rekey`.
    pub async fn rekey_held(&self, payment_id: i64, r: &Rekey) -> Result<RekeyOutcome, StoreError> {
        payments::rekey_held(self, payment_id, r).await
    }

    /// Records the blocks of payments whose rows hold none, in one statement (`Rekey` with
    /// the old and new log index equal). Returns the rows written.
    pub async fn record_blocks(&self, rows: &[Rekey]) -> Result<u64, StoreError> {
        match self {
            Store::Sqlite(p) => sweep::sqlite_record_blocks(p, rows).await,
            Store::Postgres(p) => sweep::pg_record_blocks(p, rows).await,
        }
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
        match self {
            Store::Sqlite(p) => {
                sqlite::claim_resend(p, provider, notification_id, now, cooldown).await
            }
            Store::Postgres(p) => {
                postgres::claim_resend(p, provider, notification_id, now, cooldown).await
            }
        }
    }

    pub async fn start_run(&self, run: &RunRow) -> Result<(), StoreError> {
        match self {
            Store::Sqlite(p) => sqlite::start_run(p, run).await,
            Store::Postgres(p) => postgres::start_run(p, run).await,
        }
    }

    pub async fn finish_run(
        &self,
        run_id: &str,
        finished_at: Timestamp,
        totals: &RunTotals,
    ) -> Result<(), StoreError> {
        let updated = match self {
            Store::Sqlite(p) => sqlite::finish_run(p, run_id, finished_at, totals).await?,
            Store::Postgres(p) => postgres::finish_run(p, run_id, finished_at, totals).await?,
        };
        if updated == 0 {
            return Err(StoreError::Invalid(format!(
                "record the end of run {run_id}: no such run"
            )));
        }
        Ok(())
    }

    /// Multi-row inserts, in chunks.
    pub async fn insert_findings(
        &self,
        run_id: &str,
        findings: &[FindingRow],
    ) -> Result<(), StoreError> {
        if findings.is_empty() {
            return Ok(());
        }
        match self {
            Store::Sqlite(p) => sqlite::insert_findings(p, run_id, findings).await,
            Store::Postgres(p) => postgres::insert_findings(p, run_id, findings).await,
        }
    }

    /// Multi-row inserts, in chunks (demo, tests, benchmarks; feature `demo`: the daemon
    /// never inserts an order).
    #[cfg(feature = "demo")]
    pub async fn insert_orders(&self, orders: &[NewOrder]) -> Result<(), StoreError> {
        if orders.is_empty() {
            return Ok(());
        }
        match self {
            Store::Sqlite(p) => sqlite::insert_orders(p, orders).await,
            Store::Postgres(p) => postgres::insert_orders(p, orders).await,
        }
    }
}

/// Indices of `batch` sorted by the payment key an order is attached to in this batch (if
/// any), then order id, then position, so that an order's steps keep their order.
fn canonical_order(batch: &[PlannedTransition]) -> Vec<usize> {
    let mut first_key: std::collections::HashMap<i64, &PaymentKey> =
        std::collections::HashMap::new();
    for t in batch {
        if let Some(a) = &t.attach {
            first_key.entry(t.order_id).or_insert(&a.key);
        }
    }
    let mut order: Vec<usize> = (0..batch.len()).collect();
    order.sort_by_key(|&i| {
        (
            first_key.get(&batch[i].order_id).copied(),
            batch[i].order_id,
            i,
        )
    });
    order
}
