//! Settling one batch: plan (pure), apply, resend, findings, counts and metrics.

use std::collections::HashMap;

use jiff::Timestamp;

use super::part::PartTally;
use super::resend::Resender;
use super::simulate::{remember, simulate};
use super::{Engine, RunCtx};
use crate::domain::{
    reconcile, reconcile_claims, Action, ChainVerdict, Claim, Finding, GapKind, LedgerView,
    Observation, Outcome, Plan,
};
use crate::metrics::{GapL, ProviderChainL, ProviderL, RefuseReason, RefusedL, TransitionL};
use crate::report::MAX_FINDINGS;
use crate::store::{ApplyContext, ApplyOutcome, FindingRow, Opening, Retries, Source, StoreError};

/// What a batch observed: chain-verified records, and status-only claims.
pub(crate) struct BatchInput<'a> {
    pub observations: &'a [Observation],
    pub claims: &'a [Claim],
}

impl Engine {
    /// Plans one batch and carries it out. `extra` findings (e.g. reorged rows from the sweep)
    /// are recorded with the batch.
    pub(crate) async fn settle(
        &self,
        ctx: &RunCtx,
        acc: &mut PartTally,
        resender: Option<Resender<'_>>,
        seen: BatchInput<'_>,
        view: &LedgerView,
        extra: Vec<Finding>,
    ) -> Result<(), StoreError> {
        // Orders that expire judge a payment by its block's time (docs/configuration.md,
        // "Amounts"): read it.
        let timed = self.block_times(acc, seen.observations, view).await;
        let seen = BatchInput {
            observations: timed.as_deref().unwrap_or(seen.observations),
            claims: seen.claims,
        };
        ctx.exceptions.observe(seen.observations);
        let mut plan = plan_batch(ctx, acc, seen, view, extra);
        if writes(ctx, &plan) {
            self.credit_times(acc, &mut plan).await;
        }
        let outcomes = self.apply_plan(ctx, acc, &plan).await?;
        let resend_actions = self
            .resends(ctx, acc, resender.as_ref(), &plan.resends)
            .await?;
        if ctx.source == Source::Webhook {
            // A delivery is the webhook path working: its transitions are audited and
            // counted, but it records no findings and counts no gaps. What it credits to an
            // order still short (or late) waits for a person all the same: its exception
            // opens now, since no run may list that payment again; in the apply's own
            // transaction when it wrote (`apply_plan`), else here.
            if !writes(ctx, &plan) {
                return self.webhook_exceptions(ctx, &plan, &outcomes).await;
            }
            return Ok(());
        }
        self.record_findings(ctx, acc, &plan, &outcomes, &resend_actions)
            .await
    }

    /// The observations with their block times, when an order of the view expires and some
    /// transfer has none; `None` when nothing needs them. A chain that cannot be read leaves
    /// its transfers without (those to orders that expire then wait for the next run) and
    /// fails the part.
    async fn block_times(
        &self,
        acc: &mut PartTally,
        observations: &[Observation],
        view: &LedgerView,
    ) -> Option<Vec<Observation>> {
        let expires = view
            .by_key
            .values()
            .chain(view.by_ref.values())
            .chain(view.unpaid.values().flatten())
            .any(|r| r.expires_at.is_some());
        let untimed = |o: &Observation| match &o.verdict {
            ChainVerdict::Transfer(t) if t.block_time.is_none() => Some(t.block.number),
            _ => None,
        };
        if !expires || !observations.iter().any(|o| untimed(o).is_some()) {
            return None;
        }
        let blocks = observations
            .iter()
            .filter_map(|o| Some((o.chain.as_str(), untimed(o)?)));
        let times = self.read_block_times(acc, blocks).await;
        let mut out = observations.to_vec();
        for o in &mut out {
            if let ChainVerdict::Transfer(t) = &mut o.verdict {
                if t.block_time.is_none() {
                    t.block_time = times.get(&(o.chain.clone(), t.block.number)).copied();
                }
            }
        }
        Some(out)
    }

