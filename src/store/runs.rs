//! Runs and what they leave behind: `payrecon_runs` rows, their findings (and the exceptions
//! the findings open or touch, in the same transaction), and the resend claims.

use jiff::Timestamp;

use super::backend::dispatch;
use super::rows;
use super::{FindingRow, RunRow, RunTotals, Store, StoreError};

/// Records a run's findings in one transaction, `Dialect::INSERT_ROWS` rows per multi-row
/// INSERT, and opens or touches their exceptions in the same transaction (README.md,
/// "Exceptions"): `$db` the dialect, `$pool` its pool.
macro_rules! insert_findings {
    ($db:ty, $pool:expr, $run_id:expr, $findings:expr) => {{
        use $crate::store::dialect::Dialect as _;
        use $crate::store::rows::{counted, db_error};
        let mut tx = counted($pool)
            .begin_with(<$db>::BEGIN_WRITE)
            .await
            .map_err(|e| db_error("record findings", e))?;
        for chunk in $findings.chunks(<$db>::INSERT_ROWS) {
            let mut qb = sqlx::QueryBuilder::<$db>::new(
                "INSERT INTO payrecon_findings (run_id, provider, kind, chain, tx_hash, \
                 log_index, order_ref, local_state, observed_state, action, detail) ",
            );
            qb.push_values(chunk, |mut b, f| {
                b.push_bind($run_id)
                    .push_bind(&f.provider)
                    .push_bind(&f.kind)
                    .push_bind(&f.chain)
                    .push_bind(&f.tx_hash)
                    .push_bind(f.log_index)
                    .push_bind(&f.order_ref)
                    .push_bind(&f.local_state)
                    .push_bind(&f.observed_state)
                    .push_bind(&f.action)
                    .push_bind(&f.detail);
            });
            qb.build()
                .execute(counted(&mut *tx))
                .await
                .map_err(|e| db_error("record findings", e))?;
        }
        <$db as $crate::store::exceptions::ExceptionSql>::upsert_exceptions(
            &mut tx,
            $run_id,
            $findings,
            &|_| None,
        )
        .await
        .map_err(|e| db_error("open or touch exceptions", e))?;
        counted(tx)
            .commit()
            .await
            .map_err(|e| db_error("record findings", e))
    }};
}

impl Store {
    /// Claims the right to request a resend: true (and recorded) when no request for this
    /// notification was made within `cooldown` before `now`. Atomic across processes.
    pub async fn claim_resend(
        &self,
        provider: &str,
        notification_id: &str,
        now: Timestamp,
        cooldown: std::time::Duration,
    ) -> Result<bool, StoreError> {
        let cutoff = rows::cutoff(now, cooldown);
        let claimed = dispatch!(self, p => {
            D::claim_resend(p, provider, notification_id, now, cutoff).await
        })
        .map_err(|e| rows::db_error("claim a resend", e))?;
        Ok(claimed)
    }

    pub async fn start_run(&self, run: &RunRow) -> Result<(), StoreError> {
        dispatch!(self, p => {
            let sql = format!(
                "INSERT INTO payrecon_runs (id, {}, started_at, {}, {}) \
                 VALUES ({}, {}, {}, {}, {})",
                D::ident("trigger"),
                D::ident("since"),
                D::ident("until"),
                D::p(1),
                D::p(2),
                D::ts(3),
                D::ts(4),
                D::ts(5)
            );
            sqlx::query(&sql)
                .bind(&run.id)
                .bind(&run.trigger)
                .bind(D::ts_bind(run.started_at))
                .bind(D::ts_bind(run.since))
                .bind(D::ts_bind(run.until))
                .execute(rows::counted(p))
                .await
                .map(|_| ())
        })
        .map_err(|e| rows::db_error("record the start of a run", e))?;
        Ok(())
    }

    pub async fn finish_run(
        &self,
        run_id: &str,
        finished_at: Timestamp,
        totals: &RunTotals,
    ) -> Result<(), StoreError> {
        let updated = dispatch!(self, p => {
            let sql = format!(
                "UPDATE payrecon_runs SET finished_at = {}, status = {}, checked = {}, \
                 gaps = {}, applied = {}, resends_requested = {}, error = {}, providers = {} \
                 WHERE id = {}",
                D::ts(1),
                D::p(2),
                D::p(3),
                D::p(4),
                D::p(5),
                D::p(6),
                D::p(7),
                D::p(8),
                D::p(9)
            );
            sqlx::query(&sql)
                .bind(D::ts_bind(finished_at))
                .bind(&totals.status)
                .bind(totals.checked)
                .bind(totals.gaps)
                .bind(totals.applied)
                .bind(totals.resends_requested)
                .bind(&totals.error)
                .bind(&totals.providers)
                .bind(run_id)
                .execute(rows::counted(p))
                .await
                .map(|r| r.rows_affected())
        })
        .map_err(|e| rows::db_error("record the end of a run", e))?;
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
        dispatch!(self, p => insert_findings!(D, p, run_id, findings))
    }
}

from_row! {
    /// A run as the console's runs page shows it: its window, outcome and totals.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct RunPageRow {
        pub id: String,
        pub trigger: String,
        /// Exact (the backend's precision): the keyset bound of the next page.
        pub started_at: String,
        pub finished_at: Option<String>,
        pub since: String,
        pub until: String,
        pub status: String,
        pub checked: i64,
        pub gaps: i64,
        pub applied: i64,
        pub resends_requested: i64,
        pub error: Option<String>,
    }
}

impl Store {
    /// The newest `limit` runs that started before `before` (`started_at`, `id` of the last
    /// row of the page before), newest first.
    pub async fn runs_page(
        &self,
        before: Option<(&str, &str)>,
        limit: i64,
    ) -> Result<Vec<RunPageRow>, StoreError> {
        dispatch!(self, p => {
            let keyset = match before {
                Some(_) => format!(
                    // A range on `payrecon_runs_started`, then the ties.
                    "WHERE r.started_at <= {} AND (r.started_at < {} OR r.id < {})",
                    D::ts(1),
                    D::ts(2),
                    D::p(3)
                ),
                None => String::new(),
            };
            let sql = format!(
                "SELECT r.id, r.{}, {} AS started_at, {} AS finished_at, {} AS since, \
                 {} AS {}, r.status, {} AS checked, {} AS gaps, {} AS applied, \
                 {} AS resends_requested, r.error FROM payrecon_runs r {keyset} \
                 ORDER BY r.started_at DESC, r.id DESC LIMIT {}",
                D::ident("trigger"),
                D::ts_text_exact("r.started_at"),
                D::ts_text("r.finished_at"),
                D::ts_text("r.since"),
                D::ts_text(&format!("r.{}", D::ident("until"))),
                D::ident("until"),
                D::int8("r.checked"),
                D::int8("r.gaps"),
                D::int8("r.applied"),
                D::int8("r.resends_requested"),
                D::p(if before.is_some() { 4 } else { 1 }),
            );
            let mut q = sqlx::query_as(&sql);
            if let Some((at, id)) = before {
                q = q.bind(at).bind(at).bind(id);
            }
            q.bind(limit).fetch_all(rows::counted(p)).await
        })
        .map_err(|e| rows::db_error("read the runs", e))
    }
}
