//! A run: for each provider and chain, pages of records -> chain resolution -> batched ledger
//! lookup -> the pure plan -> apply -> resend -> findings; then the chain sweep. Owns the
//! run row, the report and the metrics of a run.

mod batch;
mod error;
mod lease;
mod lists;
pub mod operator;
mod part;
mod resolve;
mod retry_window;
mod seen;
mod simulate;
mod sweep;
mod webhooks;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use futures::future::join_all;
use jiff::Timestamp;
use tracing::Instrument as _;

use crate::chain::ChainClient;
use crate::config::ReconcileConfig;
use crate::domain::ChainHead;
use crate::metrics::{Metrics, ProviderL, RunL, RunOutcome};
use crate::report::{FindingOut, Report, Totals, MAX_FINDINGS};
use crate::secret::Secret;
use crate::store::{Fence, RunRow, RunTotals, Source, Store, StoreError};

use crate::providers::Provider;
pub use batch::PartTally;
pub use error::PartError;
pub use part::Part;
pub use webhooks::InboxTally;

pub struct ProviderEntry {
    pub provider: Arc<Provider>,
    pub chains: Vec<String>,
    /// How long the provider keeps retrying a notification on its own: no resend before.
    pub retry_window: std::time::Duration,
}

/// What started a run (`payrecon_runs.trigger`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    Schedule,
    Cli,
}

#[derive(Debug, Clone)]
pub struct RunOptions {
    pub since: Timestamp,
    pub until: Timestamp,
    /// Only these providers (empty = all).
    pub providers: Vec<String>,
    pub dry_run: bool,
    pub no_resend: bool,
    pub trigger: Trigger,
    /// Show a progress bar on stderr.
    pub progress: bool,
}

impl RunOptions {
    /// A run over `[since, until]` as `payrecon run` starts one with no other flags: every
    /// provider, writes and resends on, no progress bar.
    pub fn window(since: Timestamp, until: Timestamp) -> RunOptions {
        RunOptions {
            since,
            until,
            providers: Vec::new(),
            dry_run: false,
            no_resend: false,
            trigger: Trigger::Cli,
            progress: false,
        }
    }

    /// `window` over the `lookback` before `now` (from the epoch when it reaches past it).
    pub fn last(lookback: jiff::SignedDuration, now: Timestamp) -> RunOptions {
        let since = now.checked_sub(lookback).unwrap_or(Timestamp::UNIX_EPOCH);
        RunOptions::window(since, now)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("{0}")]
    Store(#[from] StoreError),
    #[error("unknown provider {0:?} (not in the configuration)")]
    UnknownProvider(String),
}

pub struct Engine {
    pub store: Store,
    pub chains: BTreeMap<String, Arc<ChainClient>>,
    pub providers: Vec<ProviderEntry>,
    pub metrics: Arc<Metrics>,
    pub settings: ReconcileConfig,
    /// The underpaid tolerances a view is judged by (docs/configuration.md, "Amounts").
    pub amounts: crate::domain::AmountPolicy,
    /// Every configured secret, to scrub from error text that reaches reports and logs.
    pub secrets: Vec<Secret>,
    /// This process's name as a lease holder (host, pid, a random suffix).
    pub instance: String,
    /// Events are on (`[events] url`): every transition applied writes its event, and a
    /// committed batch wakes the delivery loop through this.
    pub events_wake: Option<Arc<tokio::sync::Notify>>,
}

/// Per-run context shared by the stages.
pub(crate) struct RunCtx {
    pub run_id: String,
    /// When the run started (the sweep rechecks final rows made final before it).
    pub started: Timestamp,
    pub since: Timestamp,
    pub until: Timestamp,
    pub dry_run: bool,
    /// Write transitions (not a dry run and `reconcile.apply`).
    pub apply: bool,
    /// Request resends (not a dry run, no `--no-resend`, `reconcile.resend`).
    pub resend: bool,
    pub heads: BTreeMap<String, Result<ChainHead, String>>,
    pub progress: Option<indicatif::ProgressBar>,
    /// `reconcile` for runs, `webhook` for deliveries (audit rows; no findings are recorded
    /// for deliveries: they are the webhook path working, not gaps).
    pub source: Source,
    /// Payments a provider's part read on chain in this run at the key and block its ledger
    /// row holds (fingerprints, `placed_fingerprint`): the sweep does not read their receipts
    /// again (a receipt at most once per run).
    pub placed: std::sync::Mutex<seen::SeenSet>,
    /// Transactions of open `reorged` exceptions (read when the run starts), and where this
    /// run saw them at final depth: their exceptions clear when the ledger holds them there.
    pub exceptions: RunExceptions,
}

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
    /// `text` with every configured secret scrubbed: what reaches a report or a log.
    pub fn redact(&self, text: impl std::fmt::Display) -> String {
        let refs: Vec<&Secret> = self.secrets.iter().collect();
        crate::secret::redact(&text.to_string(), &refs)
    }

