//! Orders registered by a shop (docs/api.md): the API's `POST /v1/orders`,
//! `payrecon orders add` and `orders import`. A batch is one transaction of two statements: a
//! multi-row INSERT that skips the refs already taken
//! (`ON CONFLICT (order_ref) DO NOTHING RETURNING order_ref`), then one read of every ref of
//! the batch (`Backend::register_batch`; MariaDB/MySQL, which lack that INSERT, read the taken
//! refs first and insert the others). A ref taken before is the same order again (the request is idempotent) or a
//! conflict, decided by the domain on the stored fields. And the API's reads: one order, or a
//! keyset page by `(payrecon_updated_at, id)`. And orders as a merchant inserts them (the demo,
//! tests and benchmarks; feature `demo`).

use std::collections::{HashMap, HashSet};

use jiff::Timestamp;
use serde::Serialize;

use super::backend::dispatch;
use super::pool_sql::view_columns;
use super::rows::ViewRow;
use super::rows::{counted, db_error, ms_text, sqlite_ts};
#[cfg(feature = "demo")]
use super::NewOrder;
use super::{Store, StoreError};
use crate::domain::{ExpectedOrder, StoredOrder};

/// Orders per transaction of `register_orders` (docs/reference.md §1, `orders`: an import
/// commits per 1,000).
pub const REGISTER_BATCH: usize = 1_000;

/// An order as the API shows it. Amounts are base units as decimal strings; times RFC 3339.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct OrderView {
    #[serde(skip)]
    pub id: i64,
    pub order_ref: String,
    pub chain: String,
    pub pay_to: String,
    /// A token contract, or `native`.
    pub asset: String,
    /// Base units, as a decimal string.
    #[schema(example = "25000000")]
    pub amount_due: String,
    /// The sum of the order's credited payments (base units), or null before the first.
    pub amount_paid: Option<String>,
    /// `unpaid`, `pending`, `confirmed` or `final`.
    pub state: String,
    /// The payment that completed the cover, once one did.
    pub tx_hash: Option<String>,
    pub log_index: Option<i64>,
    pub block_number: Option<i64>,
    pub block_hash: Option<String>,
    pub expires_at: Option<String>,
    pub created_at: Option<String>,
    pub state_changed_at: Option<String>,
    pub updated_at: Option<String>,
    /// Solana only: the order's Solana Pay reference (base58), or null.
    pub reference: Option<String>,
    /// Where this order sits in the list (`OrderPage::after`), when read by `order_page`.
    #[serde(skip)]
    pub position: Option<String>,
}

from_row! {
    /// A transition of an order, from `payrecon_transitions`.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize)]
    pub struct TransitionView {
        pub from_state: String,
        pub to_state: String,
        /// `reconcile`, `webhook` or `operator`.
        pub source: String,
        pub provider: String,
        pub run_id: Option<String>,
        pub created_at: Option<String>,
    }
}

from_row! {
    /// A payment credited to an order, as the API shows it.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
    pub struct PaymentView {
        pub chain: String,
        pub tx_hash: String,
        pub log_index: i64,
        /// Base units, as a decimal string.
        pub amount: String,
        pub block_number: Option<i64>,
        pub block_hash: Option<String>,
        /// `pending`, `confirmed` or `final`.
        pub state: String,
        /// `reconcile`, `webhook`, `operator` or `merchant`.
        pub source: String,
        pub provider: Option<String>,
        pub created_at: Option<String>,
        /// When the payment was seen to leave the canonical chain (null while it is on it).
        pub reorged_at: Option<String>,
    }
}

/// What registering one order did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Registered {
    /// A new order.
    Created(OrderView),
    /// The same order was registered before: nothing written.
    Same(OrderView),
    /// The ref is taken by an order that differs in these fields: nothing written.
    Conflict(OrderView, Vec<&'static str>),
}

/// Filters and position of `GET /v1/orders`.
#[derive(Debug, Clone, Default)]
pub struct OrderPage {
    pub state: Option<String>,
    pub updated_since: Option<Timestamp>,
    /// After this `(position, id)` (an `OrderView::position` and its id).
    pub after: Option<(String, i64)>,
    pub limit: i64,
}

struct PagedRow {
    row: ViewRow,
    position: String,
}

impl<'r, R: sqlx::Row> sqlx::FromRow<'r, R> for PagedRow
where
    &'r str: sqlx::ColumnIndex<R>,
    ViewRow: sqlx::FromRow<'r, R>,
    String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    fn from_row(row: &'r R) -> Result<Self, sqlx::Error> {
        Ok(PagedRow {
            row: ViewRow::from_row(row)?,
            position: row.try_get("position")?,
        })
    }
}

