//! The migrations that touch payments, on databases written by the version before them: every
//! paid order gets its payment row and nothing else changes, and the payment events keep every
//! event in transition order.

use std::path::Path;

use payrecon::store::Store;

use crate::store::{exec, hash, id_of, key, new_order};
use crate::support;
use payrecon_testkit::inspect::Inspect;

use super::payments;

#[tokio::test]
async fn the_migration_gives_every_paid_order_its_payment_row_and_changes_nothing_else() {
    let (_dir, urls) = support::backends().await;
    for url in &urls {
        let store = Store::connect(url, 2).await.unwrap();
        // The schema as it was before payments (migrations 1..=8).
        let dir = if url.starts_with("sqlite") {
            "sqlite"
        } else {
            "postgres"
        };
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("migrations")
            .join(dir);
        let mut old = sqlx::migrate::Migrator::new(path).await.unwrap();
        old.migrations = old
            .migrations
            .iter()
            .filter(|m| m.version < 9)
            .cloned()
            .collect::<Vec<_>>()
            .into();
        payrecon_testkit::on_pool!(&store, p => old.run(p).await.unwrap());
        store
            .insert_orders(&[
                new_order("BY-PAYRECON", 1, 25),
                new_order("BY-MERCHANT", 2, 25),
                new_order("KEYED-UNPAID", 3, 25),
                new_order("NO-AMOUNT", 4, 25),
                new_order("UNPAID", 5, 25),
            ])
            .await
            .unwrap();
        for (r, n, state, amount) in [
            ("BY-PAYRECON", 1, "final", "30"),
            ("BY-MERCHANT", 2, "confirmed", "25"),
            ("KEYED-UNPAID", 3, "unpaid", "25"),
        ] {
            exec(
                &store,
                &format!(
                    "UPDATE orders SET tx_hash = '{}', log_index = 0, amount_paid = {amount}, \
                     block_number = 7, block_hash = '{}', state = '{state}' \
                     WHERE order_ref = '{r}'",
                    hash(n),
                    hash(100 + n)
                ),
            )
            .await;
        }
        exec(
            &store,
            &format!(
                "UPDATE orders SET tx_hash = '{}', log_index = 0, state = 'final' \
                 WHERE order_ref = 'NO-AMOUNT'",
                hash(4)
            ),
        )
        .await;
        let id = id_of(&store, "BY-PAYRECON").await;
        exec(
            &store,
            &format!(
                "INSERT INTO payrecon_transitions (order_id, from_state, to_state, source, \
                 provider, run_id) VALUES ({id}, 'unpaid', 'final', 'webhook', 'qv', 'r-1')"
            ),
        )
        .await;
        let before = snapshot(&store).await;

        store.migrate().await.unwrap();
        let rows = payments(&store).await;
        let got: Vec<(&str, &str, &str, &str)> = rows
            .iter()
            .map(|r| (r.0.as_str(), r.3.as_str(), r.4.as_str(), r.5.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("BY-PAYRECON", "30", "final", "webhook"),
                ("BY-MERCHANT", "25", "confirmed", "merchant"),
            ],
            "{url}"
        );
        assert_eq!(snapshot(&store).await, before, "{url}: no order changed");
        assert_eq!(store.count("payrecon_events").await.unwrap(), 0);
        assert_eq!(store.count("payrecon_transitions").await.unwrap(), 1);
        // Nothing to hold for the migrated rows: they keep their keys.
        let view = store.load_view(&[key(1, 0)], &[]).await.unwrap();
        assert_eq!(view.by_key[&key(1, 0)].order_ref, "BY-PAYRECON");
    }
}

/// Every order's payment columns and state, as text.
async fn snapshot(store: &Store) -> Vec<String> {
    let mut out = Vec::new();
    for r in [
        "BY-PAYRECON",
        "BY-MERCHANT",
        "KEYED-UNPAID",
        "NO-AMOUNT",
        "UNPAID",
    ] {
        out.push(format!(
            "{:?}",
            store.order_by_ref(r).await.unwrap().unwrap()
        ));
    }
    out
}

/// Migration 0010 (payment events) on a database with events: every row kept, `seq` in
/// transition order, the NOT NULL on `transition_id` gone, exactly one cause checked.
#[tokio::test]
async fn the_events_migration_keeps_every_event_in_transition_order() {
    let (_dir, urls) = support::backends().await;
    for url in &urls {
        let store = Store::connect(url, 2).await.unwrap();
        let dir = if url.starts_with("sqlite") {
            "sqlite"
        } else {
            "postgres"
        };
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("migrations")
            .join(dir);
        let mut old = sqlx::migrate::Migrator::new(path).await.unwrap();
        old.migrations = old
            .migrations
            .iter()
            .filter(|m| m.version < 10)
            .cloned()
            .collect::<Vec<_>>()
            .into();
        payrecon_testkit::on_pool!(&store, p => old.run(p).await.unwrap());
        // Written out of transition order on purpose (ids are not the order).
        for (id, transition) in [("evt_b", 7), ("evt_a", 3), ("evt_c", 9)] {
            exec(
                &store,
                &format!(
                    "INSERT INTO payrecon_events (id, transition_id, order_id, type, body, \
                     created_at, next_attempt_at) VALUES ('{id}', {transition}, 1, \
                     'order.final', '{{}}', '2026-12-01T00:00:00Z', '2026-12-01T00:00:00Z')"
                ),
            )
            .await;
        }
        store.migrate().await.unwrap();
        let sql = "SELECT id FROM payrecon_events ORDER BY seq";
        let order: Vec<String> =
            payrecon_testkit::on_pool!(&store, p => sqlx::query_scalar(sql).fetch_all(p).await)
                .unwrap();
        assert_eq!(order, ["evt_a", "evt_b", "evt_c"], "{url}");
        // A payment's event (no transition) goes in after them; one with neither is refused.
        exec(
            &store,
            "INSERT INTO payrecon_events (id, payment_id, order_id, type, body, created_at, \
             next_attempt_at) VALUES ('evt_p', 1, 1, 'order.payment_received', '{}', \
             '2026-12-01T00:00:00Z', '2026-12-01T00:00:00Z')",
        )
        .await;
        let order: Vec<String> =
            payrecon_testkit::on_pool!(&store, p => sqlx::query_scalar(sql).fetch_all(p).await)
                .unwrap();
        assert_eq!(order.last().map(String::as_str), Some("evt_p"), "{url}");
        let neither = "INSERT INTO payrecon_events (id, order_id, type, body, created_at, \
                       next_attempt_at) VALUES ('evt_x', 1, 'order.final', '{}', \
                       '2026-12-01T00:00:00Z', '2026-12-01T00:00:00Z')";
        let refused =
            payrecon_testkit::on_pool!(&store, p => sqlx::query(neither).execute(p).await.is_err());
        assert!(refused, "{url}: an event needs exactly one cause");
    }
}