    /// Fails `acc`'s part with `err`, redacted (the one way an error reaches a report).
    pub(crate) fn fail(&self, acc: &mut PartTally, err: impl std::fmt::Display) {
        acc.fail(self.redact(err));
    }

    /// One reconciliation pass. Fails only when the run cannot start (database); a provider
    /// or chain that fails is reported as failed in the report, and the others still run.
    pub async fn run(&self, opts: &RunOptions) -> Result<Report, EngineError> {
        for p in &opts.providers {
            if !self.providers.iter().any(|e| e.provider.name() == p) {
                return Err(EngineError::UnknownProvider(p.clone()));
            }
        }
        let run_id = uuid::Uuid::new_v4().to_string();
        // Every log line of the run carries its id (JSON logs: the `span` fields).
        let span = tracing::info_span!("run", run_id = %run_id);
        self.run_with_id(opts, run_id).instrument(span).await
    }

    async fn run_with_id(&self, opts: &RunOptions, run_id: String) -> Result<Report, EngineError> {
        let started = Timestamp::now();
        if !opts.dry_run {
            let trigger = match opts.trigger {
                Trigger::Schedule => "schedule",
                Trigger::Cli => "cli",
            };
            self.store
                .start_run(&RunRow {
                    id: run_id.clone(),
                    trigger: trigger.into(),
                    started_at: started,
                    since: opts.since,
                    until: opts.until,
                })
                .await?;
        }
        let selected: Vec<&ProviderEntry> = self
            .providers
            .iter()
            .filter(|e| {
                opts.providers.is_empty() || opts.providers.iter().any(|p| p == e.provider.name())
            })
            .collect();
        let ctx = RunCtx {
            run_id: run_id.clone(),
            started,
            since: opts.since,
            until: opts.until,
            dry_run: opts.dry_run,
            apply: !opts.dry_run && self.settings.apply,
            resend: !opts.dry_run && !opts.no_resend && self.settings.resend,
            heads: self.read_heads().await,
            progress: opts.progress.then(progress_bar),
            source: Source::Reconcile,
            placed: Default::default(),
            exceptions: self.run_exceptions(opts.dry_run).await,
        };
        tracing::info!(run_id = %run_id, since = %opts.since, until = %opts.until, dry_run = opts.dry_run, "Run started.");
        // Deliveries stored but not applied (a process stopped in between, a chain that could
        // not be read) go first, through the same apply path.
        if !opts.dry_run {
            if let Err(e) = self.drain_webhook_inbox().await {
                tracing::warn!(error = %self.redact(&e), "The webhook inbox could not be read; its deliveries wait for the next run.");
            }
        }

        // Scheduled runs take a lease per provider (several instances on one database).
        let leased = opts.trigger == Trigger::Schedule && !opts.dry_run;
        let parts = selected.iter().map(|e| {
            self.under_lease(leased, e.provider.name(), |fence| {
                self.timed(&ctx, e, fence)
            })
        });
        let mut accs: Vec<PartTally> = join_all(parts).await.into_iter().flatten().collect();
        // The chain sweep runs when every provider is selected (a --provider run is scoped).
        if opts.providers.is_empty() {
            let sweep = self.under_lease(leased, Part::Sweep.name(), |fence| async {
                let t0 = Instant::now();
                let span = tracing::info_span!("provider", provider = Part::Sweep.name());
                let mut acc = self.sweep(&ctx, fence).instrument(span).await;
                acc.elapsed = t0.elapsed();
                acc
            });
            accs.extend(sweep.await);
        }
        if let Some(pb) = &ctx.progress {
            pb.finish_and_clear();
        }
        let finished = Timestamp::now();
        let report = self.finish(&ctx, opts, accs, started, finished).await?;
        Ok(report)
    }

