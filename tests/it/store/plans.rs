//! Query plans that must not depend on table statistics. A merchant's `orders` may have just
//! been bulk-loaded, or live where autovacuum is off: PostgreSQL then plans from the table's
//! size alone, and a lookup that can match two partial indexes may take the wrong one.

use std::time::{Duration, Instant};

use payrecon::store::Store;
use sqlx::Connection;

use super::{addr, exec, open, slot, USDT};
use crate::support;

/// Index scans per index of this schema's `orders`, once the store's backends have flushed
/// their statistics (they do when they exit: the pool is closed first).
async fn index_scans(url: &str, index: &str) -> i64 {
    let mut conn = sqlx::PgConnection::connect(url).await.expect("connect");
    sqlx::query_scalar::<_, i64>(
        "SELECT coalesce(sum(idx_scan), 0)::bigint FROM pg_stat_user_indexes \
         WHERE schemaname = current_schema() AND indexrelname = $1",
    )
    .bind(index)
    .fetch_one(&mut conn)
    .await
    .expect("read index statistics")
}

/// The index scans `count` reads once the statistics collector shows any (its counters
/// arrive after the session closes), or 0 after 10 s.
async fn first_scans<F, Fut>(count: F) -> i64
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = i64>,
{
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let n = count().await;
        if n > 0 || Instant::now() > deadline {
            return n;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn the_slot_lookup_uses_the_slot_index_without_statistics() {
    let Some(url) = support::pg_url().await else {
        return;
    };
    let store = open(&url).await;
    exec(
        &store,
        "ALTER TABLE orders SET (autovacuum_enabled = false)",
    )
    .await;
    // 20,000 orders as a backfill finds them: 1% unpaid without a payment (every 100th), the
    // rest final. One more unpaid row holds a payment key: the handler keyed it without moving
    // its state, and the slot lookup must not offer it for a second payment.
    exec(
        &store,
        &format!(
            "INSERT INTO orders (order_ref, chain, pay_to, asset, amount_due, tx_hash, log_index, \
             state) SELECT 'P-' || g, 'ethereum', '0x' || lpad(to_hex(g), 40, '0'), '{USDT}', \
             1000, CASE WHEN g % 100 = 0 THEN NULL ELSE '0x' || lpad(to_hex(g), 64, '0') END, \
             CASE WHEN g % 100 = 0 THEN NULL ELSE 0 END, \
             CASE WHEN g % 100 = 0 THEN 'unpaid' ELSE 'final' END \
             FROM generate_series(1, 20000) g"
        ),
    )
    .await;
    exec(
        &store,
        &format!(
            "INSERT INTO orders (order_ref, chain, pay_to, asset, amount_due, tx_hash, log_index) \
             VALUES ('P-keyed', 'ethereum', '{}', '{USDT}', 1000, '0x{:064x}', 3)",
            addr(20_001),
            777_777
        ),
    )
    .await;
    let Store::Postgres(pool) = &store else {
        panic!("a PostgreSQL url opened another store");
    };
    let reltuples: f32 =
        sqlx::query_scalar("SELECT reltuples FROM pg_class WHERE oid = 'orders'::regclass")
            .fetch_one(pool)
            .await
            .unwrap();
    assert!(
        reltuples < 0.0,
        "orders must have no statistics for this test (reltuples {reltuples})"
    );

    // 15 slots: 14 unpaid orders' addresses (every 100th), and one address that has only the
    // keyed unpaid row.
    let mut slots: Vec<_> = (1..=14u64).map(|i| slot(i * 1_000)).collect();
    slots.push(slot(20_001));
    let view = store.load_view(&[], &slots).await.unwrap();
    let mut found: Vec<_> = view
        .unpaid
        .values()
        .flatten()
        .map(|r| r.order_ref.clone())
        .collect();
    found.sort();
    let mut expected: Vec<_> = (1..=14u64).map(|i| format!("P-{}", i * 1_000)).collect();
    expected.sort();
    assert_eq!(found, expected, "unpaid orders without a payment, by slot");
    assert!(view
        .unpaid
        .values()
        .flatten()
        .all(|r| r.key.is_none() && r.pay_to.as_str() != addr(20_001)));

    pool.close().await;
    let slot_scans = first_scans(|| index_scans(&url, "orders_unpaid_slot")).await;
    let scan_scans = index_scans(&url, "orders_unpaid_scan").await;
    assert!(
        slot_scans > 0 && scan_scans == 0,
        "the slot lookup must probe orders_unpaid_slot, not the deposit scan's index \
         (index scans: orders_unpaid_slot {slot_scans}, orders_unpaid_scan {scan_scans})"
    );
}

#[tokio::test]
async fn the_held_payments_page_reads_its_partial_indexes_not_the_history() {
    let Some(url) = support::pg_url().await else {
        return;
    };
    let store = open(&url).await;
    exec(
        &store,
        "ALTER TABLE orders SET (autovacuum_enabled = false)",
    )
    .await;
    exec(
        &store,
        "ALTER TABLE payrecon_payments SET (autovacuum_enabled = false)",
    )
    .await;
    // 20,000 orders paid long ago, each with its final payment; every 1,000th is still short
    // (unpaid, no key, its payment held).
    exec(
        &store,
        &format!(
            "INSERT INTO orders (order_ref, chain, pay_to, asset, amount_due, tx_hash, log_index, \
             amount_paid, state) SELECT 'H-' || g, 'ethereum', '0x' || lpad(to_hex(g), 40, '0'), \
             '{USDT}', 1000, CASE WHEN g % 1000 = 0 THEN NULL ELSE '0x' || lpad(to_hex(g), 64, '0') \
             END, CASE WHEN g % 1000 = 0 THEN NULL ELSE 0 END, \
             CASE WHEN g % 1000 = 0 THEN 500 ELSE 1000 END, \
             CASE WHEN g % 1000 = 0 THEN 'unpaid' ELSE 'final' END \
             FROM generate_series(1, 20000) g"
        ),
    )
    .await;
    exec(
        &store,
        "INSERT INTO payrecon_payments (order_id, chain, tx_hash, log_index, amount, state, \
         source, created_at, state_changed_at) SELECT o.id, 'ethereum', \
         '0x' || lpad(to_hex(o.id), 64, '0'), 0, o.amount_paid, 'final', 'reconcile', \
         '2020-01-01T00:00:00Z', '2020-01-01T00:00:00Z' FROM orders o",
    )
    .await;
    let since = jiff::Timestamp::now() - jiff::SignedDuration::from_hours(1);
    let (page, _) = store.held_page(0, 500, Some(since)).await.unwrap();
    let mut refs: Vec<String> = page.iter().map(|p| p.row.order_ref.clone()).collect();
    refs.sort();
    let mut want: Vec<String> = (1..=20).map(|i| format!("H-{}", i * 1_000)).collect();
    want.sort();
    assert_eq!(refs, want, "the held payments, and nothing else");

    let Store::Postgres(pool) = &store else {
        panic!("a PostgreSQL url opened another store");
    };
    pool.close().await;
    // The short orders through an index of unpaid orders (the deposit scan's, or the slot
    // lookup's), the parts through the index of open payments: neither reads the history.
    let held = first_scans(|| async {
        index_scans(&url, "orders_unpaid_scan").await
            + index_scans(&url, "orders_unpaid_slot").await
    })
    .await;
    let open_scans = index_scans(&url, "payrecon_payments_open").await;
    assert!(
        held > 0 && open_scans > 0,
        "the page must read an index of unpaid orders and payrecon_payments_open, not scan \
         the orders or the payments (index scans: unpaid orders {held}, \
         payrecon_payments_open {open_scans})"
    );
}

/// The webhook inbox is drained oldest first, a page at a time: each page must read the
/// partial index of unprocessed deliveries in its order (`received_at, id`), not sort the
/// whole backlog. (Sorting by the time's text, an output column of the same name, would.)
#[tokio::test]
async fn the_inbox_page_reads_the_unprocessed_index_in_order() {
    let Some(url) = support::pg_url().await else {
        return;
    };
    let store = open(&url).await;
    exec(
        &store,
        "INSERT INTO payrecon_webhook_events (provider, event_id, body, received_at) \
         SELECT 'p', 'e' || g, '{}', now() - g * interval '1 second' \
         FROM generate_series(1, 20000) g",
    )
    .await;
    exec(&store, "ANALYZE payrecon_webhook_events").await;
    let page = store
        .unprocessed_webhook_deliveries(Some("p"), 500)
        .await
        .unwrap();
    assert_eq!(page.len(), 500);
    assert_eq!(page[0].event_id, "e20000", "oldest first");
    assert_eq!(page[499].event_id, "e19501");
    store.close().await;
    let scans = first_scans(|| index_scans(&url, "payrecon_webhook_events_unprocessed")).await;
    assert!(
        scans > 0,
        "the inbox page must read payrecon_webhook_events_unprocessed (index scans: {scans})"
    );
}
