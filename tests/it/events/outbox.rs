//! The outbox is written with the transition: one event per transition payrecon applies, in
//! the same transaction; none for the merchant's own writes, none in a dry run, none when
//! events are off.

use payrecon::domain::State;
use payrecon::store::Store;

use super::{all_events, events_table, three_missing, world};
use crate::reconcile::{on_backends, opts, payee, usdt};
use payrecon_testkit::inspect::Inspect;

async fn exec(store: &Store, sql: &str) {
    payrecon_testkit::on_pool!(store, p => sqlx::raw_sql(sql).execute(p).await.map(|_| ()))
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
}

#[tokio::test]
async fn every_transition_payrecon_applies_has_exactly_one_event() {
    on_backends(|url| async move {
        let Some(w) = world(&url, &events_table("http://127.0.0.1:9/none", 1, "")).await else {
            return;
        };
        three_missing(&w).await;
        // The merchant's own handler writes one order: no event for that.
        w.orders(&[("E-M", &payee(9), usdt(5))]).await;
        let tm = w.pay(&payee(9), usdt(5)).await;
        let (_, _, li) = w.where_is(&tm).await;
        w.seed("E-M", &tm, li, usdt(5), State::Pending).await;

        let report = w.run().await;
        assert_eq!(report.totals.applied, 3, "{}", report.to_json());
        let all = all_events(w.store()).await;
        let (payments, events): (Vec<_>, Vec<_>) = all
            .into_iter()
            .partition(|e| e.kind == "order.payment_received");
        let audit = w.audit().await;
        let by_payrecon: Vec<_> = audit.iter().filter(|a| a.0 != "E-M").collect();
        assert_eq!(events.len(), by_payrecon.len(), "{events:?} {audit:?}");
        // And one per payment payrecon credited (docs/reference.md §6), none for the
        // merchant's.
        assert_eq!(payments.len(), 3, "{payments:?}");
        assert!(payments
            .iter()
            .all(|e| e.order_ref.as_deref() != Some("E-M")));
        assert!(events.iter().all(|e| e.order_ref.as_deref() != Some("E-M")));
        let ids: std::collections::HashSet<_> = events.iter().map(|e| &e.id).collect();
        assert_eq!(ids.len(), events.len(), "ids are unique");
        for (order_ref, from, to, _) in by_payrecon {
            let e = events
                .iter()
                .find(|e| e.order_ref.as_deref() == Some(order_ref.as_str()))
                .unwrap_or_else(|| panic!("no event for {order_ref}"));
            assert!(e.id.starts_with("evt_"), "{}", e.id);
            assert_eq!(e.kind, format!("order.{to}"));
            assert_eq!(e.status, "pending");
            assert_eq!(e.attempts, 0);
            let body = body_of(w.store(), &e.id).await;
            let o = w.order(order_ref).await;
            let d = &body["data"];
            assert_eq!(body["type"], e.kind.as_str());
            assert_eq!(d["order_ref"], order_ref.as_str());
            assert_eq!(d["order_id"], o.id);
            assert_eq!(d["from_state"], from.as_str());
            assert_eq!(d["to_state"], to.as_str());
            assert_eq!(d["chain"], "ethereum");
            assert_eq!(d["tx_hash"].as_str(), o.tx_hash.as_deref());
            assert_eq!(d["log_index"].as_i64(), o.log_index);
            assert_eq!(d["block_number"].as_i64(), o.block_number);
            assert_eq!(d["block_hash"].as_str(), o.block_hash.as_deref());
            assert_eq!(d["asset"], w.token.as_str());
            let due = match order_ref.as_str() {
                "E-1" => "10000000",
                "E-2" => "20000000",
                _ => "30000000",
            };
            assert_eq!(d["amount_due"], due);
            assert_eq!(d["amount_paid"].as_str(), o.amount_paid.as_deref());
            assert_eq!(d["source"], "reconcile");
            assert_eq!(d["provider"], "cg");
            assert_eq!(d["run_id"], report.run_id.as_str());
            assert!(body["timestamp"]
                .as_str()
                .unwrap()
                .parse::<jiff::Timestamp>()
                .is_ok());
        }

        // E-3 becomes final: one more event, after its pending one.
        w.anvil.mine(70).await;
        w.run().await;
        let e3: Vec<_> = all_events(w.store())
            .await
            .into_iter()
            .filter(|e| e.order_ref.as_deref() == Some("E-3"))
            .collect();
        let kinds: Vec<&str> = e3.iter().map(|e| e.kind.as_str()).collect();
        assert_eq!(
            kinds,
            ["order.payment_received", "order.pending", "order.final"]
        );
        let audit_rows = w.store().count("payrecon_transitions").await.unwrap();
        let events = w.store().count("payrecon_events").await.unwrap();
        assert_eq!(
            events,
            audit_rows - 1 + 3,
            "every transition but the merchant's, and every payment payrecon credited"
        );
    })
    .await;
}

