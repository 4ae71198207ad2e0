//! An order's page: its confirmations counted against the chain's head, its story oldest first
//! with why it is (not) paid, and a dead event sent again from the events page.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::cli::harness::{payrecon, World};
use crate::exceptions::order;
use crate::serve::Served;

use super::{console_config, held, Agent, ANA};

/// An order paid but not final counts its confirmations against the chain's head.
#[tokio::test]
async fn an_order_paid_on_chain_counts_its_confirmations() {
    let (_guard, urls) = crate::support::backends().await;
    let w = World::new(payrecon_testkit::tmp::dir().unwrap(), urls[0].clone()).await;
    let extra = "trusted_header = \"X-Forwarded-User\"\ntrusted_proxies = [\"127.0.0.1\"]\n";
    let config = console_config(&w, extra);
    let r = order(&w, 1, 30).await;
    // In a block with 2 more on top: 3 confirmations of the sandbox's 12.
    crate::exceptions::pay_mined(&w, 1, 30_000_000, "n-1", 2);
    payrecon(&config, &["run"]).await.assert_code(0);
    let served = Served::start(&config).await;
    let body = reqwest::Client::new()
        .get(format!("{}/console/orders/{r}", served.base))
        .header("X-Forwarded-User", "fay@shop.example")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        body.contains("Paid on chain, waiting for confirmations: 3 of 12 (block"),
        "{body}"
    );
}

/// The order's page tells what happened to it, oldest first, and why it is (not) paid; a dead
/// event is sent again from the events page and then shows as delivered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_order_tells_its_story_and_a_dead_event_is_sent_again() {
    use crate::events::receiver::{Receiver, Reply};
    let (_guard, urls) = crate::support::backends().await;
    for url in urls {
        let w = World::new(payrecon_testkit::tmp::dir().unwrap(), url.clone()).await;
        let receiver = Receiver::start().await;
        // X-1's first event fails twice: dead after the one retry.
        receiver.script_order("X-1", [Reply::status(500), Reply::status(500)]);
        let events = crate::events::events_table(&receiver.url(), 1, "");
        let config = console_config(&w, &format!("\n{events}"));
        let (x, tx) = held(&w, &config).await;
        let served = Served::start(&config).await;
        let mut a = Agent::new(&served.base);
        assert_eq!(a.login("ana", ANA).await.status, 303);
        let p = a.get("/console/orders/X-1").await;
        assert_eq!(p.status, 200, "{url}: {}", p.body);
        assert!(
            p.body
                .contains("Held: 20 USDT of 30 USDT paid, 10 USDT short"),
            "{}",
            p.body
        );
        assert!(
            p.body.contains(&tx),
            "the payment in the timeline: {}",
            p.body
        );
        // What the run saw: the provider's record beside the ledger's state.
        assert!(
            p.body.contains("sandbox saw") && p.body.contains("(amount_mismatch), the ledger had"),
            "{url}: the run's finding in the timeline: {}",
            p.body
        );
        let csrf = p.hidden("csrf");
        let decide = format!("/console/exceptions/{x}/decide");
        let p = a
            .post(
                &decide,
                &[("csrf", &csrf), ("action", "accept"), ("reason", "by card")],
            )
            .await;
        assert_eq!(p.status, 303);

        crate::support::wait_until("the event to die", Duration::from_secs(30), || async {
            a_dead(&served.base, &csrf, &a.cookies).await
        })
        .await;
        let dead = a.get("/console/events?status=dead").await;
        let id = dead
            .body
            .split("name=\"id\" value=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .to_string();
        // Replay needs the form's token too.
        assert_eq!(
            a.post("/console/events/replay", &[("id", &id)])
                .await
                .status,
            403
        );
        let p = a
            .post("/console/events/replay", &[("csrf", &csrf), ("id", &id)])
            .await;
        assert_eq!(p.status, 200, "{}", p.body);
        assert!(
            p.body.contains("1 event(s) will be sent again"),
            "{}",
            p.body
        );
        crate::support::wait_until(
            "the event to be delivered",
            Duration::from_secs(30),
            || async { !receiver.delivered().is_empty() },
        )
        .await;
        let p = a.get("/console/orders/X-1").await;
        for want in [
            "Paid: 20 USDT of 30 USDT final since",
            "accepted by ana: by card",
            "delivered after 1 attempt(s)",
            "unpaid → final (operator",
        ] {
            assert!(p.body.contains(want), "{url}: {want:?} in {}", p.body);
        }
        assert_eq!(a.get("/console/orders/X-404").await.status, 404);
        // Both events delivered (the payment's, replayed, and the transition's): the overview
        // plots the payment's delay (today's counts first read here).
        crate::support::wait_until("both events delivered", Duration::from_secs(30), || async {
            receiver.delivered().len() >= 2
        })
        .await;
        let p = a.get("/console").await;
        assert!(
            p.body.contains("From payment to event") && p.body.contains(" delivered)"),
            "{url}: {}",
            p.body
        );
        let plots = p.body.matches("<svg").count();
        assert_eq!(plots, 2, "{url}: gaps and delays: {}", p.body);

        // The events list pages backwards through the outbox's order.
        let every = crate::events::all_events(&w.store).await;
        assert!(every.len() >= 2, "{url}: {every:?}");
        let newest = every.last().unwrap().seq;
        let older = w
            .store
            .list_events(&payrecon::store::EventFilter {
                before_seq: Some(newest),
                limit: 100,
                ..Default::default()
            })
            .await
            .unwrap();
        let ids =
            |v: &[payrecon::store::EventRow]| v.iter().map(|e| e.id.clone()).collect::<Vec<_>>();
        assert_eq!(ids(&older), ids(&every[..every.len() - 1]), "{url}");
    }
}

/// Whether the events page lists a dead event (with a fresh agent on the same session).
async fn a_dead(base: &str, _csrf: &str, cookies: &BTreeMap<String, String>) -> bool {
    let mut a = Agent::new(base);
    a.cookies = cookies.clone();
    a.get("/console/events?status=dead")
        .await
        .body
        .contains("name=\"id\" value=\"")
}
