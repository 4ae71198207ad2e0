//! The MariaDB/MySQL schema (`migrations/mysql`; docs/design/backends.md, "MariaDB/MySQL") on the
//! machine's real MariaDB: applied by sqlx to a fresh database and again with nothing to do, over a
//! merchant's own `orders` table, and what it refuses (amounts of 10^65 base units or more,
//! negative amounts, unknown states); the least privileges docs/operations.md names.

use sqlx::{Connection, MySqlConnection, Row};

use crate::support::mysql_url;

/// Every table PostgreSQL's and SQLite's migrations create, in the order listed here.
const TABLES: [&str; 13] = [
    "orders",
    "payrecon_balances",
    "payrecon_events",
    "payrecon_exceptions",
    "payrecon_findings",
    "payrecon_leases",
    "payrecon_list_reads",
    "payrecon_payments",
    "payrecon_resends",
    "payrecon_runs",
    "payrecon_scan_cursors",
    "payrecon_transitions",
    "payrecon_webhook_events",
];

async fn migrate(conn: &mut MySqlConnection) -> Result<(), sqlx::migrate::MigrateError> {
    let migrator = sqlx::migrate::Migrator::new(std::path::Path::new("migrations/mysql")).await?;
    migrator.run(conn).await
}

async fn tables(conn: &mut MySqlConnection) -> Vec<String> {
    sqlx::query(
        "SELECT CAST(table_name AS CHAR) FROM information_schema.tables \
         WHERE table_schema = DATABASE() AND table_name <> '_sqlx_migrations' ORDER BY 1",
    )
    .fetch_all(conn)
    .await
    .expect("list tables")
    .iter()
    .map(|r| r.get::<String, _>(0))
    .collect()
}

/// An order with `amount_due` as given (decimal text); the server's error otherwise.
async fn insert_order(
    conn: &mut MySqlConnection,
    order_ref: &str,
    amount_due: &str,
    state: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO orders (order_ref, chain, pay_to, asset, amount_due, state) \
         VALUES (?, 'ethereum', '0xabc', 'native', CAST(? AS DECIMAL(65,0)), ?)",
    )
    .bind(order_ref)
    .bind(amount_due)
    .bind(state)
    .execute(conn)
    .await
    .map(|_| ())
}

#[tokio::test]
async fn the_schema_applies_to_a_fresh_database_and_a_second_time_changes_nothing() {
    let Some(url) = mysql_url().await else { return };
    let mut conn = MySqlConnection::connect(&url).await.expect("connect");
    migrate(&mut conn).await.expect("first migration");
    assert_eq!(tables(&mut conn).await, TABLES);
    let applied: Vec<(i64, bool)> =
        sqlx::query_as("SELECT version, success FROM _sqlx_migrations ORDER BY version")
            .fetch_all(&mut conn)
            .await
            .expect("read _sqlx_migrations");
    assert_eq!(
        applied,
        [(1, true), (2, true), (3, true), (4, true), (5, true)]
    );
    insert_order(&mut conn, "A-1", "25000000", "unpaid")
        .await
        .expect("an order");
    migrate(&mut conn)
        .await
        .expect("second migration: nothing to do");
    let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM orders")
        .fetch_one(&mut conn)
        .await
        .expect("count orders");
    assert_eq!(n, 1, "the second run keeps the order");
    // The file itself runs again on a migrated database without an error or a change (every
    // statement guarded), which is what makes a manual re-run after a failure safe.
    let sql = std::fs::read_to_string("migrations/mysql/0001_init.sql").expect("read migration");
    sqlx::raw_sql(&sql)
        .execute(&mut conn)
        .await
        .expect("the file again");
    assert_eq!(tables(&mut conn).await, TABLES);
}

