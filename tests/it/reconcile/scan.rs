//! The deposit scan (`chains.<name>.scan_unpaid`, on by default): token payments to unpaid
//! orders' deposit addresses that no provider reported — Qvard never lists an underpaid one —
//! found with `eth_getLogs` over the run's window and applied under the `chain` entry.

use payrecon::app::App;
use payrecon::config::Config;
use payrecon::domain::State;
use payrecon::engine::RunOptions;

use super::{entry, found, gaps, on_backends, opts, payee, toml_with_chain, usdt, World, CONFS};

/// The world's app rebuilt with the scan on (the harness turns it off), `log_range` blocks
/// per `eth_getLogs` request.
async fn scanning(w: &World, log_range: u64) -> App {
    let chain = format!(
        "confirmations = {CONFS}\nfinality = \"finalized\"\nscan_unpaid = true\nlog_range = {log_range}"
    );
    let text = toml_with_chain(&w.db_url, &w.cg_url, &w.anvil.url, &w.token, &chain, "", "");
    App::build(Config::from_toml(&text, std::iter::empty()).unwrap())
        .await
        .unwrap()
}

#[tokio::test]
async fn an_unreported_underpayment_is_found_on_chain_held_and_topped_up() {
    on_backends(|url| async move {
        let Some(w) = World::start(&url).await else {
            return;
        };
        w.orders(&[
            ("S-1", &payee(1), usdt(25)),
            ("S-2", &payee(2), usdt(30)),
            ("S-3", &payee(3), usdt(40)),
        ])
        .await;
        // S-1 underpaid, S-2 paid in full; S-3 nothing. A payment to an address no order
        // waits on is not looked for. No provider lists any of them.
        let under = w.pay(&payee(1), usdt(20)).await;
        let full = w.pay(&payee(2), usdt(30)).await;
        w.pay(&payee(9), usdt(5)).await;
        w.anvil.mine(CONFS).await;
        let app = scanning(&w, 3).await;

        let report = app.engine.run(&opts()).await.unwrap();
        let chain = entry(&report, "chain");
        assert_eq!(chain.status, "ok", "{}", report.to_json());
        assert_eq!(gaps(chain), [1, 0, 0, 1, 0, 0], "{}", report.to_json());
        assert_eq!(chain.applied, 1);
        let s1 = w.order("S-1").await;
        assert_eq!(
            (s1.state, s1.tx_hash.as_deref(), s1.amount_paid.as_deref()),
            (State::Unpaid, None, Some("20000000"))
        );
        let s2 = w.order("S-2").await;
        assert_eq!(
            (s2.state, s2.tx_hash.as_deref()),
            (State::Confirmed, Some(full.as_str()))
        );
        assert_eq!(w.order("S-3").await.state, State::Unpaid);
        let mismatch = found(&report, "amount_mismatch");
        assert_eq!(mismatch[0].order_ref.as_deref(), Some("S-1"));
        assert_eq!(mismatch[0].tx_hash.as_deref(), Some(under.as_str()));
        assert_eq!(mismatch[0].action, "held");
        assert!(
            mismatch[0]
                .detail
                .starts_with("underpaid: paid 20000000 of 25000000"),
            "{}",
            mismatch[0].detail
        );
        let audit = w.audit().await;
        assert_eq!(audit.len(), 1, "{audit:?}");

        // S-1 is still unpaid: the scan finds its payment again and credits nothing twice.
        let again = app.engine.run(&opts()).await.unwrap();
        assert_eq!(entry(&again, "chain").applied, 0, "{}", again.to_json());
        assert_eq!(
            w.order("S-1").await.amount_paid.as_deref(),
            Some("20000000")
        );
        assert_eq!(w.audit().await.len(), 1);

        // A top-up no provider reports: the scan finds it and the two cover S-1.
        let top_up = w.pay(&payee(1), usdt(5)).await;
        w.anvil.mine(CONFS).await;
        let report = app.engine.run(&opts()).await.unwrap();
        assert_eq!(entry(&report, "chain").applied, 1, "{}", report.to_json());
        let s1 = w.order("S-1").await;
        assert_eq!(
            (s1.state, s1.tx_hash.as_deref(), s1.amount_paid.as_deref()),
            (State::Confirmed, Some(top_up.as_str()), Some("25000000"))
        );
        assert_eq!(w.audit().await.len(), 2);
    })
    .await;
}

#[tokio::test]
async fn the_scan_reads_only_the_window_and_never_writes_on_a_dry_run() {
    on_backends(|url| async move {
        let Some(w) = World::start(&url).await else {
            return;
        };
        w.orders(&[("S-1", &payee(1), usdt(25))]).await;
        w.pay(&payee(1), usdt(25)).await;
        let app = scanning(&w, 2000).await;

        // A window that starts after every block: nothing found.
        let now = jiff::Timestamp::now();
        let later = RunOptions {
            since: now + jiff::SignedDuration::from_hours(1),
            until: now + jiff::SignedDuration::from_hours(2),
            ..opts()
        };
        let report = app.engine.run(&later).await.unwrap();
        assert_eq!(
            gaps(entry(&report, "chain")),
            [0; 6],
            "{}",
            report.to_json()
        );

        let dry = RunOptions {
            dry_run: true,
            ..opts()
        };
        let report = app.engine.run(&dry).await.unwrap();
        let missing = found(&report, "missing");
        assert_eq!(missing.len(), 1, "{}", report.to_json());
        assert_eq!(missing[0].action, "would_apply");
        assert_eq!(w.order("S-1").await.state, State::Unpaid);
        assert!(w.audit().await.is_empty());

        let report = app.engine.run(&opts()).await.unwrap();
        assert_eq!(entry(&report, "chain").applied, 1);
        assert_eq!(
            w.order("S-1").await.amount_paid.as_deref(),
            Some("25000000")
        );
    })
    .await;
}
