//! The domain's table tests across its modules: payments by order ref, the amount rules, late
//! payments, and the diff.

mod by_ref;
mod credit;
mod late;
mod reconcile;
