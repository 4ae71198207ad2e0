//! The queries of `payrecon status` (on a read-only connection, see `readonly.rs`): a
//! handful of batched statements over the runs, findings, resends, webhook inbox and (when
//! the table exists) leases. Timestamps come back as RFC 3339 UTC text with milliseconds on
//! both backends.

use jiff::Timestamp;

use super::backend::dispatch;
use super::dialect::Dialect;
use super::rows::{counted, cutoff, db_error};
use super::{Store, StoreError};

/// Items listed per open-finding kind and for pending resends.
pub const STATUS_LIST_LIMIT: i64 = 50;

/// The tables `status` needs (from the migrations); the lease table is optional.
pub(super) const REQUIRED: [&str; 4] = [
    "payrecon_runs",
    "payrecon_findings",
    "payrecon_resends",
    "payrecon_webhook_events",
];
pub(super) const LEASES: &str = "payrecon_leases";
/// The event outbox (added by a later migration): read only when it exists.
pub(super) const EVENTS: &str = "payrecon_events";
/// What runs read of each provider list (docs/configuration.md, "Long notification lists"; a
/// later migration): read when it exists.
pub(super) const LIST_READS: &str = "payrecon_list_reads";
/// Exceptions (docs/reference.md §3): read when the table exists.
pub(super) const EXCEPTIONS: &str = "payrecon_exceptions";

