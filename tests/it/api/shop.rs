//! A shop's whole loop, as README's "Integrate an existing shop" tells it: register an order
//! with curl, run the reference receiver (the official `standardwebhooks` library), pay on the
//! (sandbox) chain, and hear back: `order.payment_received` and `order.final` arrive signed
//! and the receiver fulfils the order once; the API then shows the order final with its
//! payment and delivered events. On SQLite and PostgreSQL.

use std::process::Command;
use std::time::Duration;

use serde_json::json;

use super::{get, TOKEN};
use crate::cli::harness::{addr, World};
use crate::events::reference::{has_standardwebhooks, reference_receiver, sqlite};
use crate::events::SECRET;
use crate::support::{self, wait_until};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn register_with_curl_pay_and_hear_back_through_the_reference_receiver() {
    if !has_standardwebhooks() {
        support::skip("python3 with standardwebhooks (pip install standardwebhooks) is missing");
        return;
    }
    if Command::new("curl").arg("--version").output().is_err() {
        support::skip("curl is missing");
        return;
    }
    let (_guard, urls) = support::all_backends().await;
    for url in urls {
        let w = World::new(payrecon_testkit::tmp::dir().unwrap(), url.clone()).await;
        let (_rx, db, port) = reference_receiver(w.dir.path()).await;
        // Runs every second; events to the receiver.
        let extra = format!(
            "[events]\nurl = \"http://127.0.0.1:{port}/payrecon/events\"\nsecret = \"{SECRET}\"\n\
             timeout = \"5s\"\nretry_schedule = [\"1s\"]\n"
        );
        let config = w.config(&format!(
            "[schedule]\ncron = \"* * * * * *\"\n[api]\ntoken = \"{TOKEN}\"\n{extra}"
        ));
        let mut s = crate::serve::Served::start(&config).await;

        // 1. Register, exactly as README shows it.
        let pay_to = addr(7).to_string();
        let body = json!({"order_ref": "SHOP-1", "chain": "ethereum", "pay_to": pay_to,
            "asset": payrecon_testkit::sandbox::SANDBOX_TOKEN, "amount_due": "25000000"})
        .to_string();
        let out = Command::new("curl")
            .args(["-sS", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST"])
            .arg(format!("{}/v1/orders", s.base))
            .args(["-H", &format!("Authorization: Bearer {TOKEN}")])
            .args(["-H", "content-type: application/json", "-d", &body])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "201",
            "{url}: curl answered"
        );

        // 2. The customer pays 25 USDT on chain; the provider lists it.
        crate::exceptions::pay(&w, 7, 25, "n-shop");

        // 3. The receiver hears of it and fulfils the order once.
        wait_until(
            "the receiver to fulfil SHOP-1",
            Duration::from_secs(60),
            || async { sqlite(&db, "SELECT order_ref, via FROM fulfilments") == "SHOP-1,payrecon" },
        )
        .await;
        // The payment is final when the provider lists it, but a run that read the chain's
        // head while the 70 blocks above it were still being mined judges it by that head
        // (pending or confirmed), and the next run makes it final: steps in between are right,
        // each once, in order.
        let types = sqlite(&db, "SELECT type FROM received_events ORDER BY rowid");
        let types: Vec<&str> = types.split(';').collect();
        let (received, pending, confirmed, fin) = (
            "order.payment_received",
            "order.pending",
            "order.confirmed",
            "order.final",
        );
        let allowed: [&[&str]; 4] = [
            &[received, fin],
            &[received, pending, fin],
            &[received, confirmed, fin],
            &[received, pending, confirmed, fin],
        ];
        assert!(allowed.contains(&&types[..]), "{url}: {types:?}");

        // 4. The API shows it final, with its payment and delivered events.
        let one = get(&s, "/v1/orders/SHOP-1").await;
        assert_eq!(one.body["state"], "final", "{one:?}");
        assert_eq!(one.body["amount_paid"], "25000000");
        assert_eq!(one.body["payments"].as_array().unwrap().len(), 1);
        let events = one.body["events"].as_array().unwrap();
        assert_eq!(events.len(), types.len(), "{one:?}");
        assert!(
            events.iter().all(|e| e["status"] == "delivered"),
            "{events:?}"
        );
        let (code, _) = s.stop("TERM", Duration::from_secs(30)).await;
        assert_eq!(code, Some(0), "{}", s.proc.stderr());
    }
}
