//! Registering a batch of expected orders on MariaDB/MySQL, which has no `RETURNING`: the refs
//! already taken are read first, under the batch's transaction, then the new ones inserted and
//! every order of the batch read back as the API shows it.

use std::collections::HashSet;

use sqlx::{MySql, MySqlPool};

use super::super::mysql_ts;
use crate::domain::ExpectedOrder;
use crate::store::rows::{counted, ViewRow};

/// How many times a registration batch runs when it races another for the same new refs.
pub(super) const REGISTER_ATTEMPTS: u32 = 5;

pub(super) async fn register_once(
    pool: &MySqlPool,
    batch: &[ExpectedOrder],
) -> Result<(Vec<String>, Vec<ViewRow>), sqlx::Error> {
    let mut tx = counted(pool).begin().await?;
    let mut qb = sqlx::QueryBuilder::<MySql>::new(
        "SELECT CAST(order_ref AS CHAR) FROM orders WHERE order_ref IN (",
    );
    let mut refs = qb.separated(", ");
    for o in batch {
        refs.push_bind(o.order_ref.as_str());
    }
    qb.push(")");
    let taken: HashSet<String> = qb
        .build_query_scalar()
        .fetch_all(counted(&mut *tx))
        .await?
        .into_iter()
        .collect();
    let mut fresh = HashSet::new();
    let new: Vec<&ExpectedOrder> = batch
        .iter()
        .filter(|o| !taken.contains(&o.order_ref) && fresh.insert(o.order_ref.as_str()))
        .collect();
    if !new.is_empty() {
        let mut qb = sqlx::QueryBuilder::<MySql>::new(
            "INSERT INTO orders (order_ref, chain, pay_to, asset, amount_due, expires_at, reference) ",
        );
        qb.push_values(&new, |mut b, o| {
            b.push_bind(o.order_ref.as_str())
                .push_bind(o.chain.as_str())
                .push_bind(o.pay_to.as_str())
                .push_bind(o.asset.as_str())
                .push_bind(o.amount_due.to_string())
                .push_bind(o.expires_at.map(mysql_ts))
                .push_bind(o.reference.as_deref());
        });
        qb.build().execute(counted(&mut *tx)).await?;
    }
    let rows = <MySql as crate::store::pool_sql::PoolSql>::read_views(&mut tx, batch).await?;
    counted(tx).commit().await?;
    Ok((new.iter().map(|o| o.order_ref.clone()).collect(), rows))
}