from_row! {
    /// One `payrecon_runs` row as `status` shows it.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct RunStatusRow {
        pub id: String,
        pub trigger: String,
        pub started_at: String,
        pub finished_at: Option<String>,
        /// `running` | `ok` | `failed`.
        pub status: String,
        pub error: Option<String>,
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingResend {
    pub provider: String,
    pub notification_id: String,
    pub requested_at: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseRow {
    pub provider: String,
    pub holder: Option<String>,
    pub token: Option<i64>,
    pub expires_at: Option<String>,
}

/// Everything `status` reads, as stored.
#[derive(Debug, Clone, Default)]
pub struct StatusData {
    /// The most recently started run (it may still be running).
    pub last_run: Option<RunStatusRow>,
    /// The most recently started run that has finished.
    pub last_finished_run: Option<RunStatusRow>,
    /// Per asked provider: the most recently started run that included it (its
    /// `providers` names it, or is NULL: killed before it finished, or an older row).
    pub last_runs: Vec<(String, Option<RunStatusRow>)>,
    /// Per asked provider: when the last run in which it did not fail finished.
    pub last_success: Vec<(String, Option<String>)>,
    /// `(provider, kind, count)` of findings created at or after the gap cutoff.
    pub gaps: Vec<(String, String, i64)>,
    /// Open exceptions per kind, and the newest `STATUS_LIST_LIMIT` open ones (None when the
    /// table does not exist).
    pub exceptions: Option<(Vec<super::OpenExceptions>, Vec<super::ExceptionRow>)>,
    pub pending_resends: i64,
    pub resends: Vec<PendingResend>,
    pub inbox_unprocessed: i64,
    pub inbox_oldest: Option<String>,
    /// None when the lease table does not exist.
    pub leases: Option<Vec<LeaseRow>>,
    /// None when the event outbox does not exist.
    pub events: Option<super::EventCounts>,
    /// Per provider list: the last run's pages read and the last whole read (None when the
    /// table does not exist).
    pub list_reads: Option<Vec<super::ListReadRow>>,
}

/// The columns of a `RunStatusRow` on the alias `r`, times as text. The text columns take
/// the columns' names: an `ORDER BY` must name `r.started_at` to sort by the stored time.
fn run_cols<D: Dialect>() -> String {
    format!(
        "r.id, r.{}, {} AS started_at, {} AS finished_at, r.status, r.error",
        D::ident("trigger"),
        D::ts_text("r.started_at"),
        D::ts_text("r.finished_at")
    )
}

/// A run row of `read_runs`: which one it is (`last` or `finished`), and the run.
struct WhichRun {
    which: String,
    run: RunStatusRow,
}

impl<'r, R: sqlx::Row> sqlx::FromRow<'r, R> for WhichRun
where
    &'r str: sqlx::ColumnIndex<R>,
    RunStatusRow: sqlx::FromRow<'r, R>,
    String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    fn from_row(row: &'r R) -> Result<Self, sqlx::Error> {
        Ok(WhichRun {
            which: row.try_get("which")?,
            run: RunStatusRow::from_row(row)?,
        })
    }
}

/// Runs `$sql` (written with the dialect `D`'s spellings) with `$bind`s, decoding rows as `$t`.
macro_rules! fetch {
    ($store:expr, $t:ty, $sql:expr, $doing:expr $(, $bind:expr)*) => {{
        let r: Result<Vec<$t>, sqlx::Error> = dispatch!($store, p => {
            let sql: String = $sql;
            sqlx::query_as::<_, $t>(&sql)$(.bind($bind))*.fetch_all(counted(p)).await
        });
        r.map_err(|e| db_error($doing, e))?
    }};
}

impl Store {
    /// Reads what `status` shows: `providers` are the names to find the last success of,
    /// findings count towards the gaps from `gaps_since`, resends are pending when
    /// requested within `cooldown` before `now`.
    pub async fn status_data(
        &self,
        providers: &[String],
        gaps_since: Timestamp,
        now: Timestamp,
        cooldown: std::time::Duration,
    ) -> Result<StatusData, StoreError> {
        let tables = self.payrecon_tables().await?;
        if let Some(missing) = REQUIRED.iter().find(|t| !tables.iter().any(|n| n == *t)) {
            return Err(StoreError::Invalid(format!(
                "the database has no table {missing}: run `payrecon migrate` first"
            )));
        }
        let mut d = StatusData::default();
        self.read_runs(&mut d).await?;
        for name in providers {
            let run = self.last_run_of(name).await?;
            d.last_runs.push((name.clone(), run));
        }
        d.last_success = self.last_success(providers).await?;
        d.gaps = self.gaps_since(gaps_since).await?;
        if tables.iter().any(|t| t == EXCEPTIONS) {
            let filter = super::ExceptionFilter {
                status: Some("open".into()),
                limit: STATUS_LIST_LIMIT,
                ..Default::default()
            };
            d.exceptions = Some((
                self.open_exceptions().await?,
                self.list_exceptions(&filter).await?,
            ));
        }
        self.read_resends(&mut d, cutoff(now, cooldown)).await?;
        self.read_inbox(&mut d).await?;
        if tables.iter().any(|t| t == LEASES) {
            d.leases = Some(self.leases().await?);
        }
        if tables.iter().any(|t| t == EVENTS) {
            d.events = Some(self.event_counts().await?);
        }
        if tables.iter().any(|t| t == LIST_READS) {
            d.list_reads = Some(self.list_reads().await?);
        }
        Ok(d)
    }

    /// The last started run and the last finished one (one query).
    async fn read_runs(&self, d: &mut StatusData) -> Result<(), StoreError> {
        let rows = fetch!(
            self,
            WhichRun,
            {
                let cols = run_cols::<D>();
                format!(
                    "SELECT * FROM (SELECT 'last' AS which, {cols} FROM payrecon_runs r \
                       ORDER BY r.started_at DESC, r.id DESC LIMIT 1) AS l \
                     UNION ALL SELECT * FROM (SELECT 'finished' AS which, {cols} \
                       FROM payrecon_runs r WHERE r.finished_at IS NOT NULL \
                       ORDER BY r.started_at DESC, r.id DESC LIMIT 1) AS f"
                )
            },
            "read the last runs"
        );
        for WhichRun { which, run } in rows {
            match which.as_str() {
                "last" => d.last_run = Some(run),
                _ => d.last_finished_run = Some(run),
            }
        }
        Ok(())
    }

    /// The most recently started run that included `name` (one query).
    async fn last_run_of(&self, name: &str) -> Result<Option<RunStatusRow>, StoreError> {
        let tag = format!(",{name},");
        let rows = fetch!(
            self,
            RunStatusRow,
            format!(
                "SELECT {} FROM payrecon_runs r WHERE r.providers IS NULL OR {} > 0 \
                 ORDER BY r.started_at DESC, r.id DESC LIMIT 1",
                run_cols::<D>(),
                D::instr("r.providers", &D::p(1))
            ),
            "read a provider's last run",
            &tag
        );
        Ok(rows.into_iter().next())
    }

    /// Whether any run is on record, and when the last run that failed nowhere finished
    /// (`None`: none has): `serve` runs at start when that is longer ago than one schedule
    /// interval. One statement.
    pub async fn last_ok_run_finished(&self) -> Result<(bool, Option<Timestamp>), StoreError> {
        let rows = fetch!(
            self,
            (i64, Option<String>),
            format!(
                "SELECT {}, {} FROM payrecon_runs",
                D::int8("COUNT(*)"),
                D::ts_text(
                    "MAX(CASE WHEN status = 'ok' AND finished_at IS NOT NULL \
                     THEN finished_at END)"
                )
            ),
            "read the last successful run"
        );
        let (n, last) = rows.into_iter().next().unwrap_or((0, None));
        Ok((n > 0, last.and_then(|t| t.parse::<Timestamp>().ok())))
    }

    /// Per provider, when the last finished run in which it did not fail finished. A
    /// provider failed in a run when the run's `error` has a `"; "`-separated part starting
    /// with `"<name>: "` (one query, all providers).
    async fn last_success(
        &self,
        providers: &[String],
    ) -> Result<Vec<(String, Option<String>)>, StoreError> {
        Ok(fetch!(
            self,
            (String, Option<String>),
            {
                let error = "COALESCE(r.error, '')";
                format!(
                    // Newest first on `payrecon_runs_finished`: it stops at the first.
                    "SELECT p.name, (SELECT {} FROM payrecon_runs r \
                     WHERE r.finished_at IS NOT NULL \
                     AND (r.providers IS NULL OR {} > 0) \
                     AND (r.status = 'ok' OR (r.status = 'failed' \
                     AND {} <> 1 AND {} = 0)) ORDER BY r.finished_at DESC LIMIT 1) \
                     FROM {} ORDER BY p.n",
                    D::ts_text("r.finished_at"),
                    D::instr("r.providers", "',' || p.name || ','"),
                    D::instr(error, "p.name || ': '"),
                    D::instr(error, "'; ' || p.name || ': '"),
                    D::numbered_texts(1, "p")
                )
            },
            "read the last successful runs",
            D::texts(providers)
        ))
    }

    /// Findings per provider and kind created at or after `since` (one query).
    async fn gaps_since(&self, since: Timestamp) -> Result<Vec<(String, String, i64)>, StoreError> {
        Ok(fetch!(
            self,
            (String, String, i64),
            format!(
                "SELECT provider, kind, COUNT(*) FROM payrecon_findings WHERE created_at >= {} \
                 GROUP BY provider, kind ORDER BY provider, kind",
                D::ts(1)
            ),
            "count the recent gaps",
            D::ts_bind(since)
        ))
    }

    /// Resend requests made after `after`, newest first, with their count (one query).
    async fn read_resends(&self, d: &mut StatusData, after: Timestamp) -> Result<(), StoreError> {
        type T = (String, String, String, i64);
        let rows = fetch!(
            self,
            T,
            format!(
                "SELECT provider, {}, {}, COUNT(*) OVER () \
                 FROM payrecon_resends WHERE requested_at > {} \
                 ORDER BY requested_at DESC, provider, notification_id LIMIT {}",
                D::exact_text("notification_id"),
                D::ts_text("requested_at"),
                D::ts(1),
                D::p(2)
            ),
            "read the pending resends",
            D::ts_bind(after),
            STATUS_LIST_LIMIT
        );
        d.pending_resends = rows.first().map(|r| r.3).unwrap_or(0);
        d.resends = rows
            .into_iter()
            .map(
                |(provider, notification_id, requested_at, _)| PendingResend {
                    provider,
                    notification_id,
                    requested_at,
                },
            )
            .collect();
        Ok(())
    }

    /// Unprocessed webhook deliveries: how many, and the oldest one's `received_at`.
    async fn read_inbox(&self, d: &mut StatusData) -> Result<(), StoreError> {
        let rows = fetch!(
            self,
            (i64, Option<String>),
            format!(
                "SELECT COUNT(*), {} FROM payrecon_webhook_events WHERE processed_at IS NULL",
                D::ts_text("MIN(received_at)")
            ),
            "read the webhook inbox"
        );
        if let Some((n, oldest)) = rows.into_iter().next() {
            d.inbox_unprocessed = n;
            d.inbox_oldest = oldest;
        }
        Ok(())
    }
}
