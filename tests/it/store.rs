//! The store against real SQLite and real PostgreSQL: schema, batched lookups, resend
//! claims, runs and findings (`store/records.rs`). Applying transitions, and racing them, is in
//! `store/apply.rs`.

mod apply;
mod balances;
mod batches;
mod blocks;
mod locks;
mod migrations;
pub(crate) mod payments;
mod plans;
mod records;

use std::time::Duration;

use payrecon::domain::{Attach, BlockRef, PaymentKey, PlannedTransition, State, TxHash, U256};
use payrecon::store::{ApplyContext, NewOrder, Source, Store};

use crate::support;
use payrecon_testkit::inspect::Inspect;

pub const USDT: &str = "0xdac17f958d2ee523a2206206994597c13d831ec7";

pub fn addr(n: u64) -> String {
    format!("0x{n:040x}")
}

pub fn hash(n: u64) -> String {
    format!("0x{n:064x}")
}

pub fn key(n: u64, log_index: i64) -> PaymentKey {
    PaymentKey {
        chain: "ethereum".into(),
        tx_hash: TxHash::parse(&hash(n)).unwrap(),
        log_index,
    }
}

pub fn new_order(order_ref: &str, pay_to: u64, amount: u64) -> NewOrder {
    NewOrder {
        order_ref: order_ref.into(),
        chain: "ethereum".into(),
        pay_to: addr(pay_to),
        asset: USDT.into(),
        amount_due: U256::from(amount),
    }
}

pub fn slot(pay_to: u64) -> (String, String, String) {
    ("ethereum".into(), addr(pay_to), USDT.into())
}

pub fn ctx() -> ApplyContext {
    ApplyContext {
        source: Source::Reconcile,
        provider: "cg".into(),
        run_id: "run-1".into(),
        events: false,
        retries: Default::default(),
    }
}

/// A connected, migrated store.
pub async fn open(url: &str) -> Store {
    let store = Store::connect(url, 4).await.expect("connect");
    store.migrate().await.expect("migrate");
    store
}

/// Runs raw SQL as the merchant's application would.
pub async fn exec(store: &Store, sql: &str) {
    payrecon_testkit::on_pool!(store, p => sqlx::query(sql).execute(p).await.map(|_| ()))
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
}

pub async fn id_of(store: &Store, order_ref: &str) -> i64 {
    store.order_by_ref(order_ref).await.unwrap().unwrap().id
}

/// A transition to `to`, attaching `attach` (tx n, log index, amount) when given.
pub async fn plan(
    store: &Store,
    order_ref: &str,
    to: State,
    attach: Option<(u64, i64, u64)>,
) -> PlannedTransition {
    let snap = store.order_by_ref(order_ref).await.unwrap().unwrap();
    PlannedTransition {
        order_id: snap.id,
        order_ref: order_ref.into(),
        from: snap.state,
        to,
        attach: attach.map(|(n, li, amount)| Attach {
            key: key(n, li),
            amount: U256::from(amount),
            block: BlockRef {
                number: 1000 + n,
                hash: hash(5000 + n),
            },
        }),
        credit: None,
    }
}

/// Column names of `table`, in order.
async fn columns(store: &Store, table: &str) -> Vec<String> {
    match store {
        Store::Sqlite(p) => {
            sqlx::query_scalar("SELECT name FROM pragma_table_info(?1) ORDER BY cid")
                .bind(table)
                .fetch_all(p)
                .await
                .unwrap()
        }
        Store::Postgres(p) => sqlx::query_scalar(
            "SELECT column_name::text FROM information_schema.columns \
             WHERE table_name = $1 AND table_schema = current_schema() ORDER BY ordinal_position",
        )
        .bind(table)
        .fetch_all(p)
        .await
        .unwrap(),
        Store::MySql(p) => sqlx::query_scalar(
            "SELECT CAST(column_name AS CHAR) FROM information_schema.columns \
             WHERE table_name = ? AND table_schema = DATABASE() ORDER BY ordinal_position",
        )
        .bind(table)
        .fetch_all(p)
        .await
        .unwrap(),
    }
}

