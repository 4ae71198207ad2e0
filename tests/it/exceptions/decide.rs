//! `accept`, `attach` and `dismiss`: each through the run's apply path (source `operator`,
//! the audit row, the event to the merchant), with who, when and why on the exception; and
//! every refusal changes nothing.

use payrecon::domain::State;
use serde_json::Value;

use super::{all, count, id, one, order, pay};
use crate::cli::harness::{command, output, payrecon, World};
use crate::events::receiver::Receiver;
use crate::events::SECRET;
use payrecon_testkit::inspect::Inspect;

fn events(r: &Receiver) -> String {
    format!(
        "[events]\nurl = \"{}\"\nsecret = \"{SECRET}\"\nflush_timeout = \"5s\"\n",
        r.url()
    )
}

/// Everything an operator's refused decision must leave alone.
async fn ledger(w: &World) -> Vec<i64> {
    let mut v = Vec::new();
    for t in [
        "payrecon_transitions",
        "payrecon_payments",
        "payrecon_events",
    ] {
        v.push(count(w, t, "1 = 1").await);
    }
    v.push(count(w, "payrecon_exceptions", "status = 'open'").await);
    v.push(count(w, "orders", "state <> 'unpaid'").await);
    v
}

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attach_credits_a_payment_to_no_order_and_the_chain_decides_its_state() {
    let (_guard, urls) = crate::support::all_backends().await;
    for url in urls {
        let w = World::new(payrecon_testkit::tmp::dir().unwrap(), url.clone()).await;
        let config = w.config("");
        let tx = pay(&w, 3, 25, "n-3");
        let paid = order(&w, 4, 25).await;
        pay(&w, 4, 25, "n-4");
        payrecon(&config, &["run"]).await.assert_code(0);
        let xs = all(&config).await;
        let x = id(one(&xs, "unknown_payment", &tx));
        let target = order(&w, 5, 25).await;

        // Refused, and nothing changes: an order that does not exist, one already paid, a
        // held-order decision on a payment.
        let before = ledger(&w).await;
        let out = payrecon(
            &config,
            &[
                "exceptions",
                "attach",
                &x,
                "--order",
                "NOPE",
                "--reason",
                "r",
                "--by",
                "bo",
            ],
        )
        .await;
        out.assert_code(1);
        assert!(out.stderr.contains("no order \"NOPE\""), "{}", out.stderr);
        let out = payrecon(
            &config,
            &[
                "exceptions",
                "attach",
                &x,
                "--order",
                &paid,
                "--reason",
                "r",
                "--by",
                "bo",
            ],
        )
        .await;
        out.assert_code(1);
        assert!(
            out.stderr.contains("holds its payment already"),
            "{}",
            out.stderr
        );
        payrecon(&config, &["exceptions", "attach", &x, "--order", &target])
            .await
            .assert_code(2);
        assert_eq!(ledger(&w).await, before, "{url}");

        let mut cmd = command(
            &config,
            &[
                "exceptions",
                "attach",
                &x,
                "--order",
                &target,
                "--reason",
                "the customer's second wallet",
            ],
        );
        cmd.env("SUDO_USER", "carol").env("USER", "nobody");
        let out = output(cmd).await;
        out.assert_code(0);
        let o = w.store.order_by_ref(&target).await.unwrap().unwrap();
        assert_eq!(
            (o.state, o.tx_hash.as_deref()),
            (State::Final, Some(tx.as_str())),
            "{url}: {}",
            out.stdout
        );
        assert_eq!(
            count(
                &w,
                "payrecon_payments",
                &format!("source = 'operator' AND tx_hash = '{tx}' AND state = 'final'")
            )
            .await,
            1,
            "{url}"
        );
        let shown = payrecon(&config, &["exceptions", "show", &x, "--format", "json"])
            .await
            .json();
        assert_eq!(
            (&shown["resolution"], &shown["resolved_by"]),
            (&Value::from("attached"), &Value::from("carol")),
            "{url}"
        );
        // The payment is credited now: a second attach of it is refused.
        let again = payrecon(
            &config,
            &[
                "exceptions",
                "attach",
                &x,
                "--order",
                &target,
                "--reason",
                "r",
                "--by",
                "bo",
            ],
        )
        .await;
        again.assert_code(1);
        // A later run finds the ledger right: no new exception for it.
        payrecon(&config, &["run"]).await.assert_code(0);
        assert_eq!(
            count(&w, "payrecon_exceptions", "status = 'open'").await,
            0,
            "{url}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dismiss_closes_an_exception_and_leaves_the_ledger_alone() {
    let (_guard, urls) = crate::support::all_backends().await;
    for url in urls {
        let w = World::new(payrecon_testkit::tmp::dir().unwrap(), url.clone()).await;
        let config = w.config("");
        let over = order(&w, 6, 20).await;
        pay(&w, 6, 25, "n-6");
        // Short, in two parts: the exception names the latest.
        let short = order(&w, 7, 30).await;
        pay(&w, 7, 10, "n-7");
        pay(&w, 7, 5, "n-7b");
        payrecon(&config, &["run"]).await.assert_code(0);
        let xs = all(&config).await;
        let o = one(&xs, "amount_mismatch", &over);
        assert!(o["detail"].as_str().unwrap().starts_with("overpaid"), "{o}");
        let (o, s) = (id(o), id(one(&xs, "amount_mismatch", &short)));
        // Overpaid is not held: accept is refused.
        let out = payrecon(
            &config,
            &["exceptions", "accept", &o, "--reason", "r", "--by", "d"],
        )
        .await;
        out.assert_code(1);
        assert!(out.stderr.contains("not held"), "{}", out.stderr);
        let before = ledger(&w).await;
        for x in [&o, &s] {
            let out = payrecon(
                &config,
                &[
                    "exceptions",
                    "dismiss",
                    x,
                    "--reason",
                    "refunded",
                    "--by",
                    "dave",
                ],
            )
            .await;
            out.assert_code(0);
            assert!(out.stdout.contains("dismissed by dave"), "{}", out.stdout);
        }
        let after = ledger(&w).await;
        assert_eq!(after[..3], before[..3], "{url}: the ledger is unchanged");
        assert_eq!((after[3], after[4]), (0, before[4]), "{url}");
        let list = payrecon(
            &config,
            &[
                "exceptions",
                "--status",
                "resolved",
                "--kind",
                "amount_mismatch",
                "--order",
                &over,
            ],
        )
        .await;
        list.assert_code(0);
        assert!(
            list.stdout.contains("resolved") && list.stdout.contains(&over),
            "{}",
            list.stdout
        );
        assert!(!list.stdout.contains(&short), "{}", list.stdout);
        // Later runs see both parts again: a dismissed problem stays dismissed until a
        // payment is credited to the order after the decision.
        payrecon(&config, &["run"]).await.assert_code(0);
        payrecon(&config, &["run"]).await.assert_code(0);
        assert_eq!(
            count(&w, "payrecon_exceptions", "status = 'open'").await,
            0,
            "{url}"
        );
        assert_eq!(
            w.store.order_by_ref(&short).await.unwrap().unwrap().state,
            State::Unpaid
        );
        let out = payrecon(
            &config,
            &[
                "exceptions",
                "dismiss",
                &s,
                "--reason",
                "again",
                "--by",
                "eve",
            ],
        )
        .await;
        out.assert_code(1);
        assert!(
            out.stderr.contains("dismissed by dave at"),
            "{}",
            out.stderr
        );
        let third = pay(&w, 7, 2, "n-7c");
        payrecon(&config, &["run"]).await.assert_code(0);
        let xs = all(&config).await;
        let reopened: Vec<&Value> = xs
            .iter()
            .filter(|x| x["order_ref"] == short.as_str() && x["status"] == "open")
            .collect();
        assert_eq!(reopened.len(), 1, "{url}: {xs:?}");
        assert_eq!(reopened[0]["tx_hash"], third.as_str(), "{url}");
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
