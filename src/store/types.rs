//! The store's plain types: what callers pass in and get back, with no SQL. A leaf: it
//! imports nothing of the store.

use jiff::Timestamp;
use serde::Serialize;

use crate::domain::{BlockRef, State, TxHash};

/// The exceptions a write batch opens (or touches) in its own transaction, made from its
/// outcomes: a webhook delivery's, which no run records later. `rows` is given one outcome per
/// transition, in the order of the batch as passed; `by` stands for a run id (`last_run_id`).
pub struct Opening<'a> {
    pub by: &'a str,
    pub rows: &'a (dyn Fn(&[ApplyOutcome]) -> Vec<FindingRow> + Sync),
}

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

/// Where the write path counts a transaction it runs again (a deadlock, a serialization
/// failure, a lock wait timeout, a busy database, a racing registration): the caller's
/// counter, shared by clones (the engine passes `payrecon_database_retries_total`), or none
/// (`Retries::default()`: a one-shot command, whose log says it all the same).
#[derive(Debug, Clone, Default)]
pub struct Retries(Option<prometheus_client::metrics::counter::Counter>);

impl Retries {
    /// Counts into `counter`.
    pub fn to(counter: &prometheus_client::metrics::counter::Counter) -> Retries {
        Retries(Some(counter.clone()))
    }

    /// One transaction about to run again.
    pub(crate) fn count(&self) {
        if let Some(c) = &self.0 {
            c.inc();
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
    /// Where a batch run again is counted.
    pub retries: Retries,
}

impl ApplyContext {
    /// An empty run id (a webhook outside any run) is stored as NULL.
    pub(crate) fn run_id_or_null(&self) -> Option<&str> {
        Some(self.run_id.as_str()).filter(|s| !s.is_empty())
    }
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
    /// The asset its amounts are in, where known (the ledger's spelling: `native` or a
    /// contract): the text report shows them in tokens. Not a column, not in the JSON report.
    #[serde(skip)]
    pub asset: Option<String>,
    /// The deposit address a balance finding is about (`balance_mismatch`): its exception's
    /// problem is one per address and asset. Not a column, not in the JSON report.
    #[serde(skip)]
    pub address: Option<String>,
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

/// A payment the chain re-included elsewhere: its new position, and the values the row must
/// still hold for the change to be made (the row as the sweep read it).
#[derive(Debug, Clone)]
pub struct Rekey {
    pub order_id: i64,
    pub chain: String,
    pub tx_hash: TxHash,
    pub old_log_index: i64,
    /// The block hash the ledger held; `None`: the row had none (NULL or empty).
    pub old_block_hash: Option<String>,
    pub new_log_index: i64,
    pub new_block: BlockRef,
}

/// What one re-key statement did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RekeyOutcome {
    /// The key columns now hold the new position.
    Rekeyed,
    /// The row no longer holds the old values (someone changed it since it was read).
    Changed,
    /// Another row already holds the new payment key: nothing written.
    Collision,
}

/// A lease held: what a write batch presents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fence {
    pub provider: String,
    pub holder: String,
    pub token: i64,
}

/// An event claimed for one delivery attempt.
#[derive(Debug, Clone)]
pub struct ClaimedEvent {
    pub id: String,
    pub order_id: i64,
    pub body: String,
    /// Attempts made before this one.
    pub attempts: i64,
}

/// What one attempt came to.
#[derive(Debug, Clone)]
pub enum Attempt {
    /// A 2xx within the timeout.
    Delivered { status: u16 },
    /// Failed; the next attempt is at `next`.
    Retry {
        status: Option<u16>,
        error: String,
        next: Timestamp,
    },
    /// Failed after the last delay of the schedule: kept as dead until replayed.
    Dead { status: Option<u16>, error: String },
}

/// One row of `payrecon events`.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, utoipa::ToSchema)]
pub struct EventRow {
    /// The outbox's order (the keyset of the console's events pages); not shown.
    #[serde(skip)]
    pub seq: i64,
    pub id: String,
    pub order_ref: Option<String>,
    pub order_id: i64,
    #[serde(rename = "type")]
    pub kind: String,
    /// `pending` | `delivered` | `dead`.
    pub status: String,
    pub attempts: i64,
    pub created_at: String,
    pub next_attempt_at: Option<String>,
    pub delivered_at: Option<String>,
    pub dead_at: Option<String>,
    pub last_status: Option<i64>,
    pub last_error: Option<String>,
}

/// Filters of `payrecon events` (and which events `replay` takes).
#[derive(Debug, Clone, Default)]
pub struct EventFilter {
    /// `pending` | `delivered` | `dead`.
    pub status: Option<String>,
    pub order_ref: Option<String>,
    pub id: Option<String>,
    /// Events written at or after this time.
    pub since: Option<Timestamp>,
    /// Keyset paging: only events before this one in the outbox's order.
    pub before_seq: Option<i64>,
    pub limit: i64,
}

/// Pending and dead counts, and the oldest pending event's creation time.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct EventCounts {
    pub pending: i64,
    pub dead: i64,
    pub oldest_pending: Option<String>,
}