#[tokio::test]
async fn migrate_is_idempotent_and_creates_every_table() {
    let (_dir, urls) = support::all_backends().await;
    for url in &urls {
        let store = open(url).await;
        store.migrate().await.expect("second migrate");
        store.ping().await.expect("ping");
        for table in [
            "orders",
            "payrecon_transitions",
            "payrecon_findings",
            "payrecon_runs",
            "payrecon_resends",
            "payrecon_webhook_events",
            "payrecon_leases",
            "payrecon_payments",
        ] {
            assert_eq!(store.count(table).await.unwrap(), 0, "{url} {table}");
        }
        assert!(store.count("pg_user").await.is_err());
        assert_eq!(
            columns(&store, "orders").await,
            [
                "id",
                "order_ref",
                "chain",
                "pay_to",
                "asset",
                "amount_due",
                "tx_hash",
                "log_index",
                "amount_paid",
                "block_number",
                "block_hash",
                "state",
                "state_changed_at",
                "created_at",
                "expires_at",
                "payrecon_updated_at",
                "reference"
            ],
            "{url}"
        );
        assert_eq!(
            columns(&store, "payrecon_runs").await.join(","),
            "id,trigger,started_at,finished_at,since,until,status,checked,gaps,applied,\
             resends_requested,error,providers"
        );
        assert_eq!(
            columns(&store, "payrecon_findings").await.join(","),
            "id,run_id,provider,kind,chain,tx_hash,log_index,order_ref,local_state,\
             observed_state,action,detail,created_at"
        );
        // The state CHECK holds on both backends.
        store
            .insert_orders(&[new_order("A-1", 1, 1)])
            .await
            .unwrap();
        let bad = "UPDATE orders SET state = 'paid' WHERE order_ref = 'A-1'";
        let refused =
            payrecon_testkit::on_pool!(&store, p => sqlx::query(bad).execute(p).await.is_err());
        assert!(refused, "{url}");
        let expected = if url.starts_with("sqlite") {
            "sqlite"
        } else if url.starts_with("mysql") {
            "mysql"
        } else {
            "postgres"
        };
        assert_eq!(store.backend_name(), expected);
    }
}

#[tokio::test]
async fn load_view_finds_rows_by_key_and_unpaid_orders_by_slot_oldest_first() {
    let (_dir, urls) = support::all_backends().await;
    for url in &urls {
        let store = open(url).await;
        let orders = [
            new_order("A-1", 1, 100),
            new_order("A-2", 1, 200),
            new_order("A-3", 1, 300),
            new_order("B-1", 2, 400),
            new_order("C-1", 3, 500),
            new_order("BAD-1", 1, 600),
            new_order("BAD-2", 9, 700),
        ];
        store.insert_orders(&orders).await.unwrap();
        // A-3 is the oldest although its id is the highest.
        exec(
            &store,
            // No `T…Z`: MariaDB's strict DATETIME refuses it, and every backend reads this.
            "UPDATE orders SET created_at = '2000-01-01 00:00:00' WHERE order_ref = 'A-3'",
        )
        .await;
        // C-1 is paid; BAD-1 is unpaid but unreadable (negative block number).
        let t = plan(&store, "C-1", State::Pending, Some((7, 3, 500))).await;
        store.apply(&[t], &ctx()).await.unwrap();
        exec(
            &store,
            "UPDATE orders SET block_number = -5, block_hash = 'x' WHERE order_ref = 'BAD-1'",
        )
        .await;
        // BAD-2 holds a key whose block number is negative: skipped in by_key too.
        let t = plan(&store, "BAD-2", State::Pending, Some((8, 0, 700))).await;
        store.apply(&[t], &ctx()).await.unwrap();
        exec(
            &store,
            "UPDATE orders SET block_number = -1 WHERE order_ref = 'BAD-2'",
        )
        .await;

        let keys = [key(7, 3), key(7, 4), key(8, 0), key(7, 3)];
        let slots = [slot(1), slot(2), slot(4), slot(1)];
        let view = store.load_view(&keys, &slots).await.unwrap();

        assert_eq!(view.by_key.len(), 1, "{url}");
        let c1 = &view.by_key[&key(7, 3)];
        assert_eq!(c1.order_ref, "C-1");
        assert_eq!(c1.state, State::Pending);
        assert_eq!(c1.amount_due, U256::from(500u64));
        assert_eq!(c1.amount_paid, Some(U256::from(500u64)));
        assert_eq!(c1.block.as_ref().map(|b| b.number), Some(1007));

        let refs = |s| -> Vec<String> {
            view.unpaid
                .get(&slot(s))
                .map(|v| v.iter().map(|r| r.order_ref.clone()).collect())
                .unwrap_or_default()
        };
        assert_eq!(refs(1), ["A-3", "A-1", "A-2"], "{url}");
        assert_eq!(refs(2), ["B-1"], "{url}");
        assert!(refs(4).is_empty());
        assert_eq!(view.unpaid[&slot(1)][1].amount_due, U256::from(100u64));

        let empty = store.load_view(&[], &[]).await.unwrap();
        assert!(empty.by_key.is_empty() && empty.unpaid.is_empty());
    }
}

