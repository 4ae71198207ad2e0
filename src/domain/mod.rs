//! The pure core: no IO, no async, no sqlx/reqwest/alloy/tokio. Keys, states, amounts, and
//! the diff that turns observations and a ledger view into a plan.

pub mod amount;
pub mod by_ref;
mod findings;
pub mod list_cover;
pub mod model;
pub mod page_search;
pub mod plan;
pub mod reconcile;
pub mod reorg;

#[cfg(test)]
mod by_ref_tests;
#[cfg(test)]
mod reconcile_tests;

pub use by_ref::{reconcile_claims, Claim};
pub use model::*;
pub use reconcile::*;
pub use reorg::{moved_detail, place, Placement, Receipt};