#[tokio::test]
async fn amounts_up_to_65_digits_are_kept_exactly_and_larger_or_negative_ones_are_refused() {
    let Some(url) = mysql_url().await else { return };
    let mut conn = MySqlConnection::connect(&url).await.expect("connect");
    migrate(&mut conn).await.expect("migration");
    let largest = "9".repeat(65);
    insert_order(&mut conn, "big", &largest, "unpaid")
        .await
        .expect("10^65 - 1 base units fit");
    let back: String =
        sqlx::query_scalar("SELECT CAST(amount_due AS CHAR) FROM orders WHERE order_ref = 'big'")
            .fetch_one(&mut conn)
            .await
            .expect("read back");
    assert_eq!(back, largest, "read back digit for digit");

    let too_large = format!("1{}", "0".repeat(65));
    let err = insert_order(&mut conn, "too-large", &too_large, "unpaid")
        .await
        .expect_err("10^65 base units do not fit");
    let code = err
        .as_database_error()
        .and_then(|e| e.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>())
        .map(|e| e.number());
    assert_eq!(code, Some(1264), "out of range, not clamped: {err}");

    let err = insert_order(&mut conn, "negative", "-1", "unpaid")
        .await
        .expect_err("a negative amount");
    assert!(err.to_string().contains("orders_amount_due_check"), "{err}");
    let err = insert_order(&mut conn, "odd", "1", "paid")
        .await
        .expect_err("an unknown state");
    assert!(err.to_string().contains("orders_state_check"), "{err}");
    let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM orders")
        .fetch_one(&mut conn)
        .await
        .expect("count");
    assert_eq!(n, 1, "only the order that fits was written");
}

#[tokio::test]
async fn the_schema_joins_a_merchants_own_orders_table_and_keeps_its_rows() {
    let Some(url) = mysql_url().await else { return };
    let mut conn = MySqlConnection::connect(&url).await.expect("connect");
    // The shop's table, as its checkout wrote it (no expires_at, no payrecon_updated_at).
    sqlx::raw_sql(
        "CREATE TABLE orders (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, \
         order_ref VARCHAR(255) NOT NULL UNIQUE, chain VARCHAR(64) NOT NULL, \
         pay_to VARCHAR(128) NOT NULL, asset VARCHAR(128) NOT NULL, \
         amount_due DECIMAL(65,0) NOT NULL, tx_hash VARCHAR(128) NULL, log_index BIGINT NULL, \
         amount_paid DECIMAL(65,0) NULL, block_number BIGINT NULL, block_hash VARCHAR(128) NULL, \
         state VARCHAR(16) NOT NULL DEFAULT 'unpaid', state_changed_at DATETIME(6) NULL, \
         created_at DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)), \
         UNIQUE KEY (chain, tx_hash, log_index)); \
         INSERT INTO orders (order_ref, chain, pay_to, asset, amount_due) \
         VALUES ('SHOP-1', 'ethereum', '0xabc', 'native', 25000000);",
    )
    .execute(&mut conn)
    .await
    .expect("the shop's table");
    migrate(&mut conn)
        .await
        .expect("migration over the shop's table");
    assert_eq!(tables(&mut conn).await, TABLES);
    let row = sqlx::query(
        "SELECT CAST(order_ref AS CHAR), CAST(amount_due AS CHAR), expires_at IS NULL, \
         payrecon_updated_at IS NOT NULL FROM orders",
    )
    .fetch_one(&mut conn)
    .await
    .expect("the shop's order");
    assert_eq!(row.get::<String, _>(0), "SHOP-1");
    assert_eq!(row.get::<String, _>(1), "25000000");
    assert_eq!(
        row.get::<i64, _>(2),
        1,
        "expires_at added, NULL: never expires"
    );
    assert_eq!(row.get::<i64, _>(3), 1, "payrecon_updated_at backfilled");
    // The triggers keep payrecon_updated_at for the shop's own writes too.
    sqlx::query("UPDATE orders SET payrecon_updated_at = '2000-01-01 00:00:00'")
        .execute(&mut conn)
        .await
        .expect("set an old time");
    sqlx::query("UPDATE orders SET state = 'pending' WHERE order_ref = 'SHOP-1'")
        .execute(&mut conn)
        .await
        .expect("the shop's update");
    let moved: i64 = sqlx::query_scalar(
        "SELECT payrecon_updated_at > '2020-01-01' FROM orders WHERE order_ref = 'SHOP-1'",
    )
    .fetch_one(&mut conn)
    .await
    .expect("read");
    assert_eq!(moved, 1, "the update trigger stamped the row");
}

/// The grants docs/operations.md gives the user that creates and upgrades the schema
/// (`payrecon migrate`).
const MIGRATE_GRANTS: &str =
    "SELECT, INSERT, UPDATE, DELETE, CREATE, ALTER, INDEX, REFERENCES, TRIGGER";
/// The grants it gives the user payrecon runs as, with `migrate = false`.
const RUN_GRANTS: &str = "SELECT, INSERT, UPDATE, DELETE";

