//! A run: for each provider and chain, pages of records -> chain resolution -> batched ledger
//! lookup -> the pure plan -> apply -> resend -> findings; then the chain sweep. Owns the
//! run row, the report and the metrics of a run.

mod balances;
mod batch;
mod error;
mod finish;
mod lease;
mod lists;
pub mod operator;
mod part;
mod resend;
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
use crate::metrics::Metrics;
use crate::report::Report;
use crate::secret::Secret;
use crate::store::{Fence, RunRow, Source, Store, StoreError};

use crate::providers::Provider;
pub use balances::BALANCES;
pub use error::PartError;
use finish::RunExceptions;
pub use part::Part;
pub use part::PartTally;
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
    /// A backfill (`run --since`): Solana's deposit scan reads the whole window rather than
    /// on from its cursors (`payrecon_scan_cursors`), and moves them on.
    pub backfill: bool,
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
            backfill: false,
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

/// Why a chain's head could not be read this run (the client's error, secrets masked):
/// every part that needs the chain fails with it.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct HeadUnread(pub String);

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
    /// Solana's deposit scan stops at each account's cursor (a run that is not a backfill).
    pub cursors: bool,
    pub heads: BTreeMap<String, Result<ChainHead, HeadUnread>>,
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

impl Engine {
    /// `text` with every configured secret scrubbed: what reaches a report or a log.
    pub fn redact(&self, text: impl std::fmt::Display) -> String {
        crate::secret::redact_all(&text.to_string(), &self.secrets)
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
            self.record_start(opts, &run_id, started).await?;
        }
        let selected: Vec<&ProviderEntry> = self
            .providers
            .iter()
            .filter(|e| {
                opts.providers.is_empty() || opts.providers.iter().any(|p| p == e.provider.name())
            })
            .collect();
        // A step of the run's own that fails (the reads and the inbox here, the exceptions at
        // its end) fails the run: the `run` entry of the report.
        let mut steps = PartTally::new(Part::Run.name(), Part::Run.name());
        let exceptions = match self.run_exceptions(opts.dry_run).await {
            Ok(x) => x,
            Err(e) => {
                self.fail(
                    &mut steps,
                    format!("exceptions: reading the open reorged ones: {e}"),
                );
                Default::default()
            }
        };
        let ctx = RunCtx {
            run_id: run_id.clone(),
            started,
            since: opts.since,
            until: opts.until,
            dry_run: opts.dry_run,
            apply: !opts.dry_run && self.settings.apply,
            resend: !opts.dry_run && !opts.no_resend && self.settings.resend,
            cursors: !opts.backfill,
            heads: self.read_heads().await,
            progress: opts.progress.then(progress_bar),
            source: Source::Reconcile,
            placed: Default::default(),
            exceptions,
        };
        tracing::info!(run_id = %run_id, since = %opts.since, until = %opts.until, dry_run = opts.dry_run, "Run started.");
        // Deliveries stored but not applied (a process stopped in between, a chain that could
        // not be read) go first, through the same apply path.
        if !opts.dry_run {
            self.inbox_step(&mut steps).await;
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
        let report = self
            .finish(&ctx, opts, accs, steps, started, finished)
            .await?;
        Ok(report)
    }

    /// The run's row in `payrecon_runs`, before any work.
    async fn record_start(
        &self,
        opts: &RunOptions,
        run_id: &str,
        started: Timestamp,
    ) -> Result<(), EngineError> {
        let trigger = match opts.trigger {
            Trigger::Schedule => "schedule",
            Trigger::Cli => "cli",
        };
        self.store
            .start_run(&RunRow {
                id: run_id.to_string(),
                trigger: trigger.into(),
                started_at: started,
                since: opts.since,
                until: opts.until,
            })
            .await?;
        Ok(())
    }

    /// The webhook inbox's deliveries stored but not applied, as a step of the run's own.
    async fn inbox_step(&self, steps: &mut PartTally) {
        match self.drain_webhook_inbox().await {
            Err(e) => self.fail(steps, format!("webhook inbox: {e}")),
            // A delivery left for later (its chain or the database could not be read) is
            // work this run could not do: it fails here, and the next run tries it first.
            Ok(t) if t.deferred > 0 => self.fail(
                steps,
                format!(
                    "webhook inbox: {} stored deliveries could not be applied (the log names \
                     why); they wait for the next run",
                    t.deferred
                ),
            ),
            Ok(_) => {}
        }
    }

    async fn timed(&self, ctx: &RunCtx, e: &ProviderEntry, fence: Option<Fence>) -> PartTally {
        let t0 = Instant::now();
        let span = tracing::info_span!("provider", provider = %e.provider.name());
        let mut acc = self.run_provider(ctx, e, fence).instrument(span).await;
        acc.elapsed = t0.elapsed();
        acc
    }

    async fn read_heads(&self) -> BTreeMap<String, Result<ChainHead, HeadUnread>> {
        let reads = self.chains.iter().map(|(name, c)| async move {
            let r = c.head().await.map_err(|e| HeadUnread(self.redact(&e)));
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
