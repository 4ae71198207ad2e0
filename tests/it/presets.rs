//! The Qvard and Paymos presets (`kind = "http"`) end to end: `Engine::run` against a real
//! anvil node (token deployed, 3 confirmations, `finalized` finality), the fake Qvard and
//! Paymos servers over loopback HTTP, and real SQLite and PostgreSQL ledgers.
//!
//! Every scenario builds a `Lab` per backend: the reconcile `World` (anvil, token, an empty
//! fake Chaingateway as provider `cg`) with two more providers in its TOML, `qvard` and
//! `paymos`, each on its own fake with its own API key.

use payrecon::domain::U256;
use payrecon::report::{FindingOut, Report};
use payrecon_testkit::paymos::{FakePaymos, PaymosData, PaymosEvent};
use payrecon_testkit::qvard::{FakeQvard, QvardPayment};

use crate::reconcile::{entry, World};

mod key_attach;
mod paymos;
mod qvard;
mod secrets;
mod status_only;

/// The fake Qvard's API key (a secret that must never leak).
pub(crate) const QKEY: &str = "qk_live_presets_7c3e9a15d2b40f68";
/// The fake Paymos' API key (a secret that must never leak).
pub(crate) const PKEY: &str = "pm_live_presets_e4a2c81b9f3d5706";
/// The provider names in the configuration.
pub(crate) const QVARD: &str = "qvard";
pub(crate) const PAYMOS: &str = "paymos";

/// A world with Qvard and Paymos configured by preset next to the empty `cg`.
pub(crate) struct Lab {
    pub w: World,
    pub qvard: FakeQvard,
    pub paymos: FakePaymos,
}

impl Lab {
    /// None when anvil is skipped.
    pub async fn start(db_url: &str) -> Option<Lab> {
        let qvard = FakeQvard::start(QKEY).await;
        let paymos = FakePaymos::start(PKEY).await;
        let providers = format!(
            "{}{}",
            http_table(QVARD, "qvard", qvard.base_url(), QKEY),
            http_table(PAYMOS, "paymos", paymos.base_url(), PKEY)
        );
        let w = World::start_with(db_url, &providers, "").await?;
        Some(Lab { w, qvard, paymos })
    }

    /// The token's address (the Qvard records' `asset`).
    pub fn token(&self) -> &str {
        &self.w.token
    }

    /// A completed Qvard payment for order `id`, completed `minutes` ago; `tx` None for a
    /// status-only record (no `tx_hash`, no `log_index`).
    pub fn qvard_payment(&self, id: &str, tx: Option<(&str, i64)>, amount: &str, minutes: i64) {
        self.qvard.add_payment(&QvardPayment {
            id: id.into(),
            status: "completed".into(),
            chain: "ethereum".into(),
            tx_hash: tx.map(|(h, _)| h.to_string()),
            log_index: tx.map(|(_, li)| li),
            asset: self.token().to_string(),
            amount: amount.into(),
            completed_at: crate::reconcile::minutes_ago(minutes),
        });
    }

    /// A Paymos event whose delivery failed, created `minutes` ago, for `order_ref`'s
    /// payment `tx` at `log_index` (`state` is the payment state Paymos reports).
    #[allow(clippy::too_many_arguments)]
    pub fn paymos_event(
        &self,
        event_id: &str,
        order_ref: &str,
        tx: &str,
        log_index: i64,
        amount: U256,
        state: &str,
        minutes: i64,
        attempts: u32,
    ) {
        self.paymos.add_event(&PaymosEvent {
            event_id: event_id.into(),
            event_type: "payment.updated".into(),
            created_at: crate::reconcile::minutes_ago(minutes),
            attempts,
            status: "failed".into(),
            data: PaymosData {
                order_ref: order_ref.into(),
                chain: "ethereum".into(),
                tx_hash: Some(tx.into()),
                log_index: Some(log_index),
                amount: amount.to_string(),
                state: state.into(),
            },
        });
    }

    /// The log index of `tx`'s Transfer.
    pub async fn log_index(&self, tx: &str) -> i64 {
        self.w.where_is(tx).await.2
    }

    pub async fn run(&self) -> Report {
        self.w.run().await
    }
}

/// A `kind = "http"` provider table on `preset`.
fn http_table(name: &str, preset: &str, base_url: &str, key: &str) -> String {
    format!(
        r#"
[providers.{name}]
kind = "http"
preset = "{preset}"
base_url = "{base_url}"
api_key = "{key}"
chains = ["ethereum"]
timeout = "5s"
max_retries = 2
backoff = "20ms"
"#
    )
}

/// Findings of `provider` and `kind`.
pub(crate) fn of<'a>(report: &'a Report, provider: &str, kind: &str) -> Vec<&'a FindingOut> {
    report
        .findings
        .iter()
        .filter(|f| f.provider == provider && f.kind == kind)
        .collect()
}

/// The finding of `provider` and `kind` that names `order_ref` (exactly one).
pub(crate) fn one<'a>(report: &'a Report, provider: &str, kind: &str, r: &str) -> &'a FindingOut {
    let hits: Vec<_> = of(report, provider, kind)
        .into_iter()
        .filter(|f| f.order_ref.as_deref() == Some(r))
        .collect();
    assert_eq!(hits.len(), 1, "{kind} for {r}: {}", report.to_json());
    hits[0]
}

/// The entries of providers other than `provider` found nothing and did not fail.
pub(crate) fn others_quiet(report: &Report, provider: &str) {
    for name in ["cg", QVARD, PAYMOS, "chain"] {
        if name == provider {
            continue;
        }
        let p = entry(report, name);
        assert_eq!(p.status, "ok", "{name}: {}", report.to_json());
        assert_eq!(
            (p.gaps.total(), p.applied),
            (0, 0),
            "{name}: {}",
            report.to_json()
        );
    }
}