impl ViewRow {
    fn view(self) -> OrderView {
        OrderView {
            id: self.id,
            order_ref: self.order_ref,
            chain: self.chain,
            pay_to: self.pay_to,
            asset: self.asset,
            amount_due: self.amount_due,
            amount_paid: self.amount_paid,
            state: self.state,
            tx_hash: self.tx_hash,
            log_index: self.log_index,
            block_number: self.block_number,
            block_hash: self.block_hash,
            expires_at: ms_text(self.expires_ms),
            created_at: ms_text(self.created_ms),
            state_changed_at: ms_text(self.changed_ms),
            updated_at: ms_text(self.updated_ms),
            reference: self.reference,
            position: None,
        }
    }
}

impl Store {
    /// Multi-row inserts, in chunks (demo, tests, benchmarks; feature `demo`: the daemon
    /// never inserts an order).
    #[cfg(feature = "demo")]
    pub async fn insert_orders(&self, orders: &[NewOrder]) -> Result<(), StoreError> {
        if orders.is_empty() {
            return Ok(());
        }
        const DOING: &str = "insert orders";
        dispatch!(self, p => {
            let mut tx = counted(p)
                .begin_with(D::BEGIN_WRITE)
                .await
                .map_err(|e| db_error(DOING, e))?;
            for chunk in orders.chunks(D::INSERT_ROWS) {
                let mut qb = sqlx::QueryBuilder::<D>::new(
                    "INSERT INTO orders (order_ref, chain, pay_to, asset, amount_due) ",
                );
                qb.push_values(chunk, |mut b, o| {
                    b.push_bind(o.order_ref.as_str())
                        .push_bind(o.chain.as_str())
                        .push_bind(o.pay_to.as_str())
                        .push_bind(o.asset.as_str())
                        .push_bind(o.amount_due.to_string())
                        .push_unseparated(D::AMOUNT_CAST);
                });
                qb.build()
                    .execute(counted(&mut *tx))
                    .await
                    .map_err(|e| db_error(DOING, e))?;
            }
            counted(tx).commit().await.map_err(|e| db_error(DOING, e))
        })
    }

    /// Dates every order's creation at `created` (the demo's shop took its orders before the
    /// sandbox chain's first block; feature `demo`: the daemon never changes an order's age).
    #[cfg(feature = "demo")]
    pub async fn backdate_orders(&self, created: Timestamp) -> Result<(), StoreError> {
        let done = dispatch!(self, p => {
            let sql = format!("UPDATE orders SET created_at = {}", D::ts(1));
            sqlx::query(&sql)
                .bind(sqlite_ts(created))
                .execute(counted(p))
                .await
                .map(|_| ())
        });
        done.map_err(|e| db_error("date the orders", e))
    }

    /// Registers `orders`, `REGISTER_BATCH` per transaction; one outcome per order, in order.
    /// A ref given twice is created once and compared the second time.
    pub async fn register_orders(
        &self,
        orders: &[ExpectedOrder],
        retries: &super::Retries,
    ) -> Result<Vec<Registered>, StoreError> {
        let mut out = Vec::with_capacity(orders.len());
        for batch in orders.chunks(REGISTER_BATCH) {
            let (inserted, rows) = dispatch!(self, p => D::register_batch(p, batch, retries).await)
                .map_err(|e| db_error("register orders", e))?;
            let mut new: HashSet<String> = inserted.into_iter().collect();
            let stored: HashMap<String, OrderView> = rows
                .into_iter()
                .map(|r| (r.order_ref.clone(), r.view()))
                .collect();
            for o in batch {
                let Some(view) = stored.get(&o.order_ref).cloned() else {
                    return Err(StoreError::Invalid(format!(
                        "order {:?} was neither inserted nor found (deleted meanwhile?)",
                        o.order_ref
                    )));
                };
                if new.remove(&o.order_ref) {
                    out.push(Registered::Created(view));
                    continue;
                }
                let expires_at = view
                    .expires_at
                    .as_deref()
                    .and_then(|t| t.parse::<Timestamp>().ok());
                let diff = o.differences(&StoredOrder {
                    chain: &view.chain,
                    pay_to: &view.pay_to,
                    asset: &view.asset,
                    amount_due: &view.amount_due,
                    expires_at,
                    reference: view.reference.as_deref(),
                });
                out.push(if diff.is_empty() {
                    Registered::Same(view)
                } else {
                    Registered::Conflict(view, diff)
                });
            }
        }
        Ok(out)
    }

