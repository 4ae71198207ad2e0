//! The whole view after two runs (the second with a provider failing), on both backends.

use alloy::primitives::U256 as EvmU256;
use jiff::{SignedDuration, Timestamp};
use payrecon::domain::{Address, Attach, BlockRef, PaymentKey, PlannedTransition, State, TxHash};
use payrecon::store::{ApplyContext, NewOrder, Source};
use payrecon_testkit::sandbox::chaingateway::{notification, FakeChaingateway, Fault};
use payrecon_testkit::sandbox::{SANDBOX_API_KEY, SANDBOX_PROVIDER, SANDBOX_TOKEN};
use serde_json::Value;

use super::{counts, order_refs, provider, report_gaps, same_ms, status_json, KINDS};
use crate::cli::harness::{addr, payrecon, usdt, World};
use payrecon_testkit::inspect::Inspect;

fn backup_table(url: &str) -> String {
    format!(
        "[providers.backup]\nkind = \"chaingateway\"\nbase_url = \"{url}\"\n\
         api_key = \"{SANDBOX_API_KEY}\"\nnetwork = \"mainnet\"\nchains = [\"ethereum\"]\n\
         timeout = \"2s\"\nmax_retries = 1\nbackoff = \"10ms\"\n"
    )
}

/// Order `P-<i>` due 30 USDT, paid 25 on chain and listed by the provider: underpaid.
async fn underpaid(w: &World, i: u32) {
    let order = NewOrder {
        order_ref: format!("P-{i}"),
        chain: "ethereum".into(),
        pay_to: addr(i).to_string(),
        asset: SANDBOX_TOKEN.into(),
        amount_due: usdt(30),
    };
    w.store.insert_orders(&[order]).await.unwrap();
    let token = Address::parse(SANDBOX_TOKEN).unwrap();
    let payer = Address::parse("0x00000000000000000000000000000000000000fe").unwrap();
    let (tx, _) = w
        .chain
        .add_token_transfer(&token, &payer, &addr(i), EvmU256::from(usdt(25)));
    w.chain.mine_block();
    w.chain.mine(70);
    let at = Timestamp::now() - SignedDuration::from_mins(30);
    let n = notification(
        &format!("n-{i}"),
        tx.as_str(),
        SANDBOX_TOKEN,
        addr(i).as_str(),
        Some("25"),
        at,
    );
    w.cg.add_notification("ethereum", n);
}

