//! Every metric of docs/reference.md §5, defined once, with label sets as types. Label values
//! are enums or configured names (provider, chain): never a hash, an address or an error
//! string.

use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::{Family, MetricConstructor};
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use crate::domain::{GapKind, State};
use crate::providers::StatusClass;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum RunOutcome {
    ok,
    failed,
}

/// Why an order is held (docs/configuration.md, "Amounts"): paid short of its amount, or paid
/// after it expired.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum HeldReason {
    underpaid,
    late,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct HeldL {
    pub reason: HeldReason,
}

/// An exception's kind (docs/reference.md §8): one of `store::EXCEPTION_KINDS`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ExceptionL {
    pub kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum Kind {
    missing,
    lagging,
    failed_notification,
    amount_mismatch,
    unknown_payment,
    reorged,
    late_payment,
}

impl From<GapKind> for Kind {
    fn from(k: GapKind) -> Kind {
        match k {
            GapKind::Missing => Kind::missing,
            GapKind::Lagging => Kind::lagging,
            GapKind::FailedNotification => Kind::failed_notification,
            GapKind::AmountMismatch => Kind::amount_mismatch,
            GapKind::UnknownPayment => Kind::unknown_payment,
            GapKind::Reorged => Kind::reorged,
            GapKind::LatePayment => Kind::late_payment,
        }
    }
}

/// A state as a label value (`unpaid`, `pending`, `confirmed`, `final`).
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct StateLabel(pub State);

impl From<State> for StateLabel {
    fn from(s: State) -> StateLabel {
        StateLabel(s)
    }
}

impl EncodeLabelValue for StateLabel {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        use std::fmt::Write;
        encoder.write_str(self.0.as_str())
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum RefuseReason {
    backwards,
    duplicate,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum ResendOutcome {
    requested,
    skipped,
    failed,
}

/// What `POST /webhooks/{provider}` did with a delivery.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum WebhookOutcome {
    accepted,
    duplicate,
    bad_signature,
    bad_request,
    too_large,
    unknown_provider,
    error,
}

impl WebhookOutcome {
    pub const ALL: [WebhookOutcome; 7] = [
        WebhookOutcome::accepted,
        WebhookOutcome::duplicate,
        WebhookOutcome::bad_signature,
        WebhookOutcome::bad_request,
        WebhookOutcome::too_large,
        WebhookOutcome::unknown_provider,
        WebhookOutcome::error,
    ];
}

#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub enum HttpStatus {
    S2xx,
    S4xx,
    S5xx,
    Error,
}

impl EncodeLabelValue for HttpStatus {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        use std::fmt::Write;
        encoder.write_str(match self {
            HttpStatus::S2xx => "2xx",
            HttpStatus::S4xx => "4xx",
            HttpStatus::S5xx => "5xx",
            HttpStatus::Error => "error",
        })
    }
}

