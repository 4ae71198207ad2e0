//! Locking where the server has row locks (PostgreSQL, MariaDB/MySQL): a deadlock between a
//! batch of transitions and the merchant's own transaction costs the batch one retry (counted
//! by the `store::Retries` it is given, bounded by the store's attempts) and it then lands once; on
//! MariaDB/MySQL payrecon's sessions run READ COMMITTED whatever the server's default, and a
//! gap lock the merchant's REPEATABLE READ takes on the payment key's unique index holds a
//! batch until the merchant commits.

use std::time::Duration;

use payrecon::domain::State;
use payrecon::store::{ApplyContext, ApplyOutcome, Retries};
use sqlx::{Connection, Executor};

use super::{ctx, id_of, new_order, open, plan};
use crate::support;
use payrecon_testkit::inspect::Inspect;

/// The merchant's application, in a transaction of its own connection.
enum Merchant {
    Pg(sqlx::PgConnection),
    My(sqlx::MySqlConnection),
}

impl Merchant {
    async fn begin(url: &str) -> Merchant {
        let mut m = if url.starts_with("mysql") {
            Merchant::My(sqlx::MySqlConnection::connect(url).await.unwrap())
        } else {
            Merchant::Pg(sqlx::PgConnection::connect(url).await.unwrap())
        };
        m.exec("BEGIN").await;
        m
    }

