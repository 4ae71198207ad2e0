//! The only module that knows SQL: SQLite, PostgreSQL and MariaDB/MySQL behind one `Store`.
//! Lookups are batched (one query per page of records); a transition is one conditional
//! UPDATE plus its audit row in the same transaction.

// First, so that `from_row!` is in scope in every module declared after it.
#[macro_use]
mod from_row;

mod apply;
mod attach;
mod backend;
mod balances;
mod console;
pub use console::{FindingView, HeldView, DELAY_BUCKETS};
mod dialect;
mod due;
mod error;
mod event_list;
mod events;
mod exceptions;
mod export;
mod held;
mod inbox;
mod lease;
mod list_reads;
mod migrate;
mod mysql;
mod outbox;
mod payments;
mod pool_sql;
mod postgres;
mod readonly;
mod registry;
mod rows;
mod runs;
pub use runs::RunPageRow;
mod scan_cursors;
mod sqlite;
mod status;
mod sweep;
mod types;
mod unpaid;

use std::collections::{BTreeSet, HashSet};

use jiff::Timestamp;

use crate::domain::{LedgerRow, LedgerView, PaymentKey, PlannedTransition, State, TxHash};

use backend::dispatch;
pub use balances::{BalanceGauge, BalanceRow, BalanceScope};
pub use error::StoreError;
pub(crate) use error::WriteError;
use error::{is_retryable, is_unique_violation};
pub use export::ExportRow;
pub use held::HeldPayment;
pub use outbox::event_type;
pub use registry::{OrderPage, OrderView, PaymentView, Registered, TransitionView, REGISTER_BATCH};
pub use status::{LeaseRow, PendingResend, RunStatusRow, StatusData, STATUS_LIST_LIMIT};
pub(crate) use types::Guard;
#[cfg(feature = "demo")]
pub use types::NewOrder;
pub use types::{
    ApplyContext, ApplyOutcome, Attempt, ClaimedEvent, EventCounts, EventFilter, EventRow,
    ExceptionFilter, ExceptionRow, Fence, FinalSeen, FindingRow, ListRead, ListReadRow,
    OpenExceptions, Opening, Rekey, RekeyOutcome, Resolve, Retries, RunRow, RunTotals, Source,
    StoredDelivery, EXCEPTION_KINDS,
};

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

#[derive(Clone)]
pub enum Store {
    Sqlite(sqlx::SqlitePool),
    Postgres(sqlx::PgPool),
    /// MariaDB/MySQL.
    MySql(sqlx::MySqlPool),
}