#[tokio::test]
async fn load_view_on_sqlite_skips_an_amount_that_is_not_a_number() {
    let (_dir, url) = support::sqlite_url();
    let store = open(&url).await;
    store
        .insert_orders(&[new_order("OK-1", 1, 10), new_order("BAD-1", 1, 20)])
        .await
        .unwrap();
    exec(
        &store,
        "UPDATE orders SET amount_due = 'abc' WHERE order_ref = 'BAD-1'",
    )
    .await;
    let view = store.load_view(&[], &[slot(1)]).await.unwrap();
    let refs: Vec<_> = view.unpaid[&slot(1)]
        .iter()
        .map(|r| r.order_ref.as_str())
        .collect();
    assert_eq!(refs, ["OK-1"]);
}

#[tokio::test]
async fn attached_keys_reports_only_keys_some_order_holds() {
    let (_dir, urls) = support::all_backends().await;
    for url in &urls {
        let store = open(url).await;
        store
            .insert_orders(&[new_order("A-1", 1, 10), new_order("A-2", 1, 10)])
            .await
            .unwrap();
        let t = plan(&store, "A-1", State::Pending, Some((1, 2, 10))).await;
        store.apply(&[t], &ctx()).await.unwrap();
        let got = store
            .attached_keys(&[key(1, 2), key(1, 3), key(2, 2)])
            .await
            .unwrap();
        assert_eq!(got.len(), 1, "{url}");
        assert!(got.contains(&key(1, 2)));
        assert!(store.attached_keys(&[]).await.unwrap().is_empty());
        // More keys than one query takes (chunked), the held one near the end.
        let many: Vec<_> = (10..12_010).map(|n| key(n, 0)).chain([key(1, 2)]).collect();
        let got = store.attached_keys(&many).await.unwrap();
        assert_eq!(got.into_iter().collect::<Vec<_>>(), [key(1, 2)], "{url}");
        let view = store.load_view(&many, &[]).await.unwrap();
        assert_eq!(view.by_key[&key(1, 2)].order_ref, "A-1");
        assert_eq!(view.by_key.len(), 1);
    }
}

#[tokio::test]
async fn sweep_page_walks_keyed_pending_and_confirmed_rows_by_id() {
    let (_dir, urls) = support::all_backends().await;
    for url in &urls {
        let store = open(url).await;
        let plan_of = [
            ("S-1", Some(State::Pending)),
            ("S-2", None),
            ("S-3", Some(State::Confirmed)),
            ("S-4", Some(State::Final)),
            ("S-5", Some(State::Pending)),
            ("S-6", Some(State::Pending)), // made unreadable below
            ("S-7", Some(State::Confirmed)),
            ("S-8", None), // pending without a key (merchant wrote only the state)
        ];
        let orders: Vec<_> = plan_of.iter().map(|(r, _)| new_order(r, 1, 10)).collect();
        store.insert_orders(&orders).await.unwrap();
        for (n, (r, to)) in plan_of.iter().enumerate() {
            if let Some(to) = to {
                let t = plan(&store, r, *to, Some((n as u64 + 1, 0, 10))).await;
                store.apply(&[t], &ctx()).await.unwrap();
            }
        }
        crate::support::set_state_raw(&store, "S-8", State::Pending)
            .await
            .unwrap();
        exec(
            &store,
            "UPDATE orders SET tx_hash = 'nothex' WHERE order_ref = 'S-6'",
        )
        .await;

        let mut pages = Vec::new();
        let mut after = 0;
        loop {
            let page = store.sweep_page(after, 2).await.unwrap();
            if page.is_empty() {
                break;
            }
            after = page.last().unwrap().id;
            pages.push(page.iter().map(|r| r.order_ref.clone()).collect::<Vec<_>>());
        }
        assert_eq!(pages, vec![vec!["S-1", "S-3"], vec!["S-5", "S-7"]], "{url}");
        let first = store.sweep_page(0, 1).await.unwrap();
        assert_eq!(first[0].key, Some(key(1, 0)));
        assert_eq!(first[0].state, State::Pending);
    }
}

#[tokio::test]
async fn connect_errors_never_show_the_password() {
    let secret = "Sup3rS3cretPw";
    let mut urls = vec![
        format!("postgres://payrecon:{secret}@nonexistent-host.invalid:5432/ledger"),
        format!("mysql://payrecon:{secret}@localhost/ledger"),
    ];
    if let Ok(base) = std::env::var("PAYRECON_TEST_PG_URL") {
        // A real server, a database that does not exist.
        let (prefix, _) = base.rsplit_once('/').unwrap();
        let prefix = prefix.replacen("://postgres@", &format!("://postgres:{secret}@"), 1);
        urls.push(format!("{prefix}/payrecon_no_such_db"));
    } else {
        support::skip("PAYRECON_TEST_PG_URL is not set (PostgreSQL connect error)");
    }
    for url in &urls {
        let started = std::time::Instant::now();
        let err = match Store::connect(url, 1).await {
            Ok(_) => panic!("{url} connected"),
            Err(e) => e.to_string(),
        };
        assert!(!err.contains(secret), "{err}");
        assert!(err.contains("***"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(15), "{err}");
    }
}