/// One stored delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredDelivery {
    pub id: i64,
    pub provider: String,
    pub event_id: String,
    /// The raw body, exactly as received.
    pub body: String,
    /// As stored: milliseconds on SQLite, microseconds on PostgreSQL.
    pub received_at: Timestamp,
}

from_row! {
    /// One list's row, as `status` shows it (timestamps RFC 3339 UTC with milliseconds).
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct ListReadRow {
        pub provider: String,
        /// '' for a list of every chain.
        pub chain: String,
        /// `all` | `failed`.
        pub list: String,
        pub pages_read: i64,
        pub pages_total: i64,
        pub read_at: String => "read_at_text",
        pub last_full_at: Option<String> => "last_full_at_text",
    }
}

/// What a run read of one list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListRead<'a> {
    pub provider: &'a str,
    pub chain: &'a str,
    pub list: &'a str,
    pub pages_read: u64,
    pub pages_total: u64,
    pub at: Timestamp,
    /// Every record was read.
    pub whole: bool,
}

/// The kinds a person settles (the other gap kinds payrecon fixes itself).
pub const EXCEPTION_KINDS: [&str; 6] = [
    "amount_mismatch",
    "late_payment",
    "unknown_payment",
    "reorged",
    "unexpected_outflow",
    "balance_mismatch",
];

/// A payment the run saw at final depth, in this block: a `reorged` exception of its
/// transaction is cleared when the ledger holds it there (README.md, "Exceptions": final
/// again in its new block).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FinalSeen {
    pub chain: String,
    pub tx_hash: String,
    pub block_hash: String,
}

/// One row of `payrecon exceptions`.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, utoipa::ToSchema)]
pub struct ExceptionRow {
    pub id: i64,
    pub kind: String,
    pub order_id: Option<i64>,
    pub order_ref: Option<String>,
    pub chain: String,
    pub tx_hash: Option<String>,
    pub log_index: Option<i64>,
    pub amount: Option<String>,
    pub detail: String,
    pub status: String,
    pub first_seen_at: String,
    pub last_seen_at: String,
    pub seen_count: i64,
    pub resolved_at: Option<String>,
    pub resolved_by: Option<String>,
    pub resolution: Option<String>,
    pub note: Option<String>,
    /// Its order's asset (`None` for a payment to no order): what the text output shows its
    /// amounts in. Not in the JSON (docs/reference.md keeps base units there).
    #[serde(skip)]
    pub asset: Option<String>,
}

/// Filters of `payrecon exceptions`.
#[derive(Debug, Clone, Default)]
pub struct ExceptionFilter {
    /// `open` | `resolved`; `None`: all.
    pub status: Option<String>,
    pub kind: Option<String>,
    pub order_ref: Option<String>,
    pub id: Option<i64>,
    /// Keyset paging: only ids below this (the last id of the page before).
    pub before: Option<i64>,
    /// The console's search box: an order ref, a transaction hash or an order's `pay_to`,
    /// matched exactly.
    pub search: Option<String>,
    /// The console's age filter: only those first seen at or before this time.
    pub first_seen_before: Option<Timestamp>,
    pub limit: i64,
}

/// Open exceptions of one kind: how many, and when the oldest was first seen.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct OpenExceptions {
    pub kind: String,
    pub open: i64,
    pub oldest_first_seen_at: Option<String>,
    #[serde(skip)]
    pub oldest: Option<Timestamp>,
}

/// An operator's decision on one exception: the claim written with it.
#[derive(Debug, Clone)]
pub struct Resolve {
    pub id: i64,
    /// `accepted` | `attached` | `dismissed`.
    pub resolution: &'static str,
    pub by: String,
    pub note: String,
    /// The order's id and `amount_paid` as the decision read them: checked under the
    /// decision's lock, so that a payment credited meanwhile fails it (`None`: no check).
    pub order_paid: Option<(i64, Option<String>)>,
}
