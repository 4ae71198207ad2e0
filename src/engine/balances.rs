//! The balance check (docs/operations.md, "Balances"): per deposit address and asset, the
//! ledger against the chain's balance at the final block, incremental from where the address's
//! last check ended. Each difference is explained by the transfers that make it: inflows go
//! through the amounts' rules like any payment found on chain (they may pay or top up an order,
//! else `unknown_payment`), outflows to a treasury are sweeps (recorded), outflows elsewhere
//! open `unexpected_outflow`, and what nothing explains opens `balance_mismatch`. A check is a
//! run with one report entry, `balances`; a chain it could not check fails it.

mod explain;

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use jiff::Timestamp;
use tracing::Instrument as _;

use super::{Engine, EngineError, PartTally, RunCtx, RunOptions, Trigger};
use crate::chain::check::{BalanceQuery, Since};
use crate::chain::ChainClient;
use crate::domain::{
    ChainHead, ChainTransfer, Flow, GapKind, LedgerView, Observation, PaymentKey, U256,
};
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
    /// A scheduled check (`serve`) runs under the lease `balances`: on several instances
    /// sharing a database, one checks and the others skip (their report has no entry).
    pub async fn check_balances(
        &self,
        lookback: Duration,
        treasury: &BTreeMap<String, Vec<String>>,
        chain: Option<&str>,
        trigger: Trigger,
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
                cursors: false,
                heads: self.read_heads().await,
                progress: None,
                source: Source::Reconcile,
                placed: Default::default(),
                exceptions: Default::default(),
            };
            tracing::info!(run_id = %run_id, since = %since, "Balance check started.");
            let leased = trigger == Trigger::Schedule;
            let part = self.under_lease(leased, BALANCES, |fence| async {
                let mut acc = PartTally::new(BALANCES, BALANCES);
                acc.shared.fence = fence;
                let t0 = std::time::Instant::now();
                self.balances_part(&ctx, &mut acc, treasury, chain).await;
                acc.elapsed = t0.elapsed();
                acc
            });
            let parts: Vec<PartTally> = part.await.into_iter().collect();
            let steps = PartTally::new(super::Part::Run.name(), super::Part::Run.name());
            self.finish(&ctx, &opts, parts, steps, now, Timestamp::now())
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
        // A configured chain with no deposit address in scope is checked: nothing to read.
        for chain in self.chains.keys() {
            if only.is_none_or(|c| c == chain) && !by_chain.contains_key(chain) {
                self.checked_now(chain);
            }
        }
        let none = Vec::new();
        for (chain, items) in by_chain {
            let treasury = treasury.get(&chain).unwrap_or(&none);
            self.check_chain(ctx, acc, &chain, &items, &previous, treasury)
                .await;
        }
    }

    /// One chain's deposit addresses: read, explained, recorded; or the part failed by name.
    async fn check_chain(
        &self,
        ctx: &RunCtx,
        acc: &mut PartTally,
        chain: &str,
        items: &[BalanceScope],
        previous: &HashMap<(String, String, String), BalanceRow>,
        treasury: &[String],
    ) {
        let Some(client) = self.chains.get(chain) else {
            let e = format!("chain {chain}: orders name it, but it is not configured");
            return self.fail(acc, e);
        };
        let head = match &ctx.heads[chain] {
            Ok(h) => *h,
            Err(e) => {
                let e = format!("chain {chain}: the head could not be read: {e}");
                return self.fail(acc, e);
            }
        };
        let found = read(client, &head, items, previous).await;
        let found = found.and_then(|(items, at_final, flows)| {
            explain::conclude(chain, &head, items, at_final, flows, treasury)
        });
        match found {
            Ok(found) => match self.record_check(ctx, acc, chain, found).await {
                Ok(()) => self.checked_now(chain),
                Err(e) => self.fail(acc, format!("chain {chain}: {e}")),
            },
            // A chain error names its chain already.
            Err(explain::CheckError::Chain(e)) => self.fail(acc, e.to_string()),
            Err(e) => self.fail(acc, format!("chain {chain}: {e}")),
        }
    }

    /// `payrecon_last_balance_check_timestamp_seconds` of a chain checked in full.
    fn checked_now(&self, chain: &str) {
        let l = crate::metrics::ChainL {
            chain: chain.to_string(),
        };
        let now = Timestamp::now().as_millisecond() as f64 / 1000.0;
        self.metrics.last_balance_check.get_or_create(&l).set(now);
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
        let l = crate::metrics::ChainL {
            chain: chain.to_string(),
        };
        self.metrics
            .balances_checked
            .get_or_create(&l)
            .inc_by(found.checked);
        self.refresh_balance_gauges().await?;
        Ok(())
    }
}

/// What the chain says of a chain's deposit addresses in scope: the items to conclude on,
/// their balances at the final block and their flows. The chain reads; whether an address
/// and asset are this chain's is the chain kind's rule, and a ledger row that is not fails the
/// check by name.
async fn read(
    client: &ChainClient,
    head: &ChainHead,
    scope: &[BalanceScope],
    previous: &HashMap<(String, String, String), BalanceRow>,
) -> Result<(Vec<explain::Item>, Vec<U256>, Flows), explain::CheckError> {
    let kind = client.settings().kind;
    let (mut queries, mut last) = (Vec::with_capacity(scope.len()), HashMap::new());
    for s in scope {
        let bad = || explain::CheckError::Ledger(s.address.clone(), s.asset.clone());
        let address = kind.address("pay_to", &s.address).map_err(|_| bad())?;
        let asset = kind.asset(&s.asset).map_err(|_| bad())?;
        let since = match previous.get(&(s.chain.clone(), s.address.clone(), s.asset.clone())) {
            Some(p) => {
                last.insert((address.to_string(), asset.to_string()), p.clone());
                Since::Checked {
                    block: p.checked_block,
                    balance: p.balance,
                }
            }
            None => Since::Time(s.oldest_order),
        };
        queries.push(BalanceQuery {
            address,
            asset,
            since,
        });
    }
    let reads = client.read_balances(head, &queries).await?;
    let (mut items, mut at_final, mut flows) = (Vec::new(), Vec::new(), HashMap::new());
    for r in reads {
        let key = (r.address.to_string(), r.asset.to_string());
        items.push(match last.remove(&key) {
            Some(p) => explain::Item::resumed(r.address, r.asset, p),
            None => explain::Item::opened(r.address, r.asset, r.lo, r.lo_balance),
        });
        at_final.push(r.at_final);
        flows.insert(key, r.flows);
    }
    Ok((items, at_final, flows))
}

/// Each `(address, asset)`'s flows.
type Flows = HashMap<(String, String), Vec<Flow>>;