impl From<StatusClass> for HttpStatus {
    fn from(s: StatusClass) -> HttpStatus {
        match s {
            StatusClass::Ok2xx => HttpStatus::S2xx,
            StatusClass::Client4xx => HttpStatus::S4xx,
            StatusClass::Server5xx => HttpStatus::S5xx,
            StatusClass::Error => HttpStatus::Error,
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ProviderL {
    pub provider: String,
}
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ChainL {
    pub chain: String,
}
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RunL {
    pub provider: String,
    pub outcome: RunOutcome,
}
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ProviderChainL {
    pub provider: String,
    pub chain: String,
}
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct GapL {
    pub provider: String,
    pub chain: String,
    pub kind: Kind,
}
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TransitionL {
    pub provider: String,
    pub from: StateLabel,
    pub to: StateLabel,
}
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RefusedL {
    pub provider: String,
    pub reason: RefuseReason,
}
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResendL {
    pub provider: String,
    pub outcome: ResendOutcome,
}
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestL {
    pub provider: String,
    pub status: HttpStatus,
}

/// `provider` is a configured webhook provider, or `unknown` (never the request's path).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WebhookL {
    pub provider: String,
    pub outcome: WebhookOutcome,
}

/// An API request (docs/api.md): its route's pattern (never the request's path, which holds an
/// order ref) and the status answered.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ApiL {
    pub route: String,
    pub status: String,
}

/// The API's routes and the statuses each is counted at from the start (at 0).
pub const API_ROUTES: [(&str, &[u16]); 3] = [
    ("POST /v1/orders", &[200, 201, 401, 409, 413, 422, 503]),
    ("GET /v1/orders/{order_ref}", &[200, 401, 404, 503]),
    ("GET /v1/orders", &[200, 401, 422, 503]),
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum EventOutcome {
    delivered,
    failed,
    dead,
}

/// `payrecon_events_total{outcome}`: `failed` counts failed attempts.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct EventL {
    pub outcome: EventOutcome,
}

#[derive(Clone)]
pub struct DurationHistogram;

impl MetricConstructor<Histogram> for DurationHistogram {
    fn new_metric(&self) -> Histogram {
        Histogram::new(exponential_buckets(0.05, 2.0, 14))
    }
}

type FloatGauge = Gauge<f64, AtomicU64>;

pub struct Metrics {
    registry: Registry,
    pub runs: Family<RunL, Counter>,
    pub run_duration: Family<ProviderL, Histogram, DurationHistogram>,
    pub last_success: Family<ProviderL, FloatGauge>,
    pub checked: Family<ProviderChainL, Counter>,
    pub gaps: Family<GapL, Counter>,
    pub gap_ratio: Family<ProviderL, FloatGauge>,
    pub applied: Family<TransitionL, Counter>,
    pub refused: Family<RefusedL, Counter>,
    pub resends: Family<ResendL, Counter>,
    pub provider_requests: Family<RequestL, Counter>,
    pub rejected: Family<ProviderL, Counter>,
    pub chain_head: Family<ChainL, Gauge>,
    /// Rows the last chain sweep found reorganised away and not re-keyable (per chain).
    pub reorged_open: Family<ChainL, Gauge>,
    /// Webhook deliveries by provider and outcome (series created by `init_webhooks`).
    pub webhooks: Family<WebhookL, Counter>,
    /// API requests by route and status (series created by `init_api` when the API is on).
    pub api_requests: Family<ApiL, Counter>,
    /// Event delivery attempts to the merchant's application, by outcome
    /// (docs/reference.md §6).
    pub events: Family<EventL, Counter>,
    /// Events neither delivered nor dead, as of the delivery loop's last count.
    pub events_pending: Gauge,
    /// Age of the oldest pending event (0 when none).
    pub events_oldest_pending: FloatGauge,
    /// Dead events in the database (every retry failed; kept until replayed).
    pub events_dead: Gauge,
    /// Lists read whole because their pages contradicted the boundary search
    /// (docs/configuration.md, "Long notification lists").
    pub list_full_scans: Family<ProviderL, Counter>,
    /// Orders held now, by reason (docs/configuration.md, "Amounts"), as of the last chain
    /// sweep.
    pub orders_held: Family<HeldL, Gauge>,
    /// Exceptions open now, by kind (README.md, "Exceptions"), as of the last run's end.
    pub exceptions_open: Family<ExceptionL, Gauge>,
    /// Age of the oldest open exception of each kind (0 when none), as of the last run's end.
    pub exceptions_oldest: Family<ExceptionL, FloatGauge>,
}

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
            webhooks: Family::default(),
            api_requests: Family::default(),
            events: Family::default(),
            events_pending: Gauge::default(),
            events_oldest_pending: FloatGauge::default(),
            events_dead: Gauge::default(),
            list_full_scans: Family::default(),
            orders_held: Family::default(),
            exceptions_open: Family::default(),
            exceptions_oldest: Family::default(),
        };
        let r = &mut m.registry;
        r.register(
            "runs",
            "Reconciliation runs per provider and outcome",
            m.runs.clone(),
        );
        r.register(
            "run_duration_seconds",
            "Duration of a provider's part of a run",
            m.run_duration.clone(),
        );
        r.register(
            "last_success_timestamp_seconds",
            "Unix time of the provider's last successful run",
            m.last_success.clone(),
        );
        r.register(
            "payments_checked",
            "Distinct payment keys examined",
            m.checked.clone(),
        );
        r.register("gaps", "Gaps found, by kind", m.gaps.clone());
        r.register(
            "gap_ratio",
            "Gaps / checked in the provider's last run (0 when nothing checked)",
            m.gap_ratio.clone(),
        );
        r.register(
            "transitions_applied",
            "State transitions applied to the ledger",
            m.applied.clone(),
        );
        r.register(
            "transitions_refused",
            "Transitions refused (backwards or duplicate)",
            m.refused.clone(),
        );
        r.register("resends", "Resend requests by outcome", m.resends.clone());
        r.register(
            "provider_requests",
            "HTTP requests to providers by status class",
            m.provider_requests.clone(),
        );
        r.register(
            "records_rejected",
            "Provider records that could not be read",
            m.rejected.clone(),
        );
        r.register(
            "chain_head_block",
            "Latest block seen per chain",
            m.chain_head.clone(),
        );
        r.register(
            "reorged_open",
            "Ledger payments the last chain sweep found reorganised away (receipt gone, \
             replaced, reverted or not re-keyable), per chain",
            m.reorged_open.clone(),
        );
        r.register(
            "webhooks",
            "Webhook deliveries by provider and outcome",
            m.webhooks.clone(),
        );
        r.register(
            "api_requests",
            "Requests to the expected-payments API by route and status",
            m.api_requests.clone(),
        );
        r.register(
            "events",
            "Event deliveries to the merchant's application: delivered, failed attempts, dead",
            m.events.clone(),
        );
        r.register(
            "events_pending",
            "Events to the merchant's application not yet delivered (dead ones excluded)",
            m.events_pending.clone(),
        );
        r.register(
            "events_dead",
            "Dead events to the merchant's application in the database (every retry failed; \
             kept until `payrecon events replay`)",
            m.events_dead.clone(),
        );
        r.register(
            "events_oldest_pending_seconds",
            "Age of the oldest pending event in seconds (0 when none is pending)",
            m.events_oldest_pending.clone(),
        );
        r.register(
            "list_full_scans",
            "Provider lists read whole because their pages contradicted the boundary search",
            m.list_full_scans.clone(),
        );
        r.register(
            "orders_held",
            "Orders held unpaid now, by reason: paid short of their amount (underpaid), or paid \
             after they expired (late)",
            m.orders_held.clone(),
        );
        for reason in [HeldReason::underpaid, HeldReason::late] {
            let _ = m.orders_held.get_or_create(&HeldL { reason });
        }
        r.register(
            "exceptions_open",
            "Exceptions waiting for a person, by kind",
            m.exceptions_open.clone(),
        );
        r.register(
            "exceptions_oldest_open_seconds",
            "Age of the oldest open exception of each kind (0 when none)",
            m.exceptions_oldest.clone(),
        );
        for kind in crate::store::EXCEPTION_KINDS {
            let l = ExceptionL { kind: kind.into() };
            let _ = m.exceptions_open.get_or_create(&l);
            let _ = m.exceptions_oldest.get_or_create(&l);
        }
        for outcome in [
            EventOutcome::delivered,
            EventOutcome::failed,
            EventOutcome::dead,
        ] {
            let _ = m.events.get_or_create(&EventL { outcome });
        }

        let mut all: Vec<(String, Vec<String>)> = providers.to_vec();
        all.push(("chain".to_string(), chains.to_vec()));
        for (p, p_chains) in &all {
            m.init_provider(p, p_chains, p != "chain");
        }
        for c in chains {
            let _ = m.chain_head.get_or_create(&ChainL { chain: c.clone() });
            let _ = m.reorged_open.get_or_create(&ChainL { chain: c.clone() });
        }
        m
    }

    /// The exception gauges from the open counts per kind, ages as of `now`.
    pub fn set_exceptions(&self, open: &[crate::store::OpenExceptions], now: jiff::Timestamp) {
        for o in open {
            let l = ExceptionL {
                kind: o.kind.clone(),
            };
            self.exceptions_open.get_or_create(&l).set(o.open);
            let age = o.oldest.map_or(0.0, |t| {
                (now.as_millisecond() - t.as_millisecond()).max(0) as f64 / 1000.0
            });
            self.exceptions_oldest.get_or_create(&l).set(age);
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

    /// Creates every webhook series at 0: each outcome of each provider with an endpoint,
    /// and `{provider="unknown", outcome="unknown_provider"}`.
    pub fn init_webhooks(&self, providers: &[String]) {
        for p in providers {
            for outcome in WebhookOutcome::ALL {
                let _ = self.webhooks.get_or_create(&WebhookL {
                    provider: p.clone(),
                    outcome,
                });
            }
        }
        let _ = self.webhooks.get_or_create(&WebhookL {
            provider: "unknown".into(),
            outcome: WebhookOutcome::unknown_provider,
        });
    }

    /// Creates the API's series at 0 (`API_ROUTES`).
    pub fn init_api(&self) {
        for (route, statuses) in API_ROUTES {
            for status in statuses {
                self.api_request(route, *status, 0);
            }
        }
    }

    /// Counts `n` answers of `route` with `status`.
    pub fn api_request(&self, route: &str, status: u16, n: u64) {
        self.api_requests
            .get_or_create(&ApiL {
                route: route.to_string(),
                status: status.to_string(),
            })
            .inc_by(n);
    }

    /// Counts one webhook delivery.
    pub fn webhook(&self, provider: &str, outcome: WebhookOutcome) {
        self.webhooks
            .get_or_create(&WebhookL {
                provider: provider.to_string(),
                outcome,
            })
            .inc();
    }

    /// Prometheus text format.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)
            .expect("writing to a String cannot fail");
        out
    }

    pub fn request_observer(
        self: &std::sync::Arc<Self>,
        provider: &str,
    ) -> crate::providers::RequestObserver {
        let metrics = self.clone();
        let provider = provider.to_string();
        std::sync::Arc::new(move |class: StatusClass| {
            metrics
                .provider_requests
                .get_or_create(&RequestL {
                    provider: provider.clone(),
                    status: class.into(),
                })
                .inc();
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spec_metric_is_exported_at_zero_from_the_start() {
        let m = Metrics::new(
            &[("cg".into(), vec!["ethereum".into()])],
            &["ethereum".into()],
        );
        let text = m.encode();
        for name in [
            "payrecon_runs_total{provider=\"cg\",outcome=\"ok\"} 0",
            "payrecon_run_duration_seconds_count{provider=\"cg\"} 0",
            "payrecon_last_success_timestamp_seconds{provider=\"cg\"} 0",
            "payrecon_payments_checked_total{provider=\"cg\",chain=\"ethereum\"} 0",
            "payrecon_gaps_total{provider=\"cg\",chain=\"ethereum\",kind=\"failed_notification\"} 0",
            "payrecon_gaps_total{provider=\"chain\",chain=\"ethereum\",kind=\"reorged\"} 0",
            "payrecon_gap_ratio{provider=\"cg\"} 0",
            "payrecon_transitions_applied_total{provider=\"cg\",from=\"unpaid\",to=\"final\"} 0",
            "payrecon_transitions_refused_total{provider=\"cg\",reason=\"backwards\"} 0",
            "payrecon_resends_total{provider=\"cg\",outcome=\"requested\"} 0",
            "payrecon_provider_requests_total{provider=\"cg\",status=\"5xx\"} 0",
            "payrecon_records_rejected_total{provider=\"cg\"} 0",
            "payrecon_chain_head_block{chain=\"ethereum\"} 0",
            "payrecon_reorged_open{chain=\"ethereum\"} 0",
            "payrecon_orders_held{reason=\"underpaid\"} 0",
            "payrecon_orders_held{reason=\"late\"} 0",
        ] {
            assert!(text.contains(name), "missing {name} in\n{text}");
        }
        assert!(!text.contains("payrecon_webhooks_total{"), "{text}");
        m.init_webhooks(&["qvard".into()]);
        let text = m.encode();
        for name in [
            "payrecon_webhooks_total{provider=\"qvard\",outcome=\"accepted\"} 0",
            "payrecon_webhooks_total{provider=\"qvard\",outcome=\"too_large\"} 0",
            "payrecon_webhooks_total{provider=\"unknown\",outcome=\"unknown_provider\"} 0",
        ] {
            assert!(text.contains(name), "missing {name} in\n{text}");
        }
    }
}
