//! Registration of every metric, and the series known from the start created at 0.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::{
    ChainL, DurationHistogram, EventL, EventOutcome, ExceptionL, FloatGauge, GapL, HeldL,
    HeldReason, HttpStatus, Metrics, ProviderChainL, ProviderL, RefuseReason, RefusedL, RequestL,
    ResendL, ResendOutcome, RunL, RunOutcome, TransitionL,
};
use crate::domain::{GapKind, State};

impl Metrics {
    /// Registers every metric and creates every known series at 0: `providers` are
    /// `(name, chains)` pairs; the chain sweep is added as provider `chain` over all chains.
    pub fn new(providers: &[(String, Vec<String>)], chains: &[String]) -> Metrics {
        let mut m = Metrics {
            registry: Registry::with_prefix("payrecon"),
            runs: Family::default(),
            run_duration: Family::new_with_constructor(DurationHistogram),
            last_success: Family::default(),
            checked: Family::default(),
            gaps: Family::default(),
            gap_ratio: Family::default(),
            applied: Family::default(),
            refused: Family::default(),
            resends: Family::default(),
            provider_requests: Family::default(),
            rejected: Family::default(),
            chain_head: Family::default(),
            reorged_open: Family::default(),
            balances_checked: Family::default(),
            balance_mismatched: Family::default(),
            last_balance_check: Family::default(),
            webhooks: Family::default(),
            api_requests: Family::default(),
            console_requests: Family::default(),
            console_logins: Family::default(),
            events: Family::default(),
            events_pending: Gauge::default(),
            events_oldest_pending: FloatGauge::default(),
            events_dead: Gauge::default(),
            database_retries: Counter::default(),
            list_full_scans: Family::default(),
            orders_held: Family::default(),
            exceptions_open: Family::default(),
            exceptions_oldest: Family::default(),
        };
        m.register_run_metrics();
        m.register_provider_metrics();
        m.register_ingest_metrics();
        m.register_event_metrics();
        m.register_backlog_metrics();
        m.init_series(providers, chains);
        m
    }

    /// A run's metrics: runs, their duration and last success, payments checked, gaps, and
    /// the transitions and resends they led to.
    fn register_run_metrics(&mut self) {
        let r = &mut self.registry;
        r.register(
            "runs",
            "Reconciliation runs per provider and outcome",
            self.runs.clone(),
        );
        r.register(
            "run_duration_seconds",
            "Duration of a provider's part of a run",
            self.run_duration.clone(),
        );
        r.register(
            "last_success_timestamp_seconds",
            "Unix time of the provider's last successful run",
            self.last_success.clone(),
        );
        r.register(
            "payments_checked",
            "Distinct payment keys examined",
            self.checked.clone(),
        );
        r.register("gaps", "Gaps found, by kind", self.gaps.clone());
        r.register(
            "gap_ratio",
            "Gaps / checked in the provider's last run (0 when nothing checked)",
            self.gap_ratio.clone(),
        );
        r.register(
            "transitions_applied",
            "State transitions applied to the ledger",
            self.applied.clone(),
        );
        r.register(
            "transitions_refused",
            "Transitions refused (backwards or duplicate)",
            self.refused.clone(),
        );
        r.register(
            "resends",
            "Resend requests by outcome",
            self.resends.clone(),
        );
    }

    /// What the providers and chains answered: HTTP requests, unreadable records, chain heads
    /// and reorganised payments.
    fn register_provider_metrics(&mut self) {
        let r = &mut self.registry;
        r.register(
            "provider_requests",
            "HTTP requests to providers by status class",
            self.provider_requests.clone(),
        );
        r.register(
            "records_rejected",
            "Provider records that could not be read",
            self.rejected.clone(),
        );
        r.register(
            "chain_head_block",
            "Latest block seen per chain",
            self.chain_head.clone(),
        );
        r.register(
            "reorged_open",
            "Ledger payments the last chain sweep found reorganised away (receipt gone, \
             replaced, reverted or not re-keyable), per chain",
            self.reorged_open.clone(),
        );
        r.register(
            "balances_checked",
            "Deposit addresses and assets the balance check compared with the chain",
            self.balances_checked.clone(),
        );
        r.register(
            "balance_mismatched_addresses",
            "Deposit addresses and assets whose last balance check left a difference",
            self.balance_mismatched.clone(),
        );
        r.register(
            "last_balance_check_timestamp_seconds",
            "Unix time of the chain's last completed balance check (0 when none)",
            self.last_balance_check.clone(),
        );
    }

    /// What comes in on `serve`'s listener: webhook deliveries and API requests.
    fn register_ingest_metrics(&mut self) {
        let r = &mut self.registry;
        r.register(
            "webhooks",
            "Webhook deliveries by provider and outcome",
            self.webhooks.clone(),
        );
        r.register(
            "api_requests",
            "Requests to the expected-payments API by route and status",
            self.api_requests.clone(),
        );
        r.register(
            "console_requests",
            "Requests to the operator console by route and status",
            self.console_requests.clone(),
        );
        r.register(
            "console_logins",
            "Logins to the operator console by outcome",
            self.console_logins.clone(),
        );
    }

