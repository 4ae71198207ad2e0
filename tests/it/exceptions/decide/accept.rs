//! `accept`: a held order moves to its payments' state with its event, and a payment late and
//! short is two problems whose order moves only once both are accepted.

use payrecon::domain::State;
use serde_json::Value;

use crate::cli::harness::{payrecon, World};
use crate::events::receiver::Receiver;
use crate::exceptions::{all, count, id, one, order, pay};
use payrecon_testkit::inspect::Inspect;

use super::{events, ledger};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accept_moves_a_held_order_to_its_payments_state_with_its_event() {
    let (_guard, urls) = crate::support::all_backends().await;
    for url in urls {
        let w = World::new(payrecon_testkit::tmp::dir().unwrap(), url.clone()).await;
        let rx = Receiver::start().await;
        let config = w.config(&events(&rx));
        let held = order(&w, 1, 30).await;
        let tx = pay(&w, 1, 20, "n-1");
        let unknown = pay(&w, 9, 5, "n-9");
        payrecon(&config, &["run"]).await.assert_code(0);
        let xs = all(&config).await;
        let x = id(one(&xs, "amount_mismatch", &held));
        let stray = id(one(&xs, "unknown_payment", &unknown));

        // Refused, and nothing changes: not held, an unknown id, a missing or blank reason.
        let before = ledger(&w).await;
        let out = payrecon(
            &config,
            &[
                "exceptions",
                "accept",
                &stray,
                "--reason",
                "x",
                "--by",
                "al",
            ],
        )
        .await;
        out.assert_code(1);
        assert!(out.stderr.contains("only a held order"), "{}", out.stderr);
        payrecon(
            &config,
            &[
                "exceptions",
                "accept",
                "999999",
                "--reason",
                "x",
                "--by",
                "al",
            ],
        )
        .await
        .assert_code(2);
        payrecon(&config, &["exceptions", "accept", &x])
            .await
            .assert_code(2);
        payrecon(&config, &["exceptions", "accept", &x, "--reason", " "])
            .await
            .assert_code(2);
        payrecon(&config, &["exceptions", "show", "999999"])
            .await
            .assert_code(2);
        assert_eq!(ledger(&w).await, before, "{url}");

        let out = payrecon(
            &config,
            &[
                "exceptions",
                "accept",
                &x,
                "--reason",
                "customer paid the rest by card",
                "--by",
                "alice",
            ],
        )
        .await;
        out.assert_code(0);
        assert!(
            out.stdout.contains("moved from unpaid to final"),
            "{}",
            out.stdout
        );
        let o = w.store.order_by_ref(&held).await.unwrap().unwrap();
        assert_eq!(
            (o.state, o.tx_hash.as_deref(), o.amount_paid.as_deref()),
            (State::Final, Some(tx.as_str()), Some("20000000")),
            "{url}"
        );
        let audit = count(
            &w,
            "payrecon_transitions",
            "source = 'operator' AND provider = 'operator' AND to_state = 'final'",
        )
        .await;
        assert_eq!(audit, 1, "{url}");
        let shown = payrecon(&config, &["exceptions", "show", &x, "--format", "json"])
            .await
            .json();
        assert_eq!(
            (
                &shown["status"],
                &shown["resolution"],
                &shown["resolved_by"],
                &shown["note"]
            ),
            (
                &Value::from("resolved"),
                &Value::from("accepted"),
                &Value::from("alice"),
                &Value::from("customer paid the rest by card")
            ),
            "{url}"
        );
        // Its event went out before the command exited, like a run's.
        let finals: Vec<Value> = rx
            .received()
            .iter()
            .map(|r| r.json())
            .filter(|e| e["type"] == "order.final" && e["data"]["order_ref"] == held.as_str())
            .collect();
        assert_eq!(finals.len(), 1, "{url}: {:?}", rx.received());

        // A second decision on it is told who made the first, and when.
        let out = payrecon(
            &config,
            &[
                "exceptions",
                "dismiss",
                &x,
                "--reason",
                "late",
                "--by",
                "bob",
            ],
        )
        .await;
        out.assert_code(1);
        assert!(
            out.stderr.contains("accepted by alice at ") && out.stderr.contains("nothing changed"),
            "{}",
            out.stderr
        );
        // Later runs leave the accepted order where it is.
        payrecon(&config, &["run"]).await.assert_code(0);
        assert_eq!(
            w.store.order_by_ref(&held).await.unwrap().unwrap().state,
            State::Final
        );
    }
}