/// docs/operations.md's two users on the shop's database: the running one (SELECT, INSERT,
/// UPDATE, DELETE) cannot create the schema, the migrating one can (tables, indexes,
/// triggers), and then the running one registers an order and runs a reconciliation that
/// applies every missing payment, with `migrate = false`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_documented_least_privileges_are_enough() {
    use crate::cli::harness::{payrecon, World};
    use payrecon::store::Store;
    let Some(url) = mysql_url().await else {
        return;
    };
    let (server, db) = url.rsplit_once('/').unwrap();
    let host = server.rsplit_once('@').unwrap().1;
    let id = &db[db.len() - 10..];
    let (migrator, runner) = (format!("prm_{id}"), format!("prr_{id}"));
    let mut root = MySqlConnection::connect(&url).await.unwrap();
    for (user, grants) in [(&migrator, MIGRATE_GRANTS), (&runner, RUN_GRANTS)] {
        for sql in [
            format!("CREATE USER '{user}'@'127.0.0.1' IDENTIFIED BY 'pw-{id}'"),
            format!("GRANT {grants} ON `{db}`.* TO '{user}'@'127.0.0.1'"),
        ] {
            sqlx::query(&sql).execute(&mut root).await.unwrap();
        }
    }
    let as_user = |u: &str| format!("mysql://{u}:pw-{id}@{host}/{db}");
    // MySQL logs binary by default: its DBA lets the migrating user create triggers, as
    // docs/operations.md says (MariaDB's default has no binary log).
    let (log_bin, trusted): (i64, i64) =
        sqlx::query_as("SELECT @@GLOBAL.log_bin, @@GLOBAL.log_bin_trust_function_creators")
            .fetch_one(&mut root)
            .await
            .unwrap();
    if log_bin == 1 && trusted == 0 {
        sqlx::query("SET GLOBAL log_bin_trust_function_creators = 1")
            .execute(&mut root)
            .await
            .unwrap();
    }

    let run_store = Store::connect(&as_user(&runner), 2).await.unwrap();
    let refused = run_store.migrate().await.unwrap_err().to_string();
    assert!(refused.contains("denied"), "{refused}");
    assert!(
        !refused.contains(&format!("pw-{id}")),
        "no password: {refused}"
    );
    // The refused migration held sqlx's migration lock (`GET_LOCK`) on a pooled connection
    // and the migrating user below waited for it forever; it is released with the refusal,
    // while the runner's pool is still open.
    let mut w = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        World::new(payrecon_testkit::tmp::dir().unwrap(), as_user(&migrator)),
    )
    .await
    .expect("the migrating user migrates while the refused runner's pool is open");
    run_store.close().await;
    w.missing_payments(0, 3).await;
    w.db_url = as_user(&runner);
    let toml = payrecon_testkit::sandbox::config_toml(&w.db_url, &w.cg_url, &w.rpc_url, "")
        .replacen("[database]\n", "[database]\nmigrate = false\n", 1);
    let config = w.write("config.toml", &toml);
    let add = payrecon(
        &config,
        &[
            "orders",
            "add",
            "--ref",
            "LP-1",
            "--chain",
            "ethereum",
            "--pay-to",
            "0x00000000000000000000000000000000000000aa",
            "--asset",
            "native",
            "--amount",
            "5",
        ],
    )
    .await;
    add.assert_code(0);
    let out = payrecon(&config, &["run", "--format", "json"]).await;
    out.assert_code(0);
    assert_eq!(out.json()["totals"]["applied"], 3, "{}", out.stdout);
    assert_eq!(w.count("orders").await, 4);

    if log_bin == 1 && trusted == 0 {
        sqlx::query("SET GLOBAL log_bin_trust_function_creators = 0")
            .execute(&mut root)
            .await
            .unwrap();
    }
    for user in [&migrator, &runner] {
        let sql = format!("DROP USER '{user}'@'127.0.0.1'");
        sqlx::query(&sql).execute(&mut root).await.unwrap();
    }
}

/// The app takes the largest amount its database keeps from the store, for both of the
/// places a chain's amount enters the ledger: a transfer (`ChainSettings::max_amount`) and
/// an order's sum of payments (`AmountPolicy::max_paid`). None but on MariaDB/MySQL.
#[tokio::test]
async fn the_app_refuses_what_its_database_cannot_keep() {
    crate::reconcile::on_backends(|url| async move {
        let Some(w) = crate::reconcile::World::start(&url).await else {
            return;
        };
        let max = w.store().max_amount();
        assert_eq!(max.is_some(), url.starts_with("mysql"), "{url}");
        let engine = &w.app.engine;
        assert_eq!(engine.amounts.max_paid, max, "{url}");
        assert_eq!(
            engine.chains["ethereum"].settings().max_amount,
            max,
            "{url}"
        );
    })
    .await;
}
