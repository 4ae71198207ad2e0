//! The balance check (SPEC §17): per deposit address and asset, the ledger against the
//! chain's balance at the final block, incremental from where the address's last check
//! ended. Each difference is explained by the transfers that make it: inflows go through the
//! amounts' rules like any payment found on chain (they may pay or top up an order, else
//! `unknown_payment`), outflows to a treasury are sweeps (recorded), outflows elsewhere open
//! `unexpected_outflow`, and what nothing explains opens `balance_mismatch`. A check is a run
//! with one report entry, `balances`; a chain it could not check fails it.

mod evm;

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use jiff::Timestamp;
use tracing::Instrument as _;

use super::{Engine, EngineError, PartTally, RunCtx, RunOptions};
use crate::chain::ChainClient;
use crate::domain::{ChainTransfer, GapKind, LedgerView, Observation, PaymentKey};
use crate::metrics::GapL;
use crate::report::{Report, MAX_FINDINGS};
use crate::store::{BalanceRow, BalanceScope, FindingRow, Source};

/// The report entry's name and kind.
pub const BALANCES: &str = "balances";

/// What one chain's check found: the rows to save, the inflows to settle, the findings.
#[derive(Default)]
struct ChainCheck {
    rows: Vec<BalanceRow>,
    inflows: Vec<ChainTransfer>,
    /// `(gap kind, row)`; `None` for a sweep (recorded, not a gap).
    findings: Vec<(Option<GapKind>, FindingRow)>,
    checked: u64,
}

impl Engine {
    /// Checks the deposit addresses of the orders created within `lookback` (of `chain`, when
    /// given) and returns the run's report. Fails only when the run cannot start (database).
    pub async fn check_balances(
        &self,
        lookback: Duration,
        treasury: &BTreeMap<String, Vec<String>>,
        chain: Option<&str>,
    ) -> Result<Report, EngineError> {
        let now = Timestamp::now();
        let since = now - jiff::SignedDuration::try_from(lookback).unwrap_or_default();
        let opts = RunOptions::window(since, now);
        let run_id = uuid::Uuid::new_v4().to_string();
        let span = tracing::info_span!("run", run_id = %run_id);
        async {
            self.record_start(&opts, &run_id, now).await?;
            let ctx = RunCtx {
                run_id: run_id.clone(),
                started: now,
                since,
                until: now,
                dry_run: false,
                apply: self.settings.apply,
                resend: false,
                heads: self.read_heads().await,
                progress: None,
                source: Source::Reconcile,
                placed: Default::default(),
                exceptions: Default::default(),
            };
            tracing::info!(run_id = %run_id, since = %since, "Balance check started.");
            let mut acc = PartTally::new(BALANCES, BALANCES);
            let t0 = std::time::Instant::now();
            self.balances_part(&ctx, &mut acc, treasury, chain).await;
            acc.elapsed = t0.elapsed();
            let steps = PartTally::new(super::Part::Run.name(), super::Part::Run.name());
            self.finish(&ctx, &opts, vec![acc], steps, now, Timestamp::now())
                .await
        }
        .instrument(span)
        .await
    }

