//! A delivery stored by the real `payrecon serve`, which is SIGKILLed while the chain is too
//! slow to apply it: the next `payrecon run` applies it exactly once. The chain is anvil
//! behind a delay proxy, switched to slow only once serve is ready (its start-up preflight
//! goes through the proxy too). No secret reaches stderr.

use std::time::Duration;

use payrecon::domain::State;

use super::proxy::DelayProxy;
use super::{
    assert_no_secret, assert_one_webhook_transition, audit, cg_body, cg_sig, post, providers,
    CG_SECRET, NEVER,
};
use crate::cli::harness::{command, output, scalar, Running};
use crate::reconcile::{on_backends, payee, toml_with_chain, usdt, World, CG, CONFS};
use crate::support::{free_port, wait_until};
use payrecon_testkit::inspect::Inspect;

/// The binary with debug logs (the more it says, the more a leak would show).
fn payrecon(config: &std::path::Path, args: &[&str]) -> tokio::process::Command {
    let mut cmd = command(config, args);
    cmd.env("PAYRECON_LOG", "debug");
    cmd
}

async fn unprocessed(url: &str) -> i64 {
    scalar(
        url,
        "SELECT COUNT(*) FROM payrecon_webhook_events WHERE processed_at IS NULL",
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ingest_delivery_stored_by_a_killed_serve_is_applied_once_by_the_next_run() {
    on_backends(|url| async move {
        let p = providers(None);
        let Some(w) = World::start_with(&url, &p, NEVER).await else {
            return;
        };
        let to = payee(31);
        w.orders(&[("K-1", &to, usdt(25))]).await;
        let tx = w.pay(&to, usdt(25)).await;
        w.anvil.mine(70).await; // final: below the finalized block
        let (_, _, log_index) = w.where_is(&tx).await;

        let proxy = DelayProxy::start(&w.anvil.url).await;
        let chain = format!("confirmations = {CONFS}\nfinality = \"finalized\"");
        let toml = toml_with_chain(&url, &w.cg_url, &proxy.url, &w.token, &chain, &p, NEVER);
        let dir = payrecon_testkit::tmp::dir().unwrap();
        let config = dir.path().join("config.toml");
        std::fs::write(&config, toml).unwrap();

        let port = free_port();
        let base = format!("http://127.0.0.1:{port}");
        let mut cmd = payrecon(&config, &["serve"]);
        cmd.env("PAYRECON_HTTP__LISTEN", format!("127.0.0.1:{port}"));
        let mut serve = Running::spawn(cmd);
        let http = super::client();
        wait_until(
            "serve to answer /readyz",
            Duration::from_secs(30),
            || async {
                let r = http.get(format!("{base}/readyz")).send().await;
                r.is_ok_and(|r| r.status().as_u16() == 200)
            },
        )
        .await;

        // Only now: every chunk sent to the chain is held 10 s (the chain client's timeout is
        // 5 s), so the delivery cannot be applied before the kill.
        proxy.set_delay(Duration::from_secs(10));
        let body = cg_body(&w, "7301", &tx, &to);
        let answer = post(&http, &base, CG, &cg_sig(CG_SECRET, &tx), body).await;
        assert_eq!(answer, (200, String::new()), "{url}\n{}", serve.stderr());
        let stored = w
            .store()
            .unprocessed_webhook_deliveries(Some(CG), 10)
            .await
            .unwrap();
        assert_eq!(stored.len(), 1, "{url}: stored before the answer");
        assert_eq!(stored[0].event_id, "7301");
        assert_eq!(unprocessed(&url).await, 1, "{url}: processed_at is NULL");
        // The consumer is reading the chain (through the held proxy) when the kill comes.
        wait_until(
            "the consumer to reach the chain",
            Duration::from_secs(10),
            || async { proxy.held() > 0 },
        )
        .await;

        serve.signal("KILL").await;
        let (code, _) = serve.wait(Duration::from_secs(10)).await;
        assert_eq!(code, None, "{url}: killed by a signal");
        assert_eq!(
            w.order("K-1").await.state,
            State::Unpaid,
            "{url}: not applied before the kill"
        );
        assert!(audit(w.store()).await.is_empty(), "{url}");
        assert_eq!(unprocessed(&url).await, 1, "{url}");

        proxy.set_delay(Duration::ZERO);
        let first = output(payrecon(&config, &["run", "--format", "json"])).await;
        first.assert_code(0);
        first.assert_no_panic();
        let o = w.order("K-1").await;
        assert_eq!(o.state, State::Final, "{url}: {o:?}\n{}", first.stderr);
        assert_eq!(o.tx_hash.as_deref(), Some(tx.as_str()));
        assert_eq!(o.log_index, Some(log_index));
        assert_eq!(o.amount_paid, Some(usdt(25).to_string()));
        let rows = audit(w.store()).await;
        assert_one_webhook_transition(&rows, "K-1", State::Final, CG);
        assert_eq!(
            unprocessed(&url).await,
            0,
            "{url}: the inbox row is processed"
        );
        assert_eq!(w.store().webhook_delivery_count(CG).await.unwrap(), 1);

        let second = output(payrecon(&config, &["run", "--format", "json"])).await;
        second.assert_code(0);
        assert_eq!(
            audit(w.store()).await,
            rows,
            "{url}: the second run applies nothing"
        );
        assert_eq!(second.json()["totals"]["applied"], 0, "{url}");

        for (what, text) in [
            ("serve's stderr", serve.stderr()),
            ("the first run's stderr", first.stderr.clone()),
            ("the first run's stdout", first.stdout.clone()),
            ("the second run's stderr", second.stderr.clone()),
        ] {
            assert!(
                !text.is_empty() || what.contains("stdout"),
                "{url}: {what} is empty"
            );
            assert_no_secret(what, &text);
        }
    })
    .await;
}
