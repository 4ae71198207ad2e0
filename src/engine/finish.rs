//! The end of a run: totals and the report, the run's row, the exceptions it opens, touches
//! and clears, and its metrics.

use jiff::Timestamp;

use super::{Engine, EngineError, PartTally, RunCtx, RunOptions};
use crate::metrics::{ProviderL, RunL, RunOutcome};
use crate::report::{FindingOut, ProviderReport, Report, Totals, MAX_FINDINGS};
use crate::store::RunTotals;

/// What a run tracks for its exceptions (README.md, "Exceptions").
#[derive(Default)]
pub(crate) struct RunExceptions {
    pub reorged: std::collections::HashSet<(String, String)>,
    pub finals: std::sync::Mutex<std::collections::BTreeSet<crate::store::FinalSeen>>,
}

impl RunExceptions {
    /// Notes the transfers of `observations` at final depth whose transaction has an open
    /// `reorged` exception.
    pub(crate) fn observe(&self, observations: &[crate::domain::Observation]) {
        if self.reorged.is_empty() {
            return;
        }
        for o in observations {
            let crate::domain::ChainVerdict::Transfer(t) = &o.verdict else {
                continue;
            };
            let tx = t.key.tx_hash.as_str().to_string();
            if t.state == crate::domain::State::Final
                && self.reorged.contains(&(t.key.chain.clone(), tx.clone()))
            {
                if let Ok(mut f) = self.finals.lock() {
                    f.insert(crate::store::FinalSeen {
                        chain: t.key.chain.clone(),
                        tx_hash: tx,
                        block_hash: t.block.hash.clone(),
                    });
                }
            }
        }
    }
}

impl Engine {
    pub(super) async fn finish(
        &self,
        ctx: &RunCtx,
        opts: &RunOptions,
        mut accs: Vec<PartTally>,
        mut steps: PartTally,
        started: Timestamp,
        finished: Timestamp,
    ) -> Result<Report, EngineError> {
        if !opts.dry_run {
            for e in self.settle_exceptions(ctx, finished).await {
                self.fail(&mut steps, e);
            }
            // The run's own steps: counted every run that has them, reported when they failed.
            self.record_metrics(&steps, finished);
            if steps.report.failed() {
                accs.push(steps);
            }
        }
        let mut totals = Totals::default();
        let mut findings: Vec<FindingOut> = Vec::new();
        let mut truncated = false;
        let mut providers = Vec::new();
        for acc in accs {
            if acc.report.provider != super::Part::Run.name() {
                self.record_metrics(&acc, finished);
            }
            totals.checked += acc.report.checked;
            totals.gaps += acc.report.gaps.total();
            totals.applied += acc.report.applied;
            totals.resends_requested += acc.report.resends.requested;
            truncated |= acc.truncated;
            for f in acc.findings {
                if findings.len() < MAX_FINDINGS {
                    findings.push(f);
                } else {
                    truncated = true;
                }
            }
            providers.push(acc.report);
        }
        let errors: Vec<String> = providers
            .iter()
            .filter_map(|p| p.error.as_ref().map(|e| format!("{}: {e}", p.provider)))
            .collect();
        let failed = !errors.is_empty();
        if !opts.dry_run {
            let row = run_row(&totals, &providers, &errors);
            self.store.finish_run(&ctx.run_id, finished, &row).await?;
        }
        tracing::info!(
            run_id = %ctx.run_id, checked = totals.checked, gaps = totals.gaps,
            applied = totals.applied, failed, "Run finished."
        );
        Ok(Report {
            run_id: ctx.run_id.clone(),
            started_at: started.to_string(),
            finished_at: finished.to_string(),
            since: opts.since.to_string(),
            until: opts.until.to_string(),
            dry_run: opts.dry_run,
            providers,
            totals,
            findings,
            findings_truncated: truncated,
        })
    }

    /// The open `reorged` exceptions' transactions, for `RunExceptions::observe` (none for a
    /// dry run, which records no exceptions).
    pub(super) async fn run_exceptions(
        &self,
        dry_run: bool,
    ) -> Result<RunExceptions, crate::store::StoreError> {
        let mut out = RunExceptions::default();
        if dry_run {
            return Ok(out);
        }
        let filter = crate::store::ExceptionFilter {
            status: Some("open".into()),
            kind: Some("reorged".into()),
            limit: 100_000,
            ..Default::default()
        };
        let rows = self.store.list_exceptions(&filter).await?;
        out.reorged = rows
            .into_iter()
            .filter_map(|r| r.tx_hash.map(|t| (r.chain, t)))
            .collect();
        Ok(out)
    }