/// How many times a batch of transitions runs at most: the first attempt and up to five more
/// after a deadlock, a serialization failure, a lock wait timeout or a busy database (with
/// jittered backoff); the last error is then the batch's.
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
            "mysql" | "mariadb" => mysql::connect(url, max_connections).await.map(Store::MySql),
            _ => Err(StoreError::Invalid(format!(
                "unsupported database URL {}: expected sqlite://path, postgres://… or mysql://…",
                crate::secret::redact_url(url)
            ))),
        }
    }

    /// `"sqlite"`, `"postgres"` or `"mysql"`.
    pub fn backend_name(&self) -> &'static str {
        dispatch!(self, _ => D::NAME)
    }

    /// The largest amount (base units) this database keeps, where it keeps less than U256's
    /// largest: `None` on SQLite and PostgreSQL, 10^65 − 1 on MariaDB/MySQL. A larger amount
    /// is refused before it reaches a statement (a field error, or a chain transfer the run
    /// does not credit).
    pub fn max_amount(&self) -> Option<crate::domain::U256> {
        dispatch!(self, _ => D::max_amount())
    }

    pub async fn migrate(&self) -> Result<(), StoreError> {
        dispatch!(self, p => D::migrate(p).await)
    }

    /// Closes the pool (waits for its connections to be returned).
    pub async fn close(&self) {
        dispatch!(self, p => p.close().await)
    }

    /// A round trip (`SELECT 1`), for `/readyz` and `check`.
    pub async fn ping(&self) -> Result<(), StoreError> {
        let res = dispatch!(self, p => sqlx::query("SELECT 1").execute(p).await.map(|_| ()));
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
        let mut view = dispatch!(self, p => D::load_view(p, &keys, &slots).await?);
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
        dispatch!(self, p => D::rows_by_tx(p, &txs).await)
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
        let found = dispatch!(self, p => D::attached_keys(p, keys).await?);
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
        self.apply_guarded(batch, ctx, guard, None).await
    }

    /// `apply_fenced`, opening `opening`'s exceptions in the same transaction: a webhook
    /// delivery's credit and the exception that holds it commit together, or neither does.
    pub async fn apply_opening(
        &self,
        batch: &[PlannedTransition],
        ctx: &ApplyContext,
        fence: Option<&Fence>,
        opening: &Opening<'_>,
    ) -> Result<Vec<ApplyOutcome>, StoreError> {
        let guard = fence.map_or(Guard::None, Guard::Lease);
        self.apply_guarded(batch, ctx, guard, Some(opening)).await
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
        self.apply_guarded(batch, ctx, Guard::Exception(resolve), None)
            .await
    }

    async fn apply_guarded(
        &self,
        batch: &[PlannedTransition],
        ctx: &ApplyContext,
        guard: Guard<'_>,
        opening: Option<&Opening<'_>>,
    ) -> Result<Vec<ApplyOutcome>, StoreError> {
        if batch.is_empty() {
            return Ok(Vec::new());
        }
        // A canonical order (by payment key, then order id) makes concurrent batches wait on
        // each other's unique-index entries in one direction only: no deadlock cycle.
        let order = canonical_order(batch);
        let sorted: Vec<PlannedTransition> = order.iter().map(|&i| batch[i].clone()).collect();
        let unsort = |outcomes: &[ApplyOutcome]| {
            let mut out = vec![ApplyOutcome::Duplicate; batch.len()];
            for (pos, &i) in order.iter().enumerate() {
                out[i] = outcomes[pos];
            }
            out
        };
        // The batch runs sorted: its `Opening` takes the sorted outcomes and hands the
        // caller's `rows` its own order.
        let rows =
            |sorted: &[ApplyOutcome]| opening.map_or(Vec::new(), |o| (o.rows)(&unsort(sorted)));
        let opens = opening.map(|o| Opening {
            by: o.by,
            rows: &rows,
        });
        let mut attempt = 0;
        loop {
            attempt += 1;
            let res = dispatch!(self, p => apply::apply_batch(p, &sorted, ctx, guard, opens.as_ref()).await);
            match res {
                Err(WriteError::Db(e)) if attempt < APPLY_ATTEMPTS && is_retryable(&e) => {
                    ctx.retries.count();
                    tracing::info!(attempt, error = %e, "Retrying a batch of transitions.");
                    let jitter = rand::random::<u64>() % (25 << attempt);
                    tokio::time::sleep(std::time::Duration::from_millis(10 + jitter)).await;
                }
                Err(WriteError::Fenced) => {
                    return Err(StoreError::LeaseLost {
                        provider: ctx.provider.clone(),
                    })
                }
                Err(WriteError::Taken) => {
                    let id = match guard {
                        Guard::Exception(r) => r.id,
                        _ => 0,
                    };
                    return Err(StoreError::ExceptionTaken { id });
                }
                Err(WriteError::Unchanged) => return Err(StoreError::Unchanged),
                Err(WriteError::Db(e)) => return Err(rows::db_error("apply transitions", e)),
                Err(WriteError::Miscounted {
                    what,
                    expected,
                    written,
                }) => {
                    return Err(StoreError::Invalid(format!(
                        "apply transitions: {what}: {written} rows written of {expected}; \
                         nothing applied"
                    )))
                }
                Ok(outcomes) => return Ok(unsort(&outcomes)),
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
            let (rows, last, fetched) =
                dispatch!(self, p => D::sweep_page(p, after, want, recent_final).await?);
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
        sweep::rekey(self, r).await
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
        held::held_page(self, after, limit, recent_since).await
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
        let res = dispatch!(self, p => {
            let sql = format!(
                "SELECT COUNT(CASE WHEN NOT l THEN 1 END), COUNT(CASE WHEN l THEN 1 END) FROM (SELECT \
                 EXISTS (SELECT 1 FROM payrecon_payments p WHERE p.order_id = o.id \
                 AND {} > {}) AS l FROM orders o WHERE {held}) h",
                D::cmp_time("p.block_time"),
                D::cmp_time("o.expires_at")
            );
            sqlx::query_as(&sql).fetch_one(rows::counted(p)).await
        });
        res.map_err(|e| rows::db_error("count the orders held", e))
    }

    /// Moves held payment `payment_id` to `r`'s new position, guarded like `rekey`.
    pub async fn rekey_held(&self, payment_id: i64, r: &Rekey) -> Result<RekeyOutcome, StoreError> {
        held::rekey_held(self, payment_id, r).await
    }

    /// Records the blocks of payments whose rows hold none, in one statement (`Rekey` with
    /// the old and new log index equal). Returns the rows written.
    pub async fn record_blocks(&self, rows: &[Rekey]) -> Result<u64, StoreError> {
        dispatch!(self, p => D::record_blocks(p, rows).await)
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
