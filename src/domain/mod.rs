//! The pure core: no IO, no async, no sqlx/reqwest/alloy/tokio. Keys, states, amounts, and
//! the diff that turns observations and a ledger view into a plan.

pub mod amount;
mod balance;
mod bitcoin;
mod by_ref;
mod cover;
mod credit;
mod expected;
mod findings;
mod kind;
pub mod list_cover;
mod model;
mod operator;
pub mod page_search;
mod plan;
mod reconcile;
mod reorg;
mod solana;
mod tron;

#[cfg(test)]
mod tests;

// One path for each public item: `domain::X`. The modules above the line are private;
// `amount`, `list_cover` and `page_search` are reached by their own paths and re-exported
// nowhere.
pub use balance::{classify, settle, Checkpoint, Delta, Flow, FlowKind, Verdict};
pub use bitcoin::BtcNetwork;
pub use by_ref::{reconcile_claims, Claim};
pub use cover::{cover, Cover, Credit, SumOverflow, Tolerance};
pub use expected::{
    amount_within, expected_order, Catalog, ExpectedOrder, FieldError, OrderInput, StoredOrder,
    MAX_ORDER_REF,
};
pub use kind::{as_tron, ledger_address, ledger_asset, ledger_tx_hash, tron_address, ChainKind};
pub use model::{
    parse_base_units, Address, Asset, BlockRef, ChainHead, GapKind, InputError, PaymentKey, State,
    TxHash, U256,
};
pub use operator::{plan_accept, plan_attach, Refused, OPERATOR};
pub use plan::{
    Action, AmountPolicy, Attach, ChainTransfer, ChainVerdict, CreditedPayment, Finding, LedgerRow,
    LedgerView, NewPayment, Observation, Outcome, Plan, PlannedTransition, Refusal, ResendRequest,
};
pub use reconcile::{pick_transfer, reconcile};
pub use reorg::{moved_detail, place, Placement, Receipt};
pub use solana::{
    instruction_index, instruction_of, parse_solana_signature, ScanCursor, SolanaKey,
};
pub use tron::TronAddress;