/// Order `P-<i>` held `pending` with a payment the chain does not have: the sweep's `reorged`.
async fn lost_payment(w: &World, i: u32) {
    let order = NewOrder {
        order_ref: format!("P-{i}"),
        chain: "ethereum".into(),
        pay_to: addr(i).to_string(),
        asset: SANDBOX_TOKEN.into(),
        amount_due: usdt(25),
    };
    w.store.insert_orders(&[order]).await.unwrap();
    let snap = w
        .store
        .order_by_ref(&format!("P-{i}"))
        .await
        .unwrap()
        .unwrap();
    let t = PlannedTransition {
        order_id: snap.id,
        order_ref: snap.order_ref.clone(),
        from: State::Unpaid,
        to: State::Pending,
        attach: Some(Attach {
            key: PaymentKey {
                chain: "ethereum".into(),
                tx_hash: TxHash::parse(&format!("0x{:064x}", 0xdead_0000u64 + u64::from(i)))
                    .unwrap(),
                log_index: 0,
            },
            amount: usdt(25),
            block: BlockRef {
                number: 2,
                hash: format!("0x{:064x}", 0xb10c_u64),
            },
        }),
        credit: None,
    };
    let ctx = ApplyContext {
        source: Source::Webhook,
        provider: "merchant".into(),
        run_id: String::new(),
        events: false,
        retries: Default::default(),
    };
    w.store.apply(&[t], &ctx).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_shows_last_runs_gaps_findings_resends_inbox_and_leases() {
    let (_guard, urls) = crate::support::all_backends().await;
    for url in urls {
        let w = World::new(payrecon_testkit::tmp::dir().unwrap(), url.clone()).await;
        let (backup, backup_url) = FakeChaingateway::start(SANDBOX_API_KEY).await;
        let config = w.config(&backup_table(&backup_url));
        // Before any run: every provider listed, no run, zeros.
        let s = status_json(&payrecon(&config, &["status", "--format", "json"]).await);
        assert!(provider(&s, "chain")["last_run"].is_null(), "{s}");
        assert_eq!(s["gaps_24h"]["total"]["missing"], 0);

        w.missing_payments(1, 2).await;
        w.failed_notification(3).await;
        underpaid(&w, 4).await;
        lost_payment(&w, 5).await;
        let r1 = payrecon(&config, &["run", "--format", "json"]).await;
        let r1 = {
            r1.assert_code(0);
            r1.json()
        };
        backup.push_fault(Fault::MalformedJson, 100);
        w.missing_payments(6, 1).await;
        // A mismatch is flagged by the run that finds it; P-4's payment is held short, so every
        // run that sees it flags it again.
        underpaid(&w, 7).await;
        let r2 = payrecon(&config, &["run", "--format", "json"]).await;
        let r2 = {
            r2.assert_code(1);
            r2.json()
        };
        let received = Timestamp::now() - SignedDuration::from_mins(5);
        w.store
            .insert_webhook_delivery(SANDBOX_PROVIDER, "ev-1", "{}", received)
            .await
            .unwrap();
        let old = Timestamp::now() - SignedDuration::from_hours(2);
        let cooldown = std::time::Duration::from_secs(3600);
        assert!(w
            .store
            .claim_resend(SANDBOX_PROVIDER, "old-1", old, cooldown)
            .await
            .unwrap());

        let before = counts(&w).await;
        let s = status_json(&payrecon(&config, &["status", "--format", "json"]).await);
        assert_eq!(counts(&w).await, before, "{url}: status wrote");

        // Last run per provider: the second run; backup failed in it, the others did not.
        for (name, want) in [
            (SANDBOX_PROVIDER, "ok"),
            ("backup", "failed"),
            ("chain", "ok"),
        ] {
            let run = &provider(&s, name)["last_run"];
            assert_eq!(run["run_id"], r2["run_id"], "{url}: {s}");
            assert_eq!(
                (run["status"].as_str(), run["trigger"].as_str()),
                (Some(want), Some("cli")),
                "{url} {name}: {s}"
            );
            same_ms(&run["started_at"], &r2["started_at"]);
            same_ms(&run["finished_at"], &r2["finished_at"]);
            assert!(run["duration_seconds"].as_f64().unwrap() >= 0.0);
        }
        let err = provider(&s, "backup")["last_run"]["error"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(!err.is_empty() && !err.starts_with("backup:"), "{err}");
        assert!(provider(&s, "chain")["last_run"]["error"].is_null());
        same_ms(
            &provider(&s, SANDBOX_PROVIDER)["last_success_at"],
            &r2["finished_at"],
        );
        same_ms(
            &provider(&s, "backup")["last_success_at"],
            &r1["finished_at"],
        );

        // Gaps: the sum of both runs' reports, per provider and kind, zeros included.
        let gaps = &s["gaps_24h"];
        for kind in KINDS {
            let mut total = 0;
            for name in [SANDBOX_PROVIDER, "backup", "chain"] {
                let want = report_gaps(&r1, name, kind) + report_gaps(&r2, name, kind);
                assert_eq!(
                    gaps["providers"][name][kind].as_u64(),
                    Some(want),
                    "{url} {name} {kind}: {s}"
                );
                total += want;
            }
            assert_eq!(gaps["total"][kind].as_u64(), Some(total), "{url} {kind}");
        }
        assert!(gaps["total"]["missing"].as_u64().unwrap() >= 4, "{s}");

        // Open exceptions: one per problem across both runs (README.md, "Exceptions"). P-4
        // (held short) and P-5 (gone from the chain) were seen by both runs, P-7 by the second.
        let x = &s["exceptions"];
        assert_eq!(x["table"], true, "{url}: {s}");
        let open = |kind: &str| x["open"][kind]["open"].as_i64();
        assert_eq!(
            (
                open("amount_mismatch"),
                open("reorged"),
                open("late_payment"),
                open("unknown_payment"),
                x["open_total"].as_i64()
            ),
            (Some(2), Some(1), Some(0), Some(0), Some(3)),
            "{url}: {s}"
        );
        assert!(x["open"]["late_payment"]["oldest_first_seen_at"].is_null());
        let oldest = x["open"]["amount_mismatch"]["oldest_first_seen_at"]
            .as_str()
            .unwrap();
        assert!(
            oldest.parse::<Timestamp>().unwrap() <= Timestamp::now(),
            "{oldest}"
        );
        assert_eq!(order_refs(&x["items"]), ["P-4", "P-5", "P-7"], "{url}: {s}");
        let item = |r: &str| {
            x["items"]
                .as_array()
                .unwrap()
                .iter()
                .find(|i| i["order_ref"] == r)
                .unwrap()
                .clone()
        };
        let seen = |r: &str| (item(r)["kind"].clone(), item(r)["seen_count"].as_i64());
        assert_eq!(
            seen("P-4"),
            (Value::from("amount_mismatch"), Some(2)),
            "{url}: {s}"
        );
        assert_eq!(seen("P-5"), (Value::from("reorged"), Some(2)), "{url}: {s}");
        assert_eq!(
            seen("P-7"),
            (Value::from("amount_mismatch"), Some(1)),
            "{url}: {s}"
        );
        // Each names its payment as the second run's finding does.
        for r in ["P-4", "P-5", "P-7"] {
            let f = r2["findings"]
                .as_array()
                .unwrap()
                .iter()
                .find(|f| f["order_ref"] == r && f["kind"] == item(r)["kind"])
                .unwrap_or_else(|| panic!("{url}: no finding of {r} in {r2}"));
            assert_eq!(
                (&item(r)["tx_hash"], &item(r)["chain"], &item(r)["status"]),
                (&f["tx_hash"], &f["chain"], &Value::from("open")),
                "{url} {r}"
            );
        }
        assert_eq!(item("P-4")["amount"], Value::from(usdt(25).to_string()));

        // Resends within the cooldown (not the one requested two hours ago); the inbox.
        assert_eq!(s["resends"]["pending"], 1, "{url}: {s}");
        let item = &s["resends"]["items"][0];
        assert_eq!(
            (item["provider"].as_str(), item["notification_id"].as_str()),
            (Some(SANDBOX_PROVIDER), Some("n-3"))
        );
        assert_eq!(s["webhook_inbox"]["unprocessed"], 1);
        same_ms(
            &s["webhook_inbox"]["oldest_received_at"],
            &Value::String(received.to_string()),
        );
        assert!(s["webhook_inbox"]["oldest_age_seconds"].as_i64().unwrap() >= 300);
        assert_eq!(
            (&s["lease_table"], &s["leases"]),
            (&Value::Bool(true), &serde_json::json!([]))
        );

        // The text format shows the same numbers.
        let text = payrecon(&config, &["status"]).await;
        text.assert_code(0);
        let t = &text.stdout;
        let line = |start: &str| {
            t.lines()
                .find(|l| l.starts_with(start))
                .unwrap_or_else(|| panic!("no {start:?} line in\n{t}"))
                .to_string()
        };
        assert!(
            line("backup ").split_whitespace().nth(1) == Some("failed"),
            "{t}"
        );
        assert!(
            line(&format!("{SANDBOX_PROVIDER} "))
                .split_whitespace()
                .nth(1)
                == Some("ok"),
            "{t}"
        );
        let totals: Vec<u64> = line("total ")
            .split_whitespace()
            .skip(1)
            .map(|n| n.parse().unwrap())
            .collect();
        let mut want: Vec<u64> = KINDS
            .iter()
            .map(|k| gaps["total"][k].as_u64().unwrap())
            .collect();
        want.push(want.iter().sum());
        assert_eq!(totals, want, "{t}");
        for needle in [
            "reorged: 1",
            "amount_mismatch: 2",
            "order P-4",
            "order P-5",
            "order P-7",
            "(cooldown 3600s): 1",
            "n-3",
            "webhook inbox: 1 unprocessed",
            "leases: 0",
        ] {
            assert!(t.contains(needle), "{url}: no {needle:?} in\n{t}");
        }
        assert!(!t.contains("old-1") && !t.contains(SANDBOX_API_KEY), "{t}");

        // A lease taken by a serve instance is listed.
        // (MariaDB/MySQL's DATETIME takes no `T`/`Z`.)
        let at = if url.starts_with("mysql") {
            "2030-01-01 00:00:00"
        } else {
            "2030-01-01T00:00:00.000Z"
        };
        let sql =
            format!("INSERT INTO payrecon_leases VALUES ('sandbox', 'host-a:4242', 7, '{at}')");
        crate::support::exec(&w.store, &sql).await;
        let s = status_json(&payrecon(&config, &["status", "--format", "json"]).await);
        assert_eq!(s["lease_table"], true);
        assert_eq!(
            s["leases"],
            serde_json::json!([{"provider": "sandbox", "holder": "host-a:4242", "token": 7, "expires_at": "2030-01-01T00:00:00.000Z"}]),
            "{url}"
        );
        let text = payrecon(&config, &["status"]).await.stdout;
        assert!(text.contains("holder host-a:4242 token 7"), "{text}");
    }
}
