//! `payrecon_payments` (docs/reference.md §3) on every backend: the migration that gives every
//! paid order its payment row, a held credit and the top-up that completes it, the guard on the
//! amount before a credit, and a payment that can credit one order only.

use payrecon::domain::{Attach, BlockRef, NewPayment, PlannedTransition, State, U256};
use payrecon::store::Store;

use super::{hash, id_of, key};

mod credits;
mod exceptions;
mod migrations;

/// `(order_ref, tx_hash, log_index, amount, state, source)` of every payment row, by id.
pub async fn payments(store: &Store) -> Vec<(String, String, i64, String, String, String)> {
    let text = match store {
        Store::MySql(_) => "CHAR",
        _ => "TEXT",
    };
    let sql = format!(
        "SELECT CAST(o.order_ref AS {text}), p.tx_hash, p.log_index, CAST(p.amount AS {text}), \
         p.state, p.source FROM payrecon_payments p JOIN orders o ON o.id = p.order_id \
         ORDER BY p.id"
    );
    payrecon_testkit::on_pool!(store, p => sqlx::query_as(&sql).fetch_all(p).await).unwrap()
}

fn block(n: u64) -> BlockRef {
    BlockRef {
        number: 1000 + n,
        hash: hash(5000 + n),
    }
}

fn credit(n: u64, amount: u64, before: Option<u64>, after: u64) -> NewPayment {
    NewPayment {
        key: key(n, 0),
        amount: U256::from(amount),
        block: block(n),
        state: State::Final,
        paid_before: before.map(U256::from),
        paid_after: U256::from(after),
        amount_due: U256::from(25),
        block_time: None,
        held_late: false,
        merchant: false,
    }
}

async fn step(
    store: &Store,
    order_ref: &str,
    to: State,
    c: NewPayment,
    attach: Option<(u64, u64)>,
) -> PlannedTransition {
    PlannedTransition {
        order_id: id_of(store, order_ref).await,
        order_ref: order_ref.into(),
        from: State::Unpaid,
        to,
        attach: attach.map(|(n, paid)| Attach {
            key: key(n, 0),
            amount: U256::from(paid),
            block: block(n),
        }),
        credit: Some(c),
    }
}
