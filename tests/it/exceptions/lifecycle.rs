//! One exception per problem however many runs see it, touched by each, and cleared by
//! payrecon when its condition goes away: a top-up covers a held order; a payment to no order
//! is credited to an order registered after it.

use payrecon::domain::State;

use super::{all, count, one, order, pay};
use crate::cli::harness::{payrecon, World};
use payrecon_testkit::inspect::Inspect;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_order_has_one_exception_across_runs_until_a_top_up_clears_it() {
    let (_guard, urls) = crate::support::all_backends().await;
    for url in urls {
        let w = World::new(payrecon_testkit::tmp::dir().unwrap(), url.clone()).await;
        let config = w.config("");
        let held = order(&w, 1, 30).await;
        let first = pay(&w, 1, 20, "n-1");
        payrecon(&config, &["run", "--format", "json"])
            .await
            .assert_code(0);
        let xs = all(&config).await;
        assert_eq!(xs.len(), 1, "{url}: {xs:?}");
        let x = one(&xs, "amount_mismatch", &held);
        assert_eq!(
            (
                x["status"].as_str(),
                x["seen_count"].as_i64(),
                x["tx_hash"].as_str(),
                x["amount"].as_str()
            ),
            (
                Some("open"),
                Some(1),
                Some(first.as_str()),
                Some("20000000")
            ),
            "{url}: {x}"
        );
        assert!(x["detail"]
            .as_str()
            .unwrap()
            .starts_with("underpaid: paid 20000000 of 30000000"));
        let first_seen = x["first_seen_at"].clone();

        // Seen again by two more runs: the same row, counted per run.
        for _ in 0..2 {
            payrecon(&config, &["run"]).await.assert_code(0);
        }
        let xs = all(&config).await;
        let x = one(&xs, "amount_mismatch", &held);
        assert_eq!(x["seen_count"], 3, "{url}: {x}");
        assert_eq!(x["first_seen_at"], first_seen);
        assert!(x["last_seen_at"].as_str() > first_seen.as_str(), "{x}");
        assert_eq!(count(&w, "payrecon_exceptions", "1 = 1").await, 1);

        // The top-up covers it: the order moves, the exception is cleared by payrecon.
        pay(&w, 1, 10, "n-2");
        payrecon(&config, &["run"]).await.assert_code(0);
        assert_eq!(
            w.store.order_by_ref(&held).await.unwrap().unwrap().state,
            State::Final
        );
        let xs = all(&config).await;
        let x = one(&xs, "amount_mismatch", &held);
        assert_eq!(
            (
                x["status"].as_str(),
                x["resolution"].as_str(),
                x["resolved_by"].as_str()
            ),
            (Some("resolved"), Some("cleared"), Some("payrecon")),
            "{url}: {x}"
        );
        assert!(x["resolved_at"].is_string());
        // The open list no longer shows it; a later run opens nothing new.
        let open = payrecon(&config, &["exceptions", "--format", "json"]).await;
        assert_eq!(open.json(), serde_json::json!([]), "{url}");
        payrecon(&config, &["run"]).await.assert_code(0);
        assert_eq!(all(&config).await.len(), 1, "{url}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_payment_to_no_order_is_cleared_once_an_order_registered_later_takes_it() {
    let (_guard, urls) = crate::support::all_backends().await;
    for url in urls {
        let w = World::new(payrecon_testkit::tmp::dir().unwrap(), url.clone()).await;
        let config = w.config("");
        let tx = pay(&w, 2, 25, "n-1");
        payrecon(&config, &["run"]).await.assert_code(0);
        payrecon(&config, &["run"]).await.assert_code(0);
        let xs = all(&config).await;
        let x = one(&xs, "unknown_payment", &tx);
        assert_eq!(
            (
                x["status"].as_str(),
                x["seen_count"].as_i64(),
                x["order_ref"].is_null(),
                x["log_index"].is_i64(),
                x["amount"].as_str()
            ),
            (Some("open"), Some(2), true, true, Some("25000000")),
            "{url}: {x}"
        );
        // The order is registered after its payment: the next run credits it and clears.
        let r = order(&w, 2, 25).await;
        payrecon(&config, &["run"]).await.assert_code(0);
        assert_eq!(
            w.store.order_by_ref(&r).await.unwrap().unwrap().state,
            State::Final
        );
        let xs = all(&config).await;
        let x = one(&xs, "unknown_payment", &tx);
        assert_eq!(
            (x["status"].as_str(), x["resolution"].as_str()),
            (Some("resolved"), Some("cleared")),
            "{url}: {x}"
        );
    }
}