    /// Opens the held orders' exceptions, clears those whose condition this run found gone,
    /// then sets the exception gauges. Returns what failed (each fails the run; the next run
    /// does what this one could not).
    pub(super) async fn settle_exceptions(&self, ctx: &RunCtx, now: Timestamp) -> Vec<String> {
        let mut failed = Vec::new();
        let finals: Vec<crate::store::FinalSeen> = ctx
            .exceptions
            .finals
            .lock()
            .map(|f| f.iter().cloned().collect())
            .unwrap_or_default();
        let accept_late = self.amounts.accept_late;
        match self
            .store
            .open_held_exceptions(&ctx.run_id, now, accept_late)
            .await
        {
            Ok(0) => {}
            Ok(n) => tracing::info!(opened = n, "Exceptions opened for held orders."),
            Err(e) => failed.push(format!("exceptions: opening those of held orders: {e}")),
        }
        match self.store.clear_exceptions(&finals, now).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(cleared = n, "Exceptions cleared: their condition is gone."),
            Err(e) => failed.push(format!("exceptions: clearing: {e}")),
        }
        // The gauges, as `serve` reads them at start.
        if let Err(e) = self.refresh_gauges().await {
            failed.push(format!("counting the open exceptions and held orders: {e}"));
        }
        failed
    }

    /// The gauges of what the database holds (orders held per reason, open exceptions per
    /// kind and the oldest), read from it: two statements, never one per order. `serve` reads
    /// them at start and after each webhook batch; a run sets them as it goes. A restart never
    /// shows 0 for what is there.
    pub async fn refresh_gauges(&self) -> Result<(), crate::store::StoreError> {
        let (underpaid, late) = self.store.count_held().await?;
        self.metrics.set_held(underpaid, late);
        let open = self.store.open_exceptions().await?;
        self.metrics.set_exceptions(&open, Timestamp::now());
        self.refresh_balance_gauges().await
    }

    /// The balance gauges of the configured chains, from `payrecon_balances`.
    pub(super) async fn refresh_balance_gauges(&self) -> Result<(), crate::store::StoreError> {
        let mut gauges = self.store.balance_gauges().await?;
        gauges.retain(|g| self.chains.contains_key(&g.chain));
        self.metrics.set_balances(&gauges);
        Ok(())
    }

    pub(super) fn record_metrics(&self, acc: &PartTally, finished: Timestamp) {
        let provider = acc.report.provider.clone();
        let pl = ProviderL {
            provider: provider.clone(),
        };
        let outcome = if acc.report.failed() {
            RunOutcome::failed
        } else {
            RunOutcome::ok
        };
        self.metrics
            .runs
            .get_or_create(&RunL {
                provider: provider.clone(),
                outcome,
            })
            .inc();
        self.metrics
            .run_duration
            .get_or_create(&pl)
            .observe(acc.elapsed.as_secs_f64());
        if !acc.report.failed() {
            self.metrics
                .last_success
                .get_or_create(&pl)
                .set(finished.as_millisecond() as f64 / 1000.0);
        }
        if provider == super::Part::Run.name() {
            return; // checks nothing: no gap ratio
        }
        let ratio = if acc.report.checked == 0 {
            0.0
        } else {
            acc.report.gaps.total() as f64 / acc.report.checked as f64
        };
        self.metrics.gap_ratio.get_or_create(&pl).set(ratio);
    }
}

/// The run's row at its end: its totals, its errors, and the parts it ran. The run's own steps
/// ran (not a dry run): `run` is named whether or not it failed, so that `status` shows its
/// last outcome.
fn run_row(totals: &Totals, providers: &[ProviderReport], errors: &[String]) -> RunTotals {
    let failed = !errors.is_empty();
    RunTotals {
        status: if failed { "failed" } else { "ok" }.into(),
        checked: totals.checked as i64,
        gaps: totals.gaps as i64,
        applied: totals.applied as i64,
        resends_requested: totals.resends_requested as i64,
        error: failed.then(|| errors.join("; ")),
        providers: Some(format!(
            ",{},",
            providers
                .iter()
                .map(|p| p.provider.as_str())
                .filter(|p| *p != super::Part::Run.name())
                .chain([super::Part::Run.name()])
                .collect::<Vec<_>>()
                .join(",")
        )),
    }
}
