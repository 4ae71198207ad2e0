//! Recording: the series created later (webhooks, API) and the values set or counted as the
//! daemon runs, and the Prometheus text of them all.

use super::{
    ApiL, ExceptionL, LoginL, LoginOutcome, Metrics, RequestL, WebhookL, WebhookOutcome, API_ROUTES,
};
use crate::providers::StatusClass;

impl Metrics {
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

    /// The balance gauges of the chains in `gauges` (configured chains only: the caller
    /// filters); the last check's time only moves forward.
    pub fn set_balances(&self, gauges: &[crate::store::BalanceGauge]) {
        for g in gauges {
            let l = super::ChainL {
                chain: g.chain.clone(),
            };
            self.balance_mismatched.get_or_create(&l).set(g.mismatched);
            // A check that found nothing new saves no row: the gauge never goes back.
            let at = g.last_check.as_millisecond() as f64 / 1000.0;
            let last = self.last_balance_check.get_or_create(&l);
            if at > last.get() {
                last.set(at);
            }
        }
    }

    /// `payrecon_orders_held` per reason, from the database's counts.
    pub fn set_held(&self, underpaid: i64, late: i64) {
        use super::{HeldL, HeldReason};
        let reason = HeldReason::underpaid;
        self.orders_held
            .get_or_create(&HeldL { reason })
            .set(underpaid);
        let reason = HeldReason::late;
        self.orders_held.get_or_create(&HeldL { reason }).set(late);
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

    /// The console's series at 0 (when it is on): its logins by outcome and its overview.
    pub fn init_console(&self) {
        for outcome in [LoginOutcome::ok, LoginOutcome::failed, LoginOutcome::locked] {
            let _ = self.console_logins.get_or_create(&LoginL { outcome });
        }
        self.console_request("GET /console", 200);
    }

    /// Counts one console answer of `route` (its pattern) with `status`.
    pub fn console_request(&self, route: &str, status: u16) {
        self.console_requests
            .get_or_create(&ApiL {
                route: route.to_string(),
                status: status.to_string(),
            })
            .inc();
    }

    /// Counts one console login.
    pub fn console_login(&self, outcome: LoginOutcome) {
        self.console_logins.get_or_create(&LoginL { outcome }).inc();
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
