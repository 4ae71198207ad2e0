//! The plan's vocabulary: what the chain and providers observed, what the ledger holds, and
//! what a plan decides (transitions, findings, resends, refusals). No IO.

use std::collections::HashMap;

use super::cover::Tolerance;
use super::model::{Address, Asset, BlockRef, GapKind, PaymentKey, State, TxHash, U256};

/// What the chain says about one transfer a provider (or the ledger) pointed at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainTransfer {
    pub key: PaymentKey,
    pub to: Address,
    pub asset: Asset,
    pub amount: U256,
    pub block: BlockRef,
    /// State derived from confirmations and finality (never `Unpaid`).
    pub state: State,
    /// The block's time, where the chain gave it (Bitcoin, Solana), or the engine read it: for
    /// an order that expires before planning (late payments, docs/configuration.md,
    /// "Amounts"), for every payment a written plan credits after.
    pub block_time: Option<jiff::Timestamp>,
}

/// The chain's verdict on a transaction named by a provider record or a ledger row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChainVerdict {
    Transfer(ChainTransfer),
    /// Receipt `status = 0`: not a payment.
    Reverted,
    /// No receipt: the chain does not have (or no longer has) this transaction.
    NotFound,
    /// The receipt exists but holds no matching payment (e.g. only an ERC-721 transfer).
    NoTransfer(String),
}

/// One thing to reconcile: a provider record (or a swept ledger row) with the chain's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation {
    /// Provider name, or `chain` for the chain sweep.
    pub provider: String,
    pub chain: String,
    pub tx_hash: TxHash,
    /// The provider's notification id, when it has one.
    pub notification_id: Option<String>,
    /// The provider reports this notification's delivery as failed.
    pub failed: bool,
    /// The merchant's order id, when the provider echoes it: that order is preferred when
    /// the payment is unattached and goes to its address and asset.
    pub order_ref: Option<String>,
    /// The provider has no failed-notifications list (Qvard): a record whose ledger row was
    /// behind is taken as a notification that did not arrive (a `failed_notification`, resent).
    pub infer_failed: bool,
    /// When the provider created or last updated the record (retry windows count from it).
    pub record_time: Option<jiff::Timestamp>,
    pub verdict: ChainVerdict,
}

/// An order as the ledger holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerRow {
    pub id: i64,
    pub order_ref: String,
    pub chain: String,
    /// The deposit address, parsed (canonical form) when the row was read.
    pub pay_to: Address,
    pub asset: Asset,
    pub amount_due: U256,
    pub key: Option<PaymentKey>,
    pub amount_paid: Option<U256>,
    pub block: Option<BlockRef>,
    pub state: State,
    /// The payments credited to the order (`payrecon_payments`), loaded for orders still
    /// `unpaid` that hold part of their amount; empty otherwise.
    pub credits: Vec<CreditedPayment>,
    /// When the order stops taking payments (`orders.expires_at`): a payment in a later
    /// block is late (docs/configuration.md, "Amounts").
    pub expires_at: Option<jiff::Timestamp>,
    /// The order's key has no payment row: the merchant's own code wrote it. The next step
    /// that reads it on chain gives it one (source `merchant`, docs/reference.md §8).
    pub merchant_key: bool,
}

impl LedgerRow {
    /// Whether a payment in a block of time `block_time` is late for this order (`None`: no
    /// block time known, which is not late; the engine reads it for orders that expire).
    pub fn is_late(&self, block_time: Option<jiff::Timestamp>) -> bool {
        matches!((self.expires_at, block_time), (Some(e), Some(b)) if b > e)
    }
}

/// A payment already credited to an order (a `payrecon_payments` row).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreditedPayment {
    pub key: PaymentKey,
    pub amount: U256,
    pub state: State,
    /// `None` for a payment whose block was never recorded (written by the merchant).
    pub block: Option<BlockRef>,
    pub block_time: Option<jiff::Timestamp>,
    /// The chain sweep found it gone from the chain (`payrecon_payments.reorged_at`): it
    /// counts toward nothing until the chain has it again.
    pub gone: bool,
}

/// The merchant's rules for amounts (docs/configuration.md, "Amounts"): how short an order may
/// be paid and still count as paid, globally and per `chain:asset`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AmountPolicy {
    pub tolerance: Tolerance,
    /// Per asset, keyed `"<chain>:<asset>"` in the asset's canonical spelling.
    pub per_asset: HashMap<String, Tolerance>,
    /// `late_payments = "accept"`: a late payment counts like any other (default: held).
    pub accept_late: bool,
    /// The largest `amount_paid` the database keeps (`Store::max_amount`: MariaDB/MySQL's
    /// `DECIMAL(65,0)`; none elsewhere), set by the app: a credit that would take an order's
    /// sum past it is a finding, not a failed batch.
    pub max_paid: Option<U256>,
}

impl AmountPolicy {
    pub fn tolerance(&self, chain: &str, asset: &Asset) -> Tolerance {
        self.per_asset
            .get(&format!("{chain}:{asset}"))
            .copied()
            .unwrap_or(self.tolerance)
    }
    /// Whether the database keeps `paid` as an order's `amount_paid` (`max_paid`).
    pub fn keeps(&self, paid: U256) -> bool {
        self.max_paid.is_none_or(|max| paid <= max)
    }
}