    async fn exec(&mut self, sql: &str) {
        let done = match self {
            Merchant::Pg(c) => c.execute(sql).await.map(|_| ()),
            Merchant::My(c) => c.execute(sql).await.map(|_| ()),
        };
        done.unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadlock_with_the_merchants_transaction_is_retried_once_and_the_batch_lands() {
    let (_dir, urls) = support::all_backends().await;
    for url in urls.iter().filter(|u| !u.starts_with("sqlite")) {
        let store = open(url).await;
        // Orders A and B, and 50 that the merchant's transaction changes first: the heavier
        // of the two, so that MariaDB picks payrecon's as the deadlock's victim (PostgreSQL
        // picks the one that has waited `deadlock_timeout`: payrecon's, which waits first).
        let mut orders = vec![
            new_order("L-A", 1, 25_000_000),
            new_order("L-B", 2, 25_000_000),
        ];
        orders.extend((0..50).map(|i| new_order(&format!("M-{i}"), 100 + i, 1)));
        store.insert_orders(&orders).await.unwrap();
        let (a, b) = (id_of(&store, "L-A").await, id_of(&store, "L-B").await);
        let batch = vec![
            plan(&store, "L-A", State::Final, Some((1, 0, 25_000_000))).await,
            plan(&store, "L-B", State::Final, Some((2, 0, 25_000_000))).await,
        ];

        let mut merchant = Merchant::begin(url).await;
        // By primary key range: under MariaDB's default REPEATABLE READ a scan of the whole
        // table would lock A and B too (the shop's session is not payrecon's).
        merchant
            .exec(&format!(
                "UPDATE orders SET asset = 'merchant' WHERE id > {b}"
            ))
            .await;
        merchant
            .exec(&format!("SELECT id FROM orders WHERE id = {b} FOR UPDATE"))
            .await;
        // The engine passes its `payrecon_database_retries_total` in; so does this test.
        let metrics = payrecon::metrics::Metrics::new(&[], &[]);
        let counted = ApplyContext {
            retries: Retries::to(&metrics.database_retries),
            ..ctx()
        };
        let applying = {
            let store = store.clone();
            tokio::spawn(async move { store.apply(&batch, &counted).await })
        };
        // payrecon locks A (its orders in id order), then waits for B.
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(!applying.is_finished(), "{url}: the batch waits for B");
        // The merchant now wants A: a cycle, and payrecon's transaction is rolled back.
        merchant
            .exec(&format!("SELECT id FROM orders WHERE id = {a} FOR UPDATE"))
            .await;
        merchant.exec("ROLLBACK").await;
        let out = tokio::time::timeout(Duration::from_secs(30), applying)
            .await
            .expect("the batch lands once the merchant is done")
            .unwrap()
            .unwrap();
        assert_eq!(
            out,
            vec![
                ApplyOutcome::Applied {
                    from: State::Unpaid
                };
                2
            ],
            "{url}"
        );
        assert_eq!(metrics.database_retries.get(), 1, "{url}: one retry");
        // And the operator sees it.
        let text = metrics.encode();
        let line = "payrecon_database_retries_total 1".to_string();
        assert!(
            text.lines().any(|l| l == line),
            "{url}: no {line:?} in\n{text}"
        );
        assert_eq!(
            store.count("payrecon_transitions").await.unwrap(),
            2,
            "{url}"
        );
        store.close().await;
    }
}

/// The merchant's code, in MariaDB's default REPEATABLE READ, looks for a payment key that no
/// order holds yet with a locking read: InnoDB locks the gap of the unique key `(chain,
/// tx_hash, log_index)` where the key would go. payrecon's batch writing that key waits for the
/// merchant's commit (payrecon's own READ COMMITTED takes no gap locks, but a write into a
/// locked gap waits) and then lands once. PostgreSQL locks no row that does not exist: there
/// the batch lands at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gap_lock_of_the_merchants_repeatable_read_holds_a_batch_until_it_commits() {
    let (_dir, urls) = support::all_backends().await;
    for url in urls.iter().filter(|u| !u.starts_with("sqlite")) {
        let store = open(url).await;
        store
            .insert_orders(&[new_order("G-A", 1, 25_000_000)])
            .await
            .unwrap();
        let batch = vec![plan(&store, "G-A", State::Final, Some((77, 0, 25_000_000))).await];
        let mut merchant = Merchant::begin(url).await;
        merchant
            .exec(&format!(
                "SELECT id FROM orders WHERE chain = 'ethereum' AND tx_hash = '{}' \
                 AND log_index = 0 FOR UPDATE",
                super::hash(77)
            ))
            .await;
        let metrics = payrecon::metrics::Metrics::new(&[], &[]);
        let counted = ApplyContext {
            retries: Retries::to(&metrics.database_retries),
            ..ctx()
        };
        let applying = {
            let store = store.clone();
            tokio::spawn(async move { store.apply(&batch, &counted).await })
        };
        let gap_locked = url.starts_with("mysql");
        if gap_locked {
            tokio::time::sleep(Duration::from_millis(500)).await;
            assert!(
                !applying.is_finished(),
                "{url}: the batch waits for the merchant's gap lock"
            );
            merchant.exec("COMMIT").await;
        }
        let out = tokio::time::timeout(Duration::from_secs(30), applying)
            .await
            .expect("the batch lands")
            .unwrap()
            .unwrap();
        if !gap_locked {
            merchant.exec("ROLLBACK").await;
        }
        assert_eq!(
            out,
            vec![ApplyOutcome::Applied {
                from: State::Unpaid
            }],
            "{url}"
        );
        assert_eq!(
            metrics.database_retries.get(),
            0,
            "{url}: a wait, not a retry"
        );
        let o = store.order_by_ref("G-A").await.unwrap().unwrap();
        assert_eq!(
            o.tx_hash.as_deref(),
            Some(super::hash(77).as_str()),
            "{url}"
        );
        assert_eq!(
            store.count("payrecon_transitions").await.unwrap(),
            1,
            "{url}"
        );
        store.close().await;
    }
}

#[tokio::test]
async fn mariadb_sessions_run_read_committed_whatever_the_servers_default() {
    let Some(url) = support::mysql_url().await else {
        return;
    };
    let store = open(&url).await;
    // MariaDB 10.x names the level `tx_isolation`; MySQL 8.0 and later `transaction_isolation`.
    let version = store.rows("SELECT VERSION()").await.unwrap();
    let mariadb = format!("{version:?}").contains("MariaDB");
    let level = if mariadb {
        "tx_isolation"
    } else {
        "transaction_isolation"
    };
    let rows = store
        .rows(&format!(
            "SELECT CAST(@@GLOBAL.{level} AS CHAR), CAST(@@SESSION.{level} AS CHAR), \
             CAST(@@SESSION.sql_mode AS CHAR)"
        ))
        .await
        .unwrap();
    let values: Vec<String> = rows[0]
        .iter()
        .map(|v| v.clone().unwrap_or_default())
        .collect();
    assert_eq!(
        values[0], "REPEATABLE-READ",
        "the server's default: {values:?}"
    );
    assert_eq!(values[1], "READ-COMMITTED", "{values:?}");
    assert!(values[2].contains("STRICT_ALL_TABLES"), "{values:?}");
}
