//! The queries of `payrecon status` (on a read-only connection, see `readonly.rs`): a
//! handful of batched statements over the runs, findings, resends, webhook inbox and (when
//! the table exists) leases. Timestamps come back as RFC 3339 UTC text with milliseconds on
//! both backends.

use jiff::Timestamp;

use super::rows::{counted, cutoff, db_error, sqlite_ts};
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

/// A timestamp column as RFC 3339 UTC text with milliseconds (PostgreSQL).
pub(super) fn pg_ts(col: &str) -> String {
    format!("to_char({col} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')")
}

const RUN_COLS: &str = "id, \"trigger\", started_at, finished_at, status, error";

type RunTuple = (
    String,
    String,
    String,
    Option<String>,
    String,
    Option<String>,
);

fn run_row(t: RunTuple) -> RunStatusRow {
    RunStatusRow {
        id: t.0,
        trigger: t.1,
        started_at: t.2,
        finished_at: t.3,
        status: t.4,
        error: t.5,
    }
}

/// Runs `sql_lite` on SQLite or `sql_pg` on PostgreSQL, decoding rows as `$t`.
macro_rules! fetch {
    ($store:expr, $t:ty, $lite:expr, $pg:expr, $doing:expr $(, $bind:expr)*) => {{
        let r: Result<Vec<$t>, sqlx::Error> = match $store {
            Store::Sqlite(p) => sqlx::query_as::<_, $t>($lite)$(.bind($bind))*
                .fetch_all(counted(p)).await,
            Store::Postgres(p) => sqlx::query_as::<_, $t>($pg)$(.bind($bind))*
                .fetch_all(counted(p)).await,
        };
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
        let lite = format!(
            "SELECT * FROM (SELECT 'last', {RUN_COLS} FROM payrecon_runs \
               ORDER BY started_at DESC, id DESC LIMIT 1) \
             UNION ALL SELECT * FROM (SELECT 'finished', {RUN_COLS} FROM payrecon_runs \
               WHERE finished_at IS NOT NULL ORDER BY started_at DESC, id DESC LIMIT 1)"
        );
        let pg_cols = format!(
            "id, \"trigger\", {}, {}, status, error",
            pg_ts("started_at"),
            pg_ts("finished_at")
        );
        let pg = format!(
            "(SELECT 'last', {pg_cols} FROM payrecon_runs ORDER BY started_at DESC, id DESC \
               LIMIT 1) \
             UNION ALL (SELECT 'finished', {pg_cols} FROM payrecon_runs \
               WHERE finished_at IS NOT NULL ORDER BY started_at DESC, id DESC LIMIT 1)"
        );
        type T = (
            String,
            String,
            String,
            String,
            Option<String>,
            String,
            Option<String>,
        );
        let rows = fetch!(self, T, &lite, &pg, "read the last runs");
        for (which, id, trigger, started, finished, status, error) in rows {
            let row = run_row((id, trigger, started, finished, status, error));
            match which.as_str() {
                "last" => d.last_run = Some(row),
                _ => d.last_finished_run = Some(row),
            }
        }
        Ok(())
    }

    /// The most recently started run that included `name` (one query).
    async fn last_run_of(&self, name: &str) -> Result<Option<RunStatusRow>, StoreError> {
        let tag = format!(",{name},");
        let lite = format!(
            "SELECT {RUN_COLS} FROM payrecon_runs WHERE providers IS NULL \
             OR instr(providers, ?1) > 0 ORDER BY started_at DESC, id DESC LIMIT 1"
        );
        let pg = format!(
            "SELECT id, \"trigger\", {}, {}, status, error FROM payrecon_runs \
             WHERE providers IS NULL OR strpos(providers, $1) > 0 \
             ORDER BY started_at DESC, id DESC LIMIT 1",
            pg_ts("started_at"),
            pg_ts("finished_at")
        );
        let rows = fetch!(
            self,
            RunTuple,
            &lite,
            &pg,
            "read a provider's last run",
            &tag
        );
        Ok(rows.into_iter().next().map(run_row))
    }

    /// Per provider, when the last finished run in which it did not fail finished. A
    /// provider failed in a run when the run's `error` has a `"; "`-separated part starting
    /// with `"<name>: "` (one query, all providers).
    async fn last_success(
        &self,
        providers: &[String],
    ) -> Result<Vec<(String, Option<String>)>, StoreError> {
        let lite = "SELECT p.value, (SELECT MAX(r.finished_at) FROM payrecon_runs r \
             WHERE r.finished_at IS NOT NULL \
             AND (r.providers IS NULL OR instr(r.providers, ',' || p.value || ',') > 0) \
             AND (r.status = 'ok' OR (r.status = 'failed' \
             AND instr(COALESCE(r.error, ''), p.value || ': ') <> 1 \
             AND instr(COALESCE(r.error, ''), '; ' || p.value || ': ') = 0))) \
             FROM json_each($1) p ORDER BY p.key";
        let pg = format!(
            "SELECT p.name, (SELECT {} FROM payrecon_runs r \
             WHERE r.finished_at IS NOT NULL \
             AND (r.providers IS NULL OR strpos(r.providers, ',' || p.name || ',') > 0) \
             AND (r.status = 'ok' OR (r.status = 'failed' \
             AND strpos(COALESCE(r.error, ''), p.name || ': ') <> 1 \
             AND strpos(COALESCE(r.error, ''), '; ' || p.name || ': ') = 0))) \
             FROM UNNEST($1::text[]) WITH ORDINALITY AS p(name, n) ORDER BY p.n",
            pg_ts("MAX(r.finished_at)")
        );
        let names = serde_json::to_string(providers).unwrap_or_default();
        match self {
            Store::Sqlite(p) => {
                sqlx::query_as::<_, (String, Option<String>)>(lite)
                    .bind(names)
                    .fetch_all(counted(p))
                    .await
            }
            Store::Postgres(p) => {
                sqlx::query_as::<_, (String, Option<String>)>(&pg)
                    .bind(providers)
                    .fetch_all(counted(p))
                    .await
            }
        }
        .map_err(|e| db_error("read the last successful runs", e))
    }

    /// Findings per provider and kind created at or after `since` (one query).
    async fn gaps_since(&self, since: Timestamp) -> Result<Vec<(String, String, i64)>, StoreError> {
        const GROUP: &str = "GROUP BY provider, kind ORDER BY provider, kind";
        let lite = format!(
            "SELECT provider, kind, COUNT(*) FROM payrecon_findings WHERE created_at >= $1 {GROUP}"
        );
        let pg = format!(
            "SELECT provider, kind, COUNT(*) FROM payrecon_findings \
             WHERE created_at >= $1::timestamptz {GROUP}"
        );
        let bound = match self {
            Store::Sqlite(_) => sqlite_ts(since),
            Store::Postgres(_) => since.to_string(),
        };
        Ok(fetch!(
            self,
            (String, String, i64),
            &lite,
            &pg,
            "count the recent gaps",
            bound
        ))
    }

    /// Resend requests made after `after`, newest first, with their count (one query).
    async fn read_resends(&self, d: &mut StatusData, after: Timestamp) -> Result<(), StoreError> {
        const TAIL: &str = "ORDER BY requested_at DESC, provider, notification_id LIMIT $2";
        let lite = format!(
            "SELECT provider, notification_id, requested_at, COUNT(*) OVER () \
             FROM payrecon_resends WHERE requested_at > $1 {TAIL}"
        );
        let pg = format!(
            "SELECT provider, notification_id, {}, COUNT(*) OVER () \
             FROM payrecon_resends WHERE requested_at > $1::timestamptz {TAIL}",
            pg_ts("requested_at")
        );
        let bound = match self {
            Store::Sqlite(_) => sqlite_ts(after),
            Store::Postgres(_) => after.to_string(),
        };
        type T = (String, String, String, i64);
        let rows = fetch!(
            self,
            T,
            &lite,
            &pg,
            "read the pending resends",
            bound,
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
        const FROM: &str = "FROM payrecon_webhook_events WHERE processed_at IS NULL";
        let lite = format!("SELECT COUNT(*), MIN(received_at) {FROM}");
        let pg = format!("SELECT COUNT(*), {} {FROM}", pg_ts("MIN(received_at)"));
        let rows = fetch!(
            self,
            (i64, Option<String>),
            &lite,
            &pg,
            "read the webhook inbox"
        );
        if let Some((n, oldest)) = rows.into_iter().next() {
            d.inbox_unprocessed = n;
            d.inbox_oldest = oldest;
        }
        Ok(())
    }
}