    /// Gives every payment the plan credits its block's time where the chain did not (EVM,
    /// Tron): the console's payment-to-event delay counts from it (docs/operations.md, "The
    /// operator console"). One batched read per chain of the distinct blocks, and only for a
    /// plan that is written. A chain that cannot be read fails the part; its payments are
    /// credited all the same, without.
    async fn credit_times(&self, acc: &mut PartTally, plan: &mut Plan) {
        let untimed = |t: &crate::domain::PlannedTransition| {
            let p = t.credit.as_ref().filter(|p| p.block_time.is_none())?;
            Some((p.key.chain.clone(), p.block.number))
        };
        let blocks: Vec<(String, u64)> = plan.transitions.iter().filter_map(untimed).collect();
        if blocks.is_empty() {
            return;
        }
        let times = self
            .read_block_times(acc, blocks.iter().map(|(c, n)| (c.as_str(), *n)))
            .await;
        for p in plan
            .transitions
            .iter_mut()
            .filter_map(|t| t.credit.as_mut())
        {
            if p.block_time.is_none() {
                p.block_time = times.get(&(p.key.chain.clone(), p.block.number)).copied();
            }
        }
    }

    /// The time of each `(chain, block)`: one batched read per chain of its distinct blocks.
    /// A chain that cannot be read fails the part, and its blocks are absent.
    async fn read_block_times<'a>(
        &self,
        acc: &mut PartTally,
        wanted: impl Iterator<Item = (&'a str, u64)>,
    ) -> HashMap<(String, u64), Timestamp> {
        let mut blocks: HashMap<&str, Vec<u64>> = HashMap::new();
        for (chain, n) in wanted {
            blocks.entry(chain).or_default().push(n);
        }
        let mut times = HashMap::new();
        for (chain, mut numbers) in blocks {
            let Some(client) = self.chains.get(chain) else {
                continue;
            };
            numbers.sort_unstable();
            numbers.dedup();
            match client.block_times(&numbers).await {
                Ok(got) => times.extend(got.into_iter().map(|(n, t)| ((chain.to_string(), n), t))),
                Err(e) => self.fail(acc, format!("chain {chain}: reading block times: {e}")),
            }
        }
        times
    }

    /// Writes the plan's transitions (when the run writes), wakes the event delivery when
    /// one was applied, and counts every outcome.
    async fn apply_plan(
        &self,
        ctx: &RunCtx,
        acc: &mut PartTally,
        plan: &Plan,
    ) -> Result<Vec<ApplyOutcome>, StoreError> {
        let provider = acc.report.provider.clone();
        let outcomes = if writes(ctx, plan) {
            let actx = ApplyContext {
                source: ctx.source,
                provider: provider.clone(),
                run_id: ctx.run_id.clone(),
                events: self.events_wake.is_some(),
                retries: Retries::to(&self.metrics.database_retries),
            };
            let fence = acc.shared.fence.as_ref();
            let outcomes = if ctx.source == Source::Webhook && !plan.findings.is_empty() {
                // A delivery's exceptions commit with its credits (`settle`).
                let rows = |outcomes: &[ApplyOutcome]| webhook_rows(ctx, plan, outcomes);
                let opening = Opening {
                    by: &ctx.run_id,
                    rows: &rows,
                };
                self.store
                    .apply_opening(&plan.transitions, &actx, fence, &opening)
                    .await?
            } else {
                self.store
                    .apply_fenced(&plan.transitions, &actx, fence)
                    .await?
            };
            // The batch committed: its events are due now (the delivery loop also polls).
            if let Some(wake) = &self.events_wake {
                if outcomes
                    .iter()
                    .any(|o| matches!(o, ApplyOutcome::Applied { .. }))
                {
                    wake.notify_one();
                }
            }
            outcomes
        } else {
            Vec::new()
        };
        let stale = self.count_outcomes(acc, plan, &outcomes);
        self.count_refused(
            acc,
            RefuseReason::backwards,
            plan.refused_backwards.len() as u64,
        );
        // A webhook delivery whose payment was not credited for a race stays in the inbox: the
        // next run applies it again (a run's records are read again by the next run).
        if stale > 0 && ctx.source == Source::Webhook {
            acc.fail(format!(
                "{stale} payment(s) not credited: their orders changed while they were planned"
            ));
        }
        Ok(outcomes)
    }