    /// Event deliveries to the merchant's application and the events waiting.
    fn register_event_metrics(&mut self) {
        let r = &mut self.registry;
        r.register(
            "events",
            "Event deliveries to the merchant's application: delivered, failed attempts, dead",
            self.events.clone(),
        );
        r.register(
            "events_pending",
            "Events to the merchant's application not yet delivered (dead ones excluded)",
            self.events_pending.clone(),
        );
        r.register(
            "events_dead",
            "Dead events to the merchant's application in the database (every retry failed; \
             kept until `payrecon events replay`)",
            self.events_dead.clone(),
        );
        r.register(
            "events_oldest_pending_seconds",
            "Age of the oldest pending event in seconds (0 when none is pending)",
            self.events_oldest_pending.clone(),
        );
    }

    /// Lists read whole, then what waits for a person: held orders and open exceptions, their
    /// series created at 0.
    fn register_backlog_metrics(&mut self) {
        let r = &mut self.registry;
        r.register(
            "list_full_scans",
            "Provider lists read whole because their pages contradicted the boundary search",
            self.list_full_scans.clone(),
        );
        r.register(
            "orders_held",
            "Orders held unpaid now, by reason: paid short of their amount (underpaid), or paid \
             after they expired (late)",
            self.orders_held.clone(),
        );
        for reason in [HeldReason::underpaid, HeldReason::late] {
            let _ = self.orders_held.get_or_create(&HeldL { reason });
        }
        r.register(
            "exceptions_open",
            "Exceptions waiting for a person, by kind",
            self.exceptions_open.clone(),
        );
        r.register(
            "exceptions_oldest_open_seconds",
            "Age of the oldest open exception of each kind (0 when none)",
            self.exceptions_oldest.clone(),
        );
        r.register(
            "database_retries",
            "Write transactions the database rolled back (a deadlock, a serialization failure, \
             a lock wait timeout, a busy database) and payrecon ran again: a batch of transitions \
             at most six times in all, a registration five",
            self.database_retries.clone(),
        );
        for kind in crate::store::EXCEPTION_KINDS {
            let l = ExceptionL { kind: kind.into() };
            let _ = self.exceptions_open.get_or_create(&l);
            let _ = self.exceptions_oldest.get_or_create(&l);
        }
    }

    /// Creates the events' series, then every provider's (the chain sweep as provider `chain`
    /// over all `chains`) and every chain's, at 0.
    fn init_series(&self, providers: &[(String, Vec<String>)], chains: &[String]) {
        for outcome in [
            EventOutcome::delivered,
            EventOutcome::failed,
            EventOutcome::dead,
        ] {
            let _ = self.events.get_or_create(&EventL { outcome });
        }

        let mut all: Vec<(String, Vec<String>)> = providers.to_vec();
        all.push(("chain".to_string(), chains.to_vec()));
        for (p, p_chains) in &all {
            self.init_provider(p, p_chains, p != "chain");
        }
        // The run's own steps (`run`): whether they did their work, from the start.
        let run = || "run".to_string();
        for outcome in [RunOutcome::ok, RunOutcome::failed] {
            let _ = self.runs.get_or_create(&RunL {
                provider: run(),
                outcome,
            });
        }
        let _ = self
            .last_success
            .get_or_create(&ProviderL { provider: run() });
        let _ = self
            .run_duration
            .get_or_create(&ProviderL { provider: run() });
        for c in chains {
            let _ = self.chain_head.get_or_create(&ChainL { chain: c.clone() });
            let l = ChainL { chain: c.clone() };
            let _ = self.reorged_open.get_or_create(&l);
            let _ = self.balances_checked.get_or_create(&l);
            let _ = self.balance_mismatched.get_or_create(&l);
            let _ = self.last_balance_check.get_or_create(&l);
        }
    }

    fn init_provider(&self, p: &str, chains: &[String], http: bool) {
        let provider = || p.to_string();
        let pl = ProviderL {
            provider: provider(),
        };
        for outcome in [RunOutcome::ok, RunOutcome::failed] {
            let _ = self.runs.get_or_create(&RunL {
                provider: provider(),
                outcome,
            });
        }
        let _ = self.run_duration.get_or_create(&pl);
        let _ = self.last_success.get_or_create(&pl);
        let _ = self.gap_ratio.get_or_create(&pl);
        let _ = self.rejected.get_or_create(&pl);
        if http {
            let _ = self.list_full_scans.get_or_create(&pl);
        }
        for chain in chains {
            let _ = self.checked.get_or_create(&ProviderChainL {
                provider: provider(),
                chain: chain.clone(),
            });
            for kind in GapKind::ALL {
                let _ = self.gaps.get_or_create(&GapL {
                    provider: provider(),
                    chain: chain.clone(),
                    kind: kind.into(),
                });
            }
        }
        for (i, from) in State::ALL.iter().enumerate() {
            for to in &State::ALL[i + 1..] {
                let _ = self.applied.get_or_create(&TransitionL {
                    provider: provider(),
                    from: (*from).into(),
                    to: (*to).into(),
                });
            }
        }
        for reason in [RefuseReason::backwards, RefuseReason::duplicate] {
            let _ = self.refused.get_or_create(&RefusedL {
                provider: provider(),
                reason,
            });
        }
        for outcome in [
            ResendOutcome::requested,
            ResendOutcome::skipped,
            ResendOutcome::failed,
        ] {
            let _ = self.resends.get_or_create(&ResendL {
                provider: provider(),
                outcome,
            });
        }
        if http {
            for status in [
                HttpStatus::S2xx,
                HttpStatus::S4xx,
                HttpStatus::S5xx,
                HttpStatus::Error,
            ] {
                let _ = self.provider_requests.get_or_create(&RequestL {
                    provider: provider(),
                    status,
                });
            }
        }
    }
}
