//! Every metric of docs/reference.md §5, defined once, with label sets as types. Label values
//! are enums or configured names (provider, chain): never a hash, an address or an error
//! string.

mod labels;
mod record;
mod register;

use std::sync::atomic::AtomicU64;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::{Family, MetricConstructor};
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

pub use labels::{
    ApiL, ChainL, EventL, EventOutcome, ExceptionL, GapL, HeldL, HeldReason, HttpStatus, Kind,
    LoginL, LoginOutcome, ProviderChainL, ProviderL, RefuseReason, RefusedL, RequestL, ResendL,
    ResendOutcome, RunL, RunOutcome, StateLabel, TransitionL, WebhookL, WebhookOutcome, API_ROUTES,
};

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
    /// Deposit addresses and assets the balance check compared with the chain
    /// (docs/operations.md, "Balances").
    pub balances_checked: Family<ChainL, Counter>,
    /// Addresses and assets whose last check left a difference (read back from the database
    /// when serve starts).
    pub balance_mismatched: Family<ChainL, Gauge>,
    /// Unix time of the chain's last completed balance check (0 when none).
    pub last_balance_check: Family<ChainL, FloatGauge>,
    /// Webhook deliveries by provider and outcome (series created by `init_webhooks`).
    pub webhooks: Family<WebhookL, Counter>,
    /// API requests by route and status (series created by `init_api` when the API is on).
    pub api_requests: Family<ApiL, Counter>,
    /// Console requests by route pattern and status (docs/reference.md §5; created by
    /// `init_console`).
    pub console_requests: Family<ApiL, Counter>,
    /// Console logins by outcome.
    pub console_logins: Family<LoginL, Counter>,
    /// Event delivery attempts to the merchant's application, by outcome
    /// (docs/reference.md §6).
    pub events: Family<EventL, Counter>,
    /// Events neither delivered nor dead, as of the delivery loop's last count.
    pub events_pending: Gauge,
    /// Age of the oldest pending event (0 when none).
    pub events_oldest_pending: FloatGauge,
    /// Dead events in the database (every retry failed; kept until replayed).
    pub events_dead: Gauge,
    /// Write transactions the database rolled back and the store ran again (passed to the
    /// store as `store::Retries`).
    pub database_retries: Counter,
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

#[cfg(test)]
mod tests;
