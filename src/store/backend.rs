//! The backends' operations whose statements differ in shape (`Backend`, implemented in
//! each backend's folder), and `dispatch!`, the one match from a `Store` to its backend's
//! type. The spellings they share are `Dialect`'s (`dialect.rs`).

use std::collections::HashSet;

use jiff::Timestamp;

use super::dialect::Dialect;
use super::pool_sql::PoolSql;
use super::{Rekey, StoreError};
use crate::domain::{LedgerRow, LedgerView, PaymentKey, TxHash};

/// The operations whose statements differ in shape by backend (a list bound as a JSON array
/// on SQLite and as arrays on PostgreSQL; PostgreSQL's set-wise apply), and the pool's own
/// setup. Implemented in each backend's folder (`backend.rs`). The operations done in one
/// statement with `RETURNING` default to `PoolSql`'s; MariaDB/MySQL overrides them.
pub(crate) trait Backend: Dialect + PoolSql {
    /// Applies the migrations of this backend (`migrations/<backend>`).
    async fn migrate(pool: &sqlx::Pool<Self>) -> Result<(), StoreError>;
    /// Rows holding any of `keys` (as their key or a credited payment's), and unpaid unkeyed
    /// orders of any of the `slots` (oldest first).
    async fn load_view(
        pool: &sqlx::Pool<Self>,
        keys: &[PaymentKey],
        slots: &[&(String, String, String)],
    ) -> Result<LedgerView, StoreError>;
    /// Rows holding a payment of any of these `(chain, tx_hash)`.
    async fn rows_by_tx(
        pool: &sqlx::Pool<Self>,
        txs: &[&(String, TxHash)],
    ) -> Result<Vec<LedgerRow>, StoreError>;
    /// Which of `keys` an order or a payment row holds.
    async fn attached_keys(
        pool: &sqlx::Pool<Self>,
        keys: &[PaymentKey],
    ) -> Result<HashSet<(String, String, i64)>, StoreError>;
    /// A sweep page: the valid rows, the last id read and how many rows were read.
    async fn sweep_page(
        pool: &sqlx::Pool<Self>,
        after_id: i64,
        limit: i64,
        recent_final: &[(String, Timestamp, Timestamp)],
    ) -> Result<(Vec<LedgerRow>, Option<i64>, usize), StoreError>;
    /// `Store::record_blocks`.
    async fn record_blocks(pool: &sqlx::Pool<Self>, rows: &[Rekey]) -> Result<u64, StoreError>;
    /// Stores a webhook delivery once per `(provider, event_id)`, committed (and, on SQLite,
    /// synced to disk) when it returns: its id, `None` when it was stored before.
    async fn insert_webhook_delivery(
        pool: &sqlx::Pool<Self>,
        provider: &str,
        event_id: &str,
        body: &str,
        at: Timestamp,
    ) -> Result<Option<i64>, StoreError>;
    /// Moves payments forward to the states given (`(payment id, state)`; never back), with
    /// `state_changed_at = now`, in one statement: the rows changed.
    async fn advance_payment_states(
        pool: &sqlx::Pool<Self>,
        moves: &[(i64, crate::domain::State)],
        now: &str,
    ) -> Result<u64, sqlx::Error>;
    /// Claims up to `limit` due events (`events::due_sql`) for `holder` until `until`.
    async fn claim_events(
        pool: &sqlx::Pool<Self>,
        holder: &str,
        now: Timestamp,
        until: Timestamp,
        limit: i64,
    ) -> Result<Vec<crate::store::rows::ClaimedRow>, sqlx::Error> {
        Self::claim_events_returning(pool, holder, now, until, limit).await
    }
    /// Claims the right to request a resend of `(provider, notification_id)`: true (and
    /// recorded as `now`) when no request was made after `cutoff`.
    async fn claim_resend(
        pool: &sqlx::Pool<Self>,
        provider: &str,
        notification_id: &str,
        now: Timestamp,
        cutoff: Timestamp,
    ) -> Result<bool, sqlx::Error> {
        Self::claim_resend_returning(pool, provider, notification_id, now, cutoff).await
    }
    /// Takes the lease of `provider` for `holder` until `until` when it is free, expired at
    /// `now` or already `holder`'s: the new token, `None` when another holder has it.
    async fn take_lease(
        pool: &sqlx::Pool<Self>,
        provider: &str,
        holder: &str,
        until: Timestamp,
        now: Timestamp,
    ) -> Result<Option<i64>, sqlx::Error> {
        Self::take_lease_returning(pool, provider, holder, until, now).await
    }
    /// Registers one batch in one transaction: inserts the orders whose refs are free (a ref
    /// given twice once) and reads every ref of the batch; the refs inserted and the views.
    async fn register_batch(
        pool: &sqlx::Pool<Self>,
        batch: &[crate::domain::ExpectedOrder],
        // One transaction of two statements where `RETURNING` is: nothing to run again.
        _retries: &crate::store::Retries,
    ) -> Result<(Vec<String>, Vec<crate::store::rows::ViewRow>), sqlx::Error> {
        Self::register_returning(pool, batch).await
    }
}

/// Runs `$body` with `$p` bound to the pool a `Store` holds and the type `D` naming its
/// backend (`Dialect` and `Backend`): the only match on the backend outside
/// `Store::connect`. The body is compiled once per backend, so a statement written with
/// `D`'s spellings runs on each.
macro_rules! dispatch {
    ($store:expr, $p:pat => $body:expr) => {
        match $store {
            $crate::store::Store::Sqlite($p) => {
                #[allow(unused_imports)]
                use $crate::store::{backend::Backend as _, dialect::Dialect as _};
                #[allow(dead_code)]
                type D = sqlx::Sqlite;
                $body
            }
            $crate::store::Store::Postgres($p) => {
                #[allow(unused_imports)]
                use $crate::store::{backend::Backend as _, dialect::Dialect as _};
                #[allow(dead_code)]
                type D = sqlx::Postgres;
                $body
            }
            $crate::store::Store::MySql($p) => {
                #[allow(unused_imports)]
                use $crate::store::{backend::Backend as _, dialect::Dialect as _};
                #[allow(dead_code)]
                type D = sqlx::MySql;
                $body
            }
        }
    };
}
pub(crate) use dispatch;