#[tokio::test]
async fn a_dry_run_and_a_configuration_without_events_write_none() {
    on_backends(|url| async move {
        let Some(w) = world(&url, &events_table("http://127.0.0.1:9/none", 1, "")).await else {
            return;
        };
        three_missing(&w).await;
        let mut dry = opts();
        dry.dry_run = true;
        let report = w.app.engine.run(&dry).await.unwrap();
        assert_eq!(report.providers[0].gaps.missing, 3);
        assert_eq!(w.store().count("payrecon_events").await.unwrap(), 0);

        // The same ledger through an App without [events]: transitions, no events.
        let off = w.another_app("", "").await;
        assert!(off.events.is_none());
        let report = off.engine.run(&opts()).await.unwrap();
        assert_eq!(report.totals.applied, 3);
        assert_eq!(w.store().count("payrecon_transitions").await.unwrap(), 3);
        assert_eq!(w.store().count("payrecon_events").await.unwrap(), 0);
    })
    .await;
}

/// An event that cannot be written takes its transition (and its batch) with it: the two
/// are one transaction. Once it can, the next run applies everything with its events.
#[tokio::test]
async fn no_transition_commits_without_its_event() {
    on_backends(|url| async move {
        let Some(w) = world(&url, &events_table("http://127.0.0.1:9/none", 1, "")).await else {
            return;
        };
        three_missing(&w).await;
        let e2 = w.order("E-2").await.id;
        let store = w.store();
        match store {
            Store::Sqlite(_) => {
                exec(
                    store,
                    &format!(
                        "CREATE TRIGGER refuse_event BEFORE INSERT ON payrecon_events \
                     WHEN NEW.order_id = {e2} BEGIN SELECT RAISE(ABORT, 'refused'); END;"
                    ),
                )
                .await
            }
            Store::Postgres(_) => {
                exec(
                    store,
                    &format!(
                        "CREATE FUNCTION refuse_event() RETURNS trigger LANGUAGE plpgsql AS \
                     $$ BEGIN IF NEW.order_id = {e2} THEN RAISE EXCEPTION 'refused'; END IF; \
                     RETURN NEW; END $$; \
                     CREATE TRIGGER refuse_event BEFORE INSERT ON payrecon_events \
                     FOR EACH ROW EXECUTE FUNCTION refuse_event();"
                    ),
                )
                .await
            }
            Store::MySql(_) => {
                exec(
                    store,
                    &format!(
                        "CREATE TRIGGER refuse_event BEFORE INSERT ON payrecon_events \
                     FOR EACH ROW IF NEW.order_id = {e2} THEN \
                     SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'refused'; END IF"
                    ),
                )
                .await
            }
        }
        // The trigger's refusal is the fault this test injects.
        w.allow_error("refused");
        let report = w.run().await;
        assert_eq!(report.providers[0].status, "failed", "{}", report.to_json());
        assert_eq!(store.count("payrecon_transitions").await.unwrap(), 0);
        assert_eq!(store.count("payrecon_events").await.unwrap(), 0);
        for r in ["E-1", "E-2", "E-3"] {
            assert_eq!(w.order(r).await.state, State::Unpaid, "{r}");
        }

        let drop = match store {
            Store::Sqlite(_) => "DROP TRIGGER refuse_event",
            Store::Postgres(_) => "DROP TRIGGER refuse_event ON payrecon_events",
            Store::MySql(_) => "DROP TRIGGER refuse_event",
        };
        exec(store, drop).await;
        let report = w.run().await;
        assert_eq!(report.totals.applied, 3, "{}", report.to_json());
        assert_eq!(store.count("payrecon_transitions").await.unwrap(), 3);
        // Three transitions' events and three payments' events.
        assert_eq!(store.count("payrecon_events").await.unwrap(), 6);
    })
    .await;
}