    /// Counts and logs each outcome of the plan's transitions; how many were stale.
    fn count_outcomes(&self, acc: &mut PartTally, plan: &Plan, outcomes: &[ApplyOutcome]) -> usize {
        let provider = acc.report.provider.clone();
        let mut stale = 0usize;
        for (t, o) in plan.transitions.iter().zip(outcomes) {
            match o {
                ApplyOutcome::Applied { from } => {
                    acc.report.applied += 1;
                    let l = TransitionL {
                        provider: provider.clone(),
                        from: (*from).into(),
                        to: t.to.into(),
                    };
                    self.metrics.applied.get_or_create(&l).inc();
                    tracing::info!(provider = %provider, order_ref = %t.order_ref, from = %from, to = %t.to, "Transition applied.");
                }
                ApplyOutcome::Attached => {
                    tracing::info!(provider = %provider, order_ref = %t.order_ref, "Payment key attached.");
                }
                ApplyOutcome::Credited => {
                    tracing::info!(provider = %provider, order_ref = %t.order_ref, "Payment credited; the order is held short.");
                }
                ApplyOutcome::Stale => {
                    tracing::info!(provider = %provider, order_ref = %t.order_ref, "A payment was not credited: the order changed since it was planned; it is planned again.");
                    stale += 1;
                }
                ApplyOutcome::Backwards => self.count_refused(acc, RefuseReason::backwards, 1),
                ApplyOutcome::Duplicate => self.count_refused(acc, RefuseReason::duplicate, 1),
            }
        }
        stale
    }

    /// The exceptions of a webhook delivery's findings (no finding rows, no gaps), when it
    /// wrote no transitions (else they opened in the apply's transaction).
    async fn webhook_exceptions(
        &self,
        ctx: &RunCtx,
        plan: &Plan,
        outcomes: &[ApplyOutcome],
    ) -> Result<(), StoreError> {
        if ctx.dry_run || plan.findings.is_empty() {
            return Ok(());
        }
        let rows = webhook_rows(ctx, plan, outcomes);
        self.store.open_exceptions_for(&ctx.run_id, &rows).await
    }

    /// The plan's findings: counted (report, metrics), logged, stored (unless a dry run),
    /// and kept for the report up to `MAX_FINDINGS`.
    async fn record_findings(
        &self,
        ctx: &RunCtx,
        acc: &mut PartTally,
        plan: &Plan,
        outcomes: &[ApplyOutcome],
        resend_actions: &[(Action, Option<String>)],
    ) -> Result<(), StoreError> {
        let provider = acc.report.provider.clone();
        let mut rows = Vec::with_capacity(plan.findings.len());
        for f in &plan.findings {
            let (action, note) = match f.outcome {
                Outcome::Resend(i) => (resend_actions[i].0, resend_actions[i].1.as_deref()),
                other => finding_action(other, ctx.apply, outcomes),
            };
            acc.report.gaps.add(f.kind, 1);
            let gl = GapL {
                provider: provider.clone(),
                chain: f.chain.clone(),
                kind: f.kind.into(),
            };
            self.metrics.gaps.get_or_create(&gl).inc();
            if f.kind != GapKind::Lagging && f.kind != GapKind::Missing {
                tracing::warn!(provider = %provider, kind = %f.kind.as_str(), order_ref = %f.order_ref.as_deref().unwrap_or("-"), tx_hash = %f.tx_hash.as_deref().unwrap_or("-"), detail = %f.detail, "Gap found.");
            }
            rows.push(finding_row(f, action, note));
        }
        if !ctx.dry_run && !rows.is_empty() {
            self.store.insert_findings(&ctx.run_id, &rows).await?;
        }
        for r in rows {
            if acc.findings.len() < MAX_FINDINGS {
                acc.findings.push(r);
            } else {
                acc.truncated = true;
            }
        }
        Ok(())
    }

    fn count_refused(&self, acc: &mut PartTally, reason: RefuseReason, n: u64) {
        if n == 0 {
            return;
        }
        if reason == RefuseReason::backwards {
            acc.report.refused_backwards += n;
        }
        let l = RefusedL {
            provider: acc.report.provider.clone(),
            reason,
        };
        self.metrics.refused.get_or_create(&l).inc_by(n);
    }

