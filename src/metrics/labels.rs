//! Label sets as types, and the label values they hold: enums, or configured names (provider,
//! chain, route).

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};

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
    unexpected_outflow,
    balance_mismatch,
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
            GapKind::UnexpectedOutflow => Kind::unexpected_outflow,
            GapKind::BalanceMismatch => Kind::balance_mismatch,
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

/// A console login (docs/reference.md §5): `ok`; `failed` (a wrong name or password, or a form
/// without its token); `locked` (refused unchecked: five failures for the name within a
/// minute).
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum LoginOutcome {
    ok,
    failed,
    locked,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LoginL {
    pub outcome: LoginOutcome,
}

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