/// The part of the ledger one batch of observations can touch, loaded in batched queries.
#[derive(Debug, Default, Clone)]
pub struct LedgerView {
    pub by_key: HashMap<PaymentKey, LedgerRow>,
    /// Orders named by `order_ref` in the batch's records, whatever their state.
    pub by_ref: HashMap<String, LedgerRow>,
    /// Unpaid orders with no payment key, per `(chain, pay_to, asset)`, oldest first.
    pub unpaid: HashMap<(String, String, String), Vec<LedgerRow>>,
    /// The rules amounts are judged by (the engine sets them from the configuration).
    pub policy: AmountPolicy,
}

impl LedgerView {
    pub fn insert_keyed(&mut self, row: LedgerRow) {
        if let Some(key) = row.key.clone() {
            self.by_key.insert(key, row);
        }
    }
    /// The order `row` holds the payment `key` as one of its credited payments (not the
    /// one its key names). The order's own key wins when both are loaded.
    pub fn insert_credited(&mut self, key: PaymentKey, row: LedgerRow) {
        self.by_key.entry(key).or_insert(row);
    }
    pub fn insert_unpaid(&mut self, row: LedgerRow) {
        let slot = (
            row.chain.clone(),
            row.pay_to.to_string(),
            row.asset.to_string(),
        );
        self.unpaid.entry(slot).or_default().push(row);
    }
}

/// Payment columns written when a payment is attached to an order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attach {
    pub key: PaymentKey,
    pub amount: U256,
    pub block: BlockRef,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedTransition {
    pub order_id: i64,
    pub order_ref: String,
    pub from: State,
    pub to: State,
    /// Set when the order has no payment key yet (a `missing` gap): the payment that
    /// completed the cover, and the order's `amount_paid` after it.
    pub attach: Option<Attach>,
    /// A payment credited to the order with this step (a new `payrecon_payments` row);
    /// with `from == to` and no `attach`, the order stays where it is (held,
    /// docs/configuration.md, "Amounts").
    pub credit: Option<NewPayment>,
}

/// A payment to credit to an order, and the order's `amount_paid` before and after it (the
/// write is conditional on the amount before: a concurrent credit makes it a miss).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewPayment {
    pub key: PaymentKey,
    pub amount: U256,
    pub block: BlockRef,
    /// The payment's own state on the chain.
    pub state: State,
    pub paid_before: Option<U256>,
    pub paid_after: U256,
    /// The order's `amount_due` (for the payment's event).
    pub amount_due: U256,
    /// The block's time, when known (`payrecon_payments.block_time`).
    pub block_time: Option<jiff::Timestamp>,
    /// In a block after the order expired, and held for it (`late_payments = "hold"`).
    pub held_late: bool,
    /// The key the merchant's own code wrote into the order, given its payment row (source
    /// `merchant`, no `order.payment_received`: payrecon did not credit it).
    pub merchant: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    Applied,
    WouldApply,
    ResendRequested,
    ResendSkipped,
    /// The payment was credited, and the order held where it was (docs/configuration.md,
    /// "Amounts").
    Held,
    None,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Applied => "applied",
            Action::WouldApply => "would_apply",
            Action::ResendRequested => "resend_requested",
            Action::ResendSkipped => "resend_skipped",
            Action::Held => "held",
            Action::None => "none",
        }
    }
}

/// What a finding's action depends on; the engine resolves it after applying and resending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing to do (an unknown payment, a refusal).
    Nothing,
    /// Index into `Plan::transitions`.
    Transition(usize),
    /// Index into `Plan::resends`.
    Resend(usize),
    /// An action the engine already took or decided (the chain sweep's re-key of a
    /// reorganised payment: `applied`, `would_apply` or `none`).
    Decided(Action),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub provider: String,
    pub kind: GapKind,
    pub chain: String,
    pub tx_hash: Option<String>,
    pub log_index: Option<i64>,
    pub order_ref: Option<String>,
    pub local_state: Option<State>,
    pub observed_state: Option<State>,
    pub outcome: Outcome,
    pub detail: String,
    /// The payment's amount in base units, where the finding is about one transfer read on
    /// chain (an exception records it, README.md, "Exceptions").
    pub amount: Option<U256>,
    /// The asset of the payment or order it is about, where known: what its amounts are in
    /// (output for people shows them in tokens, `payrecon::assets`).
    pub asset: Option<Asset>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResendRequest {
    pub chain: String,
    pub notification_id: String,
    /// The record's time, when known: no resend before the provider's retry window has passed.
    pub record_time: Option<jiff::Timestamp>,
}

/// A refused transition: the observed state is behind the ledger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub order_ref: String,
    pub local: State,
    pub observed: State,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Plan {
    pub transitions: Vec<PlannedTransition>,
    pub findings: Vec<Finding>,
    pub resends: Vec<ResendRequest>,
    pub refused_backwards: Vec<Refusal>,
}

impl Plan {
    /// Appends another plan of the same batch, renumbering its outcomes' indices.
    pub fn append(&mut self, other: Plan) {
        let (nt, nr) = (self.transitions.len(), self.resends.len());
        self.transitions.extend(other.transitions);
        self.resends.extend(other.resends);
        self.refused_backwards.extend(other.refused_backwards);
        self.findings
            .extend(other.findings.into_iter().map(|mut f| {
                f.outcome = match f.outcome {
                    Outcome::Transition(i) => Outcome::Transition(i + nt),
                    Outcome::Resend(i) => Outcome::Resend(i + nr),
                    o => o,
                };
                f
            }));
    }
}
