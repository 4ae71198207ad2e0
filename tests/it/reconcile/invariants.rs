//! The invariants of ARCHITECTURE.md end to end: never backwards, once per (order, to_state)
//! under racing processes, unknown payments credit nothing, dry runs write nothing, resend
//! cooldown across instances, no secret in reports or the runs table, bad records rejected and
//! counted.

use std::time::Duration;

use payrecon::domain::State;
use payrecon_testkit::sandbox::chaingateway::Fault;
use serde_json::json;

use crate::evm::send_tokens_in_one_block;

use super::{entry, found, gaps, ghost_hash, on_backends, opts, payee, usdt, World, CG, KEY};
use payrecon_testkit::inspect::Inspect;

#[tokio::test]
async fn state_never_moves_backwards_whatever_arrives_in_whatever_order() {
    on_backends(|url| async move {
        let Some(w) = World::start(&url).await else {
            return;
        };
        w.orders(&[("V-1", &payee(1), usdt(25))]).await;
        let tx = w.pay(&payee(1), usdt(25)).await;
        w.notify("1101", &tx, &payee(1), "25");
        w.run().await;
        assert_eq!(w.order("V-1").await.state, State::Pending);

        // The merchant's handler jumps to final; the chain still says pending.
        assert!(
            crate::support::set_state_raw(w.store(), "V-1", State::Final)
                .await
                .unwrap()
        );
        let report = w.run().await;
        let cg = entry(&report, CG);
        assert_eq!(
            (cg.refused_backwards, cg.applied),
            (1, 0),
            "{}",
            report.to_json()
        );
        assert_eq!(gaps(cg), [0; 6]);
        assert_eq!(w.order("V-1").await.state, State::Final);

        // Later the chain catches up to final: nothing to do, no second audit row.
        w.anvil.mine(70).await;
        let report = w.run().await;
        assert_eq!(report.totals.applied, 0);
        assert_eq!(entry(&report, CG).refused_backwards, 0);
        assert_eq!(w.order("V-1").await.state, State::Final);
        assert_eq!(w.audit().await.len(), 1);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_racing_apply_each_transition_and_resend_once() {
    on_backends(|url| async move {
        let Some(w) = World::start(&url).await else {
            return;
        };
        let n = 6u64;
        let refs: Vec<String> = (1..=n).map(|i| format!("C-{i}")).collect();
        let payees: Vec<String> = (1..=n).map(payee).collect();
        let orders: Vec<(&str, &str, _)> = (0..n as usize)
            .map(|i| (refs[i].as_str(), payees[i].as_str(), usdt(10)))
            .collect();
        w.orders(&orders).await;
        // One block, so that every payment is pending (1 confirmation) at the race.
        let payments: Vec<(&str, _)> = payees.iter().map(|p| (p.as_str(), usdt(10))).collect();
        let txs = send_tokens_in_one_block(&w.anvil, &w.token, &w.payer, &payments).await;
        for (i, (to, tx)) in payees.iter().zip(&txs).enumerate() {
            w.notify(&format!("12{i:02}"), tx, to, "10");
        }
        assert!(w.cg.mark_failed("ethereum", "1200"));
        let other = w.another_app("", "").await;

        // Two tasks on a multi-threaded runtime: truly parallel, not just interleaved.
        let (ea, eb) = (w.app.engine.clone(), other.engine.clone());
        let ta = tokio::spawn(async move { ea.run(&opts()).await });
        let tb = tokio::spawn(async move { eb.run(&opts()).await });
        let (a, b) = tokio::join!(ta, tb);
        let (a, b) = (a.unwrap().unwrap(), b.unwrap().unwrap());

        assert!(
            !a.any_failed() && !b.any_failed(),
            "{}\n{}",
            a.to_json(),
            b.to_json()
        );
        assert_eq!(
            a.totals.applied + b.totals.applied,
            n,
            "{}\n{}",
            a.to_json(),
            b.to_json()
        );
        let audit = w.audit().await;
        assert_eq!(audit.len(), n as usize, "{audit:?}");
        for r in &refs {
            assert_eq!(w.order(r).await.state, State::Pending);
            assert_eq!(audit.iter().filter(|t| &t.0 == r).count(), 1, "{r}");
        }
        assert_eq!(w.cg.retries().len(), 1, "one resend for both processes");
        let (ea, eb) = (entry(&a, CG), entry(&b, CG));
        assert_eq!(ea.resends.requested + eb.resends.requested, 1);
        assert_eq!(ea.resends.skipped + eb.resends.skipped, 1);
    })
    .await;
}

#[tokio::test]
async fn dry_run_writes_nothing_and_reports_what_it_would_apply() {
    on_backends(|url| async move {
        let Some(w) = World::start(&url).await else {
            return;
        };
        w.orders(&[("D-1", &payee(1), usdt(25)), ("D-2", &payee(2), usdt(30))])
            .await;
        let tx1 = w.pay(&payee(1), usdt(25)).await;
        let tx2 = w.pay(&payee(2), usdt(30)).await;
        let (_, _, li2) = w.where_is(&tx2).await;
        w.seed("D-2", &tx2, li2, usdt(30), State::Pending).await;
        w.anvil.mine(70).await;
        w.notify("1301", &tx1, &payee(1), "25");
        w.cg.mark_failed("ethereum", "1301");
        w.notify("1302", &ghost_hash(3), &payee(9), "1");
        let tables = [
            "orders",
            "payrecon_transitions",
            "payrecon_findings",
            "payrecon_runs",
            "payrecon_resends",
        ];
        let mut before = Vec::new();
        for t in tables {
            before.push(w.store().count(t).await.unwrap());
        }
        let snaps = (w.order("D-1").await, w.order("D-2").await);

        let mut o = opts();
        o.dry_run = true;
        let report = w.app.engine.run(&o).await.unwrap();

        assert!(report.dry_run);
        let cg = entry(&report, CG);
        assert_eq!(gaps(cg), [1, 0, 1, 0, 1, 0], "{}", report.to_json());
        assert_eq!((cg.applied, cg.resends.requested), (0, 0));
        assert_eq!(found(&report, "missing")[0].action, "would_apply");
        assert_eq!(found(&report, "failed_notification")[0].action, "none");
        // The sweep also plans without writing.
        let sweep = entry(&report, "chain");
        assert_eq!(gaps(sweep), [0, 1, 0, 0, 0, 0]);
        assert_eq!(found(&report, "lagging")[0].action, "would_apply");
        let mut after = Vec::new();
        for t in tables {
            after.push(w.store().count(t).await.unwrap());
        }
        assert_eq!(before, after, "{tables:?}");
        assert_eq!((w.order("D-1").await, w.order("D-2").await), snaps);
        assert!(w.store().run_by_id(&report.run_id).await.unwrap().is_none());
        assert!(w.cg.retries().is_empty());

        // The same run for real does what the dry run announced.
        let real = w.run().await;
        assert_eq!(real.totals.applied, 2, "{}", real.to_json());
        assert_eq!(w.cg.retries().len(), 1);
    })
    .await;
}

#[tokio::test]
async fn resend_cooldown_holds_across_separate_app_instances() {
    on_backends(|url| async move {
        let Some(w) = World::start(&url).await else {
            return;
        };
        w.orders(&[("Q-1", &payee(1), usdt(15))]).await;
        let tx = w.pay(&payee(1), usdt(15)).await;
        w.notify("1401", &tx, &payee(1), "15");
        w.cg.mark_failed("ethereum", "1401");

        let first = w.run().await;
        assert_eq!(entry(&first, CG).resends.requested, 1);
        // Another process, fresh memory, same database: the claim is persisted.
        let second = w.another_app("", "").await;
        let report = second.engine.run(&opts()).await.unwrap();
        let cg = entry(&report, CG);
        assert_eq!(
            (cg.resends.requested, cg.resends.skipped),
            (0, 1),
            "{}",
            report.to_json()
        );
        assert_eq!(w.cg.retries().len(), 1);
        assert_eq!(w.store().count("payrecon_resends").await.unwrap(), 1);

        // A process with a 1 s cooldown may ask again once it has passed.
        let third = w
            .another_app("", "[reconcile]\nresend_cooldown = \"1s\"")
            .await;
        tokio::time::sleep(Duration::from_millis(1100)).await;
        let report = third.engine.run(&opts()).await.unwrap();
        assert_eq!(
            entry(&report, CG).resends.requested,
            1,
            "{}",
            report.to_json()
        );
        assert_eq!(w.cg.retries().len(), 2);
        assert_eq!(w.audit().await.len(), 1);
    })
    .await;
}

#[tokio::test]
async fn no_secret_in_the_report_the_findings_or_the_runs_table() {
    on_backends(|url| async move {
        let rpc_key = "infura0e2e0secret0project0id77";
        let extra = format!(
            "[chains.polygon]\nrpc_url = \"http://127.0.0.1:1/v3/{rpc_key}\"\nmax_retries = 0\n"
        );
        let Some(w) = World::start_with(&url, "", &extra).await else {
            return;
        };
        w.orders(&[("Z-1", &payee(1), usdt(1))]).await;
        let tx = w.pay(&payee(1), usdt(1)).await;
        w.notify("1501", &tx, &payee(1), "1");
        // Every request answers 400 with the request headers (Authorization too) echoed.
        w.cg.push_fault(Fault::EchoHeaders, 50);
        // Injected: polygon's node is down, the provider answers 400 to everything.
        for fault in ["chain polygon", "provider cg: "] {
            w.allow_error(fault);
        }

        let report = w.run().await;

        let cg = entry(&report, CG);
        assert_eq!(cg.status, "failed", "{}", report.to_json());
        let error = cg.error.clone().unwrap();
        assert!(!error.is_empty());
        let json = report.to_json();
        let row = w.store().run_by_id(&report.run_id).await.unwrap().unwrap();
        assert_eq!(row.status, "failed");
        let row_error = row.error.unwrap();
        let findings = format!("{:?}", w.store().findings().await.unwrap());
        for text in [&json, &row_error, &findings] {
            assert!(!text.contains(KEY), "API key leaked: {text}");
            assert!(!text.contains(rpc_key), "RPC key leaked: {text}");
        }
        assert_eq!(w.order("Z-1").await.state, State::Unpaid);
    })
    .await;
}

#[tokio::test]
async fn bad_records_are_rejected_and_counted_and_the_good_ones_in_the_page_applied() {
    on_backends(|url| async move {
        let Some(w) = World::start(&url).await else {
            return;
        };
        w.orders(&[("G-1", &payee(1), usdt(5)), ("G-2", &payee(2), usdt(6))])
            .await;
        let tx1 = w.pay(&payee(1), usdt(5)).await;
        let tx2 = w.pay(&payee(2), usdt(6)).await;
        w.notify("1601", &tx1, &payee(1), "5");
        let bad = |id: &str, field: &str, value: serde_json::Value| {
            let mut n = payrecon_testkit::sandbox::chaingateway::notification(
                id,
                &tx2,
                &w.token,
                &payee(2),
                Some("6"),
                super::minutes_ago(10),
            );
            n[field] = value;
            w.cg.add_notification("ethereum", n);
        };
        bad("1602", "txid", json!(format!("0x{}", "zz".repeat(32))));
        bad("1603", "txid", json!("0x1234"));
        bad("1604", "to", json!("0xnot-an-address"));
        bad("1605", "created_at", json!("last tuesday"));
        w.notify("1606", &tx2, &payee(2), "6");

        let report = w.run().await;

        let cg = entry(&report, CG);
        assert_eq!(cg.status, "ok", "{}", report.to_json());
        assert_eq!(cg.rejected, 4);
        assert_eq!((cg.checked, cg.applied), (2, 2));
        assert_eq!(gaps(cg), [2, 0, 0, 0, 0, 0]);
        assert_eq!(w.order("G-1").await.state, State::Pending);
        assert_eq!(w.order("G-2").await.state, State::Pending);
        let row = w.store().run_by_id(&report.run_id).await.unwrap().unwrap();
        assert_eq!((row.status.as_str(), row.applied), ("ok", 2));
    })
    .await;
}

#[tokio::test]
async fn dry_run_across_batches_reports_what_the_real_run_does() {
    on_backends(|url| async move {
        let extra = "[reconcile]\nbatch_size = 1";
        let Some(w) = World::start_with(&url, "", extra).await else {
            return;
        };
        // One order, two payments to its address, one record per batch.
        w.orders(&[("DB-1", &payee(1), usdt(5))]).await;
        let tx1 = w.pay(&payee(1), usdt(5)).await;
        let tx2 = w.pay(&payee(1), usdt(5)).await;
        w.notify("2201", &tx1, &payee(1), "5");
        w.notify("2202", &tx2, &payee(1), "5");

        let mut o = opts();
        o.dry_run = true;
        let dry = w.app.engine.run(&o).await.unwrap();
        let real = w.run().await;

        let (d, r) = (entry(&dry, CG), entry(&real, CG));
        assert_eq!(gaps(r), [1, 0, 0, 0, 1, 0], "{}", real.to_json());
        assert_eq!(gaps(d), gaps(r), "dry: {}", dry.to_json());
        let would: Vec<_> = dry
            .findings
            .iter()
            .filter(|f| f.action == "would_apply")
            .collect();
        assert_eq!(would.len(), 1, "{}", dry.to_json());
        assert_eq!(w.audit().await.len(), 1);
    })
    .await;
}
