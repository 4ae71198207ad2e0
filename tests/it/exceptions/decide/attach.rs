//! `attach`: a payment that credits no order is credited to the one named, and the chain
//! decides the state it gets.

use payrecon::domain::State;
use serde_json::Value;

use crate::cli::harness::{command, output, payrecon, World};
use crate::exceptions::{all, count, id, one, order, pay};
use payrecon_testkit::inspect::Inspect;

use super::ledger;

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