    async fn timed(&self, ctx: &RunCtx, e: &ProviderEntry, fence: Option<Fence>) -> PartTally {
        let t0 = Instant::now();
        let span = tracing::info_span!("provider", provider = %e.provider.name());
        let mut acc = self.run_provider(ctx, e, fence).instrument(span).await;
        acc.elapsed = t0.elapsed();
        acc
    }

    async fn read_heads(&self) -> BTreeMap<String, Result<ChainHead, String>> {
        let reads = self.chains.iter().map(|(name, c)| async move {
            let r = c.head().await.map_err(|e| self.redact(&e));
            (name.clone(), r)
        });
        let heads: BTreeMap<_, _> = join_all(reads).await.into_iter().collect();
        for (name, h) in &heads {
            match h {
                Ok(h) => {
                    let _ = self
                        .metrics
                        .chain_head
                        .get_or_create(&crate::metrics::ChainL {
                            chain: name.clone(),
                        })
                        .set(h.number as i64);
                }
                Err(e) => {
                    tracing::error!(chain = %name, error = %e, "Reading the chain head failed.")
                }
            }
        }
        heads
    }

    async fn finish(
        &self,
        ctx: &RunCtx,
        opts: &RunOptions,
        accs: Vec<PartTally>,
        started: Timestamp,
        finished: Timestamp,
    ) -> Result<Report, EngineError> {
        let mut totals = Totals::default();
        let mut findings: Vec<FindingOut> = Vec::new();
        let mut truncated = false;
        let mut providers = Vec::new();
        for acc in accs {
            self.record_metrics(&acc, finished);
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
            self.settle_exceptions(ctx, finished).await;
        }
        if !opts.dry_run {
            let run_totals = RunTotals {
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
                        .collect::<Vec<_>>()
                        .join(",")
                )),
            };
            self.store
                .finish_run(&ctx.run_id, finished, &run_totals)
                .await?;
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
    async fn run_exceptions(&self, dry_run: bool) -> RunExceptions {
        let mut out = RunExceptions::default();
        if dry_run {
            return out;
        }
        let filter = crate::store::ExceptionFilter {
            status: Some("open".into()),
            kind: Some("reorged".into()),
            limit: 100_000,
            ..Default::default()
        };
        match self.store.list_exceptions(&filter).await {
            Ok(rows) => {
                out.reorged = rows
                    .into_iter()
                    .filter_map(|r| r.tx_hash.map(|t| (r.chain, t)))
                    .collect()
            }
            Err(e) => {
                tracing::warn!(error = %self.redact(&e), "Could not read the open reorged exceptions; they are cleared by a later run.")
            }
        }
        out
    }

    /// Clears the exceptions whose condition this run found gone, then sets the exception
    /// gauges. A failure is logged: the next run clears them.
    async fn settle_exceptions(&self, ctx: &RunCtx, now: Timestamp) {
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
            Err(e) => {
                tracing::warn!(error = %self.redact(&e), "Could not open the exceptions of held orders; the next run does.")
            }
        }
        match self.store.clear_exceptions(&finals, now).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(cleared = n, "Exceptions cleared: their condition is gone."),
            Err(e) => {
                tracing::warn!(error = %self.redact(&e), "Could not clear exceptions; the next run does.")
            }
        }
        match self.store.open_exceptions().await {
            Ok(open) => self.metrics.set_exceptions(&open, now),
            Err(e) => tracing::warn!(error = %self.redact(&e), "Could not count open exceptions."),
        }
    }

    fn record_metrics(&self, acc: &PartTally, finished: Timestamp) {
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
        let ratio = if acc.report.checked == 0 {
            0.0
        } else {
            acc.report.gaps.total() as f64 / acc.report.checked as f64
        };
        self.metrics.gap_ratio.get_or_create(&pl).set(ratio);
    }
}

fn progress_bar() -> indicatif::ProgressBar {
    let pb = indicatif::ProgressBar::new_spinner();
    pb.set_draw_target(indicatif::ProgressDrawTarget::stderr());
    pb.set_style(
        indicatif::ProgressStyle::with_template("{spinner} {elapsed} {pos} records {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
    );
    pb.enable_steady_tick(std::time::Duration::from_millis(200));
    pb
}