/// A payment late and short is two problems (docs/operations.md, "Exceptions"): both exceptions
/// open, each naming what was paid and what is due; accepting the late one settles it alone
/// (the order stays held, no event), and accepting the shortfall then moves the order, and only
/// then does its `order.final` go out. Accepting late alone never ships goods for money short.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_and_short_payment_holds_the_order_until_both_problems_are_accepted() {
    let (_guard, urls) = crate::support::all_backends().await;
    for url in urls {
        let w = World::new(payrecon_testkit::tmp::dir().unwrap(), url.clone()).await;
        let rx = Receiver::start().await;
        let config = w.config(&events(&rx));
        let held = order(&w, 5, 25).await;
        // Expired long before the sandbox chain's first block.
        let at = match w.store {
            payrecon::store::Store::MySql(_) => "2000-01-01 00:00:00",
            _ => "2000-01-01T00:00:00Z",
        };
        let sql = format!("UPDATE orders SET expires_at = '{at}' WHERE order_ref = '{held}'");
        payrecon_testkit::on_pool!(&w.store, p => sqlx::query(&sql).execute(p).await.map(|_| ()))
            .unwrap();
        pay(&w, 5, 20, "n-5");
        payrecon(&config, &["run"]).await.assert_code(0);
        let xs = all(&config).await;
        let late = one(&xs, "late_payment", &held);
        let short = one(&xs, "amount_mismatch", &held);
        for x in [late, short] {
            let detail = x["detail"].as_str().unwrap();
            assert!(
                detail.contains("paid 20000000 of 25000000"),
                "{url}: {detail}"
            );
            // For people, in tokens (JSON keeps base units).
            let shown = payrecon(&config, &["exceptions", "show", &id(x)]).await;
            assert!(
                shown.stdout.contains("paid 20 USDT of 25 USDT")
                    && shown.stdout.contains("20 USDT (20000000 base units)"),
                "{url}: {}",
                shown.stdout
            );
        }
        for args in [&["exceptions"][..], &["status"]] {
            let listed = payrecon(&config, args).await;
            assert!(
                listed.stdout.contains("paid 20 USDT of 25 USDT"),
                "{args:?}: {}",
                listed.stdout
            );
        }
        let accept = |x: &Value| {
            let id = id(x);
            let config = config.clone();
            async move {
                payrecon(
                    &config,
                    &["exceptions", "accept", &id, "--reason", "ok", "--by", "al"],
                )
                .await
            }
        };
        let finals = || {
            rx.received()
                .iter()
                .map(|r| r.json())
                .filter(|e| e["type"] == "order.final" && e["data"]["order_ref"] == held.as_str())
                .count()
        };
        let out = accept(late).await;
        out.assert_code(0);
        assert!(out.stdout.contains("stays unpaid"), "{url}: {}", out.stdout);
        let o = w.store.order_by_ref(&held).await.unwrap().unwrap();
        assert_eq!(o.state, State::Unpaid, "{url}: one problem still holds it");
        assert_eq!(finals(), 0, "{url}");
        // The next run leaves it held, and opens nothing again.
        payrecon(&config, &["run"]).await.assert_code(0);
        assert_eq!(
            w.store.order_by_ref(&held).await.unwrap().unwrap().state,
            State::Unpaid
        );
        let open = count(&w, "payrecon_exceptions", "status = 'open'").await;
        assert_eq!(open, 1, "{url}: the shortfall alone");
        let out = accept(short).await;
        out.assert_code(0);
        assert!(
            out.stdout.contains("moved from unpaid to final"),
            "{url}: {}",
            out.stdout
        );
        assert_eq!(finals(), 1, "{url}: {:?}", rx.received());
    }
}
