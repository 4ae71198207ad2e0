//! A webhook delivery applied by a real `serve` makes its event too (`source = "webhook"`,
//! no run), and serve's delivery loop, woken by the consumer's commit, sends it at once.

use std::time::Duration;

use super::events_table;
use super::receiver::Receiver;
use crate::ingest::{cg_body, cg_sig, providers, wait_applied, Daemon, CG_SECRET, NEVER};
use crate::reconcile::{on_backends, payee, usdt, World, CG, CONFS};
use crate::support::wait_until;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_transition_is_delivered_as_an_event_by_serve() {
    on_backends(|url| async move {
        let receiver = Receiver::start().await;
        let p = providers(None);
        let extra = format!("{NEVER}\n{}", events_table(&receiver.url(), 2, ""));
        let Some(w) = World::start_with(&url, &p, &extra).await else {
            return;
        };
        let to = payee(1);
        w.orders(&[("W-1", &to, usdt(25))]).await;
        let tx = w.pay(&to, usdt(25)).await;
        w.anvil.mine(CONFS).await;
        let d = Daemon::start(w.another_app(&p, &extra).await).await;
        let body = cg_body(&w, "7101", &tx, &to);
        assert_eq!(d.post(CG, &cg_sig(CG_SECRET, &tx), body).await.0, 200);
        wait_applied(&w, "W-1").await;
        wait_until("the events delivered", Duration::from_secs(5), || async {
            receiver.delivered().len() >= 2
        })
        .await;
        // The payment's event, then the transition's.
        let got = receiver.delivered();
        assert_eq!(got.len(), 2, "{url}");
        let p = got[0].json();
        assert_eq!(p["type"], "order.payment_received", "{p}");
        assert_eq!(p["data"]["source"], "webhook");
        assert!(p["data"]["held"].is_null(), "{p}");
        let v = got[1].json();
        assert_eq!(v["type"], "order.confirmed", "{v}");
        assert_eq!(v["data"]["order_ref"], "W-1");
        assert_eq!(v["data"]["source"], "webhook");
        assert_eq!(v["data"]["provider"], CG);
        assert!(v["data"]["run_id"].is_null(), "{v}");
        assert_eq!(v["data"]["tx_hash"], tx.as_str());
        // The receiver answered; serve records the delivery right after.
        wait_until("the delivery recorded", Duration::from_secs(5), || async {
            super::all_events(w.store())
                .await
                .iter()
                .all(|e| e.status == "delivered")
        })
        .await;
        let events = super::all_events(w.store()).await;
        assert_eq!(events.len(), 2);
        let ids: std::collections::BTreeSet<_> = events.iter().map(|e| e.id.clone()).collect();
        assert_eq!(ids, got.iter().map(|r| r.id.clone()).collect());
        let m = d.metrics().await;
        assert!(
            m.contains("payrecon_events_total{outcome=\"delivered\"} 2"),
            "{m}"
        );
    })
    .await;
}