    /// Counts a record as checked once per run; false when it was already examined.
    pub(crate) fn mark_checked(&self, acc: &mut PartTally, chain: &str, fingerprint: u64) -> bool {
        if !acc.shared.seen.insert(fingerprint) {
            return false;
        }
        acc.report.checked += 1;
        let l = ProviderChainL {
            provider: acc.report.provider.clone(),
            chain: chain.to_string(),
        };
        self.metrics.checked.get_or_create(&l).inc();
        true
    }

    pub(crate) fn count_rejected(&self, acc: &mut PartTally, n: u64) {
        acc.report.rejected += n;
        let l = ProviderL {
            provider: acc.report.provider.clone(),
        };
        self.metrics.rejected.get_or_create(&l).inc_by(n);
    }
}

/// The batch's plan (pure): its observations and claims against the view, on top of what
/// earlier batches would have written when nothing is written.
fn plan_batch(
    ctx: &RunCtx,
    acc: &mut PartTally,
    seen: BatchInput<'_>,
    view: &LedgerView,
    extra: Vec<Finding>,
) -> Plan {
    let BatchInput {
        observations,
        claims,
    } = seen;
    let simulated_view;
    let view = if !ctx.apply && !acc.shared.simulated.is_empty() {
        simulated_view = simulate(view, observations, &acc.shared.simulated);
        &simulated_view
    } else {
        view
    };
    let mut plan = reconcile(observations, view);
    if !claims.is_empty() {
        plan.append(reconcile_claims(claims, view));
    }
    plan.findings.extend(extra);
    if !ctx.apply {
        remember(&mut acc.shared.simulated, view, &plan.transitions);
    }
    plan
}

/// Whether the batch writes its plan's transitions.
fn writes(ctx: &RunCtx, plan: &Plan) -> bool {
    ctx.apply && !plan.transitions.is_empty()
}

/// A webhook delivery's findings as the rows its exceptions are made of.
fn webhook_rows(ctx: &RunCtx, plan: &Plan, outcomes: &[ApplyOutcome]) -> Vec<FindingRow> {
    plan.findings
        .iter()
        .map(|f| {
            let (action, note) = finding_action(f.outcome, ctx.apply, outcomes);
            finding_row(f, action, note)
        })
        .collect()
}

/// What a finding's transition (or none) did, and a note for its detail.
fn finding_action(
    outcome: Outcome,
    apply: bool,
    outcomes: &[ApplyOutcome],
) -> (Action, Option<&'static str>) {
    match outcome {
        Outcome::Nothing | Outcome::Resend(_) => (Action::None, None),
        Outcome::Transition(i) => match (apply, outcomes.get(i)) {
            (true, Some(ApplyOutcome::Applied { .. } | ApplyOutcome::Attached)) => {
                (Action::Applied, None)
            }
            (true, Some(ApplyOutcome::Credited)) => (Action::Held, None),
            (true, Some(ApplyOutcome::Stale)) => (
                Action::None,
                Some(
                    "not credited: the order changed while it was planned; planned again next run",
                ),
            ),
            (true, Some(ApplyOutcome::Backwards)) => {
                (Action::None, Some("the ledger was already there"))
            }
            (true, _) => (
                Action::None,
                Some("refused: the transition or payment key is already recorded"),
            ),
            (false, _) => (Action::WouldApply, None),
        },
        Outcome::Decided(a) => (a, None),
    }
}

fn finding_row(f: &Finding, action: Action, note: Option<&str>) -> FindingRow {
    FindingRow {
        provider: f.provider.clone(),
        kind: f.kind.as_str().to_string(),
        chain: f.chain.clone(),
        tx_hash: f.tx_hash.clone(),
        log_index: f.log_index,
        order_ref: f.order_ref.clone(),
        local_state: f.local_state.map(|s| s.as_str().to_string()),
        observed_state: f.observed_state.map(|s| s.as_str().to_string()),
        action: action.as_str().to_string(),
        detail: match note {
            Some(n) => format!("{}; {n}", f.detail),
            None => f.detail.clone(),
        },
        amount: f.amount.map(|a| a.to_string()),
        asset: f.asset.as_ref().map(|a| a.to_string()),
        address: None,
    }
}