async fn body_of(store: &Store, id: &str) -> serde_json::Value {
    let body: String = match store {
        Store::Sqlite(p) => sqlx::query_scalar("SELECT body FROM payrecon_events WHERE id = ?1")
            .bind(id)
            .fetch_one(p)
            .await
            .unwrap(),
        Store::Postgres(p) => sqlx::query_scalar("SELECT body FROM payrecon_events WHERE id = $1")
            .bind(id)
            .fetch_one(p)
            .await
            .unwrap(),
        Store::MySql(p) => sqlx::query_scalar("SELECT body FROM payrecon_events WHERE id = ?")
            .bind(id)
            .fetch_one(p)
            .await
            .unwrap(),
    };
    serde_json::from_str(&body).unwrap()
}

/// docs/reference.md §6: every payment payrecon credits is one `order.payment_received` event,
/// written with it; a short one says `held` and the shortfall, the top-up that covers the order
/// says neither and comes before the order's transition event.
#[tokio::test]
async fn every_credited_payment_has_one_payment_received_event_in_order() {
    on_backends(|url| async move {
        let Some(w) = world(&url, &events_table("http://127.0.0.1:9/none", 1, "")).await else {
            return;
        };
        w.orders(&[("H-1", &payee(1), usdt(25))]).await;
        let short = w.pay(&payee(1), usdt(20)).await;
        w.notify("601", &short, &payee(1), "20");
        w.run().await;
        let events = all_events(w.store()).await;
        assert_eq!(events.len(), 1, "{events:?}");
        assert_eq!(events[0].kind, "order.payment_received");
        let b = body_of(w.store(), &events[0].id).await;
        let d = &b["data"];
        assert_eq!(d["order_ref"], "H-1");
        assert_eq!(d["held"], "underpaid");
        assert_eq!(
            (d["shortfall"].as_str(), d["excess"].as_str()),
            (Some("5000000"), Some("0"))
        );
        assert_eq!(d["payment"]["tx_hash"], short.as_str());
        assert_eq!(d["payment"]["amount"], "20000000");
        assert_eq!(d["payment"]["chain"], "ethereum");
        assert_eq!(
            (
                d["order"]["amount_due"].as_str(),
                d["order"]["amount_paid"].as_str()
            ),
            (Some("25000000"), Some("20000000"))
        );
        assert_eq!(d["order"]["state"], "unpaid");
        assert!(d["payment_id"].as_i64().unwrap() > 0);

        // Seen again: credited once, so no second event.
        w.run().await;
        assert_eq!(all_events(w.store()).await.len(), 1);

        let top_up = w.pay(&payee(1), usdt(7)).await;
        w.notify("602", &top_up, &payee(1), "7");
        w.run().await;
        let events = all_events(w.store()).await;
        let mine: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
        assert_eq!(mine.len(), 3, "{events:?}");
        let top = events
            .iter()
            .filter(|e| e.kind == "order.payment_received")
            .map(|e| e.id.clone())
            .collect::<Vec<_>>();
        let mut bodies = Vec::new();
        for id in &top {
            bodies.push(body_of(w.store(), id).await);
        }
        let t = bodies
            .iter()
            .find(|b| b["data"]["payment"]["tx_hash"] == top_up.as_str())
            .unwrap();
        let d = &t["data"];
        assert!(d["held"].is_null(), "{t}");
        assert_eq!(
            (d["shortfall"].as_str(), d["excess"].as_str()),
            (Some("0"), Some("2000000"))
        );
        assert_eq!(d["order"]["amount_paid"], "27000000");
        assert_eq!(d["order"]["state"], "pending");
        // Delivery order: the payment's event before the order's transition event.
        let order = delivery_order(w.store()).await;
        assert_eq!(
            order.iter().map(|(_, k)| k.as_str()).collect::<Vec<_>>(),
            [
                "order.payment_received",
                "order.payment_received",
                "order.pending"
            ],
            "{url}"
        );
    })
    .await;
}

/// `(id, type)` of every event in the order they are delivered in.
async fn delivery_order(store: &Store) -> Vec<(String, String)> {
    let sql = "SELECT id, type FROM payrecon_events ORDER BY seq";
    payrecon_testkit::on_pool!(store, p => sqlx::query_as(sql).fetch_all(p).await).unwrap()
}