    async fn balances_part(
        &self,
        ctx: &RunCtx,
        acc: &mut PartTally,
        treasury: &BTreeMap<String, Vec<String>>,
        only: Option<&str>,
    ) {
        let scope = match self.store.balance_scope(ctx.since).await {
            Ok(s) => s,
            Err(e) => return self.fail(acc, format!("reading the deposit addresses: {e}")),
        };
        let previous: HashMap<(String, String, String), BalanceRow> =
            match self.store.balances(only, false).await {
                Ok(rows) => rows
                    .into_iter()
                    .map(|r| ((r.chain.clone(), r.address.clone(), r.asset.clone()), r))
                    .collect(),
                Err(e) => return self.fail(acc, format!("reading the last checks: {e}")),
            };
        let mut by_chain: BTreeMap<String, Vec<BalanceScope>> = BTreeMap::new();
        for s in scope {
            if only.is_none_or(|c| c == s.chain) {
                by_chain.entry(s.chain.clone()).or_default().push(s);
            }
        }
        if let Some(c) = only {
            if !self.chains.contains_key(c) {
                return self.fail(acc, format!("chain {c}: not configured"));
            }
        }
        let none = Vec::new();
        for (chain, items) in by_chain {
            let Some(client) = self.chains.get(&chain) else {
                self.fail(
                    acc,
                    format!("chain {chain}: orders name it, but it is not configured"),
                );
                continue;
            };
            let head = match &ctx.heads[&chain] {
                Ok(h) => *h,
                Err(e) => {
                    self.fail(
                        acc,
                        format!("chain {chain}: the head could not be read: {e}"),
                    );
                    continue;
                }
            };
            let treasury = treasury.get(&chain).unwrap_or(&none);
            let found = match client.as_ref() {
                ChainClient::Evm(evm) => {
                    evm::check(evm, &chain, &head, &items, &previous, treasury).await
                }
                ChainClient::Tron(_) | ChainClient::Bitcoin(_) => {
                    self.fail(
                        acc,
                        format!(
                            "chain {chain}: the balance check reads EVM chains only so far; \
                             its {} deposit addresses were not checked",
                            items.len()
                        ),
                    );
                    continue;
                }
            };
            match found {
                Ok(found) => {
                    if let Err(e) = self.record_check(ctx, acc, &chain, found).await {
                        self.fail(acc, format!("chain {chain}: {e}"));
                    }
                }
                Err(e) => self.fail(acc, format!("chain {chain}: {e}")),
            }
        }
    }

    /// Settles a chain's inflows through the amounts' rules, records its findings (opening or
    /// touching their exceptions), then saves its rows: a check whose payments could not be
    /// settled leaves the rows where they were, to be read again.
    async fn record_check(
        &self,
        ctx: &RunCtx,
        acc: &mut PartTally,
        chain: &str,
        found: ChainCheck,
    ) -> Result<(), EngineError> {
        acc.report.checked += found.checked;
        if !found.inflows.is_empty() {
            let observations: Vec<Observation> = found
                .inflows
                .iter()
                .map(|t| super::sweep::observe_as(BALANCES, chain, t))
                .collect();
            let keys: Vec<PaymentKey> = found.inflows.iter().map(|t| t.key.clone()).collect();
            let mut slots: Vec<(String, String, String)> = found
                .inflows
                .iter()
                .map(|t| (chain.to_string(), t.to.to_string(), t.asset.to_string()))
                .collect();
            slots.sort();
            slots.dedup();
            let mut view: LedgerView = self.store.load_view(&keys, &slots).await?;
            view.policy = self.amounts.clone();
            let seen = super::batch::BatchInput {
                observations: &observations,
                claims: &[],
            };
            self.settle(ctx, acc, None, seen, &view, Vec::new()).await?;
        }
        let mut rows = Vec::with_capacity(found.findings.len());
        for (kind, row) in found.findings {
            if let Some(kind) = kind {
                acc.report.gaps.add(kind, 1);
                let gl = GapL {
                    provider: BALANCES.into(),
                    chain: chain.to_string(),
                    kind: kind.into(),
                };
                self.metrics.gaps.get_or_create(&gl).inc();
                tracing::warn!(chain, kind = kind.as_str(), detail = %row.detail, "Gap found.");
                if acc.findings.len() < MAX_FINDINGS {
                    acc.findings.push(row.clone());
                } else {
                    acc.truncated = true;
                }
            }
            rows.push(row);
        }
        if !rows.is_empty() {
            self.store.insert_findings(&ctx.run_id, &rows).await?;
        }
        self.store.save_balances(&found.rows).await?;
        Ok(())
    }
}