    /// The payments credited to an order, in chain order.
    pub async fn order_payments(&self, order_id: i64) -> Result<Vec<PaymentView>, StoreError> {
        dispatch!(self, p => {
            let sql = format!(
                "SELECT chain, tx_hash, log_index, {} AS amount, block_number, block_hash, \
                 state, source, provider, {} AS created_at, {} AS reorged_at \
                 FROM payrecon_payments WHERE order_id = {} \
                 ORDER BY block_number, log_index, id",
                D::amount_text("amount"),
                D::ts_text("created_at"),
                D::ts_text("reorged_at"),
                D::p(1)
            );
            sqlx::query_as(&sql).bind(order_id).fetch_all(counted(p)).await
        })
        .map_err(|e| db_error("read an order's payments", e))
    }

    /// An order's transitions (the audit), oldest first: the console's timeline.
    pub async fn order_transitions(
        &self,
        order_id: i64,
    ) -> Result<Vec<TransitionView>, StoreError> {
        dispatch!(self, p => {
            let sql = format!(
                "SELECT from_state, to_state, source, provider, run_id, {} AS created_at \
                 FROM payrecon_transitions WHERE order_id = {} ORDER BY id",
                D::ts_text("created_at"),
                D::p(1)
            );
            sqlx::query_as(&sql).bind(order_id).fetch_all(counted(p)).await
        })
        .map_err(|e| db_error("read an order's transitions", e))
    }

    /// One order by its ref.
    pub async fn order_view(&self, order_ref: &str) -> Result<Option<OrderView>, StoreError> {
        let row: Option<ViewRow> = dispatch!(self, p => {
            let sql = format!(
                "SELECT {} FROM orders o WHERE o.order_ref = {}",
                view_columns::<D>(),
                D::p(1)
            );
            sqlx::query_as(&sql).bind(order_ref).fetch_optional(counted(p)).await
        })
        .map_err(|e| db_error("read an order", e))?;
        Ok(row.map(ViewRow::view))
    }

    /// A page of orders in `(updated_at, id)` order: those matching `page`'s filters after its
    /// position, at most `page.limit`. Each view's `position` is where the next page starts.
    pub async fn order_page(&self, page: &OrderPage) -> Result<Vec<OrderView>, StoreError> {
        let rows: Vec<PagedRow> = dispatch!(self, pool => {
            let p = D::p;
            let mut clauses = vec!["o.payrecon_updated_at IS NOT NULL".to_string()];
            let mut binds: Vec<String> = Vec::new();
            if let Some(s) = &page.state {
                binds.push(s.clone());
                clauses.push(format!("o.state = {}", p(binds.len())));
            }
            if let Some(t) = page.updated_since {
                binds.push(sqlite_ts(t));
                clauses.push(format!("o.payrecon_updated_at >= {}", D::ts(binds.len())));
            }
            let mut after_id = None;
            if let Some((pos, id)) = &page.after {
                if !D::position_ok(pos) {
                    return Err(StoreError::Invalid(
                        "cursor: not a position of this database".into(),
                    ));
                }
                binds.push(pos.clone());
                after_id = Some(*id);
                // A row value: one range of the (payrecon_updated_at, id) index.
                clauses.push(format!(
                    "(o.payrecon_updated_at, o.id) > ({t}, {id})",
                    t = D::position_param(binds.len()),
                    id = p(binds.len() + 1)
                ));
            }
            let limit = p(binds.len() + usize::from(after_id.is_some()) + 1);
            let sql = format!(
                "SELECT {cols}, {pos} AS position FROM orders o WHERE {w} \
                 ORDER BY o.payrecon_updated_at, o.id LIMIT {limit}",
                cols = view_columns::<D>(),
                pos = D::position("o.payrecon_updated_at"),
                w = clauses.join(" AND "),
            );
            let mut q = sqlx::query_as(&sql);
            for b in &binds {
                q = q.bind(b);
            }
            if let Some(id) = after_id {
                q = q.bind(id);
            }
            q.bind(page.limit).fetch_all(counted(pool)).await
        })
        .map_err(|e| db_error("list orders", e))?;
        Ok(rows
            .into_iter()
            .map(|r| {
                let mut v = r.row.view();
                v.position = Some(r.position);
                v
            })
            .collect())
    }
}
