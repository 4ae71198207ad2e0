//! `dismiss`: the exception is closed, with who, when and why, and the ledger is left alone.

use payrecon::domain::State;
use serde_json::Value;

use crate::cli::harness::{payrecon, World};
use crate::exceptions::{all, count, id, one, order, pay};
use payrecon_testkit::inspect::Inspect;

use super::ledger;

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
