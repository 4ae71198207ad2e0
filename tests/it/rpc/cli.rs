//! The real binary against a sandbox provider and chain: finality tags refused, `chain_id`
//! mismatch, failover and all URLs down, as `check`, `run` and `serve` see them.

use std::path::PathBuf;
use std::time::Duration;

use alloy::primitives::U256 as EvmU256;
use payrecon::domain::Address;
use payrecon::store::NewOrder;
use payrecon_testkit::sandbox::chain::Tags;
use payrecon_testkit::sandbox::chaingateway::{notification, BlockShape};
use payrecon_testkit::sandbox::{config_toml, SANDBOX_TOKEN};

use super::dead_url;
use crate::cli::harness::{addr, command, payrecon, scalar, usdt, Running, World};

/// The provider answers `check`'s block-number question.
fn provider_up(w: &World) {
    w.cg.set_block_number("ethereum", 19_000_000, BlockShape::Integer);
}

/// An order `Q-<i>` paid on chain one block ago (pending) and listed by the provider.
async fn pending_payment(w: &World, i: u32) {
    let order = NewOrder {
        order_ref: format!("Q-{i}"),
        chain: "ethereum".into(),
        pay_to: addr(i).to_string(),
        asset: SANDBOX_TOKEN.into(),
        amount_due: usdt(25),
    };
    w.store.insert_orders(&[order]).await.unwrap();
    let (tx, _) = w.chain.add_token_transfer(
        &Address::parse(SANDBOX_TOKEN).unwrap(),
        &Address::parse("0x00000000000000000000000000000000000000fe").unwrap(),
        &addr(i),
        EvmU256::from(usdt(25)),
    );
    w.chain.mine_block();
    let created = jiff::Timestamp::now() - jiff::SignedDuration::from_mins(5);
    let n = notification(
        &format!("q-{i}"),
        tx.as_str(),
        SANDBOX_TOKEN,
        addr(i).as_str(),
        Some("25"),
        created,
    );
    w.cg.add_notification("ethereum", n);
}

/// The sandbox configuration with its `rpc_url = "..."` line replaced by `chain_lines`.
fn config_with(w: &World, chain_lines: &str) -> PathBuf {
    let toml = config_toml(&w.db_url, &w.cg_url, &w.rpc_url, "")
        .replace(&format!("rpc_url = \"{}\"", w.rpc_url), chain_lines);
    w.write("config.toml", &toml)
}

async fn orders_in(w: &World, state: &str) -> i64 {
    scalar(
        &w.db_url,
        &format!("SELECT COUNT(*) FROM orders WHERE state = '{state}'"),
    )
    .await
}

/// Nothing written: no run row, no transition, every order still unpaid.
async fn assert_untouched(w: &World, orders: i64) {
    assert_eq!(w.count("payrecon_runs").await, 0, "a run row was written");
    assert_eq!(w.count("payrecon_transitions").await, 0);
    assert_eq!(w.count("payrecon_findings").await, 0);
    assert_eq!(orders_in(w, "unpaid").await, orders);
}

async fn serve_exits_1(config: &std::path::Path, needles: &[&str]) {
    let mut serve = Running::spawn(command(config, &["serve"]));
    let (code, _) = serve.wait(Duration::from_secs(30)).await;
    // The pipe is read on another task: give it a moment to drain after the exit.
    let drained = std::time::Instant::now();
    while !needles.iter().all(|n| serve.stderr().contains(n))
        && drained.elapsed() < Duration::from_secs(5)
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let stderr = serve.stderr();
    assert_eq!(code, Some(1), "serve must refuse at start:\n{stderr}");
    for n in needles {
        assert!(stderr.contains(n), "{n:?} not in:\n{stderr}");
    }
}

#[tokio::test]
async fn a_node_without_the_finality_tag_fails_check_run_and_serve_before_any_write() {
    for tags in [Tags::Refused, Tags::Null] {
        let w = World::sqlite().await;
        provider_up(&w);
        w.missing_payments(1, 2).await;
        w.chain.set_tags(tags);
        let config = w.config("");

        let check = payrecon(&config, &["check"]).await;
        check.assert_code(1).assert_no_panic();
        let line = check
            .stdout
            .lines()
            .find(|l| l.contains("chain ethereum"))
            .unwrap_or_else(|| panic!("{tags:?}: no chain line:\n{}", check.stdout));
        assert!(line.starts_with("FAILED"), "{line}");
        assert!(
            line.contains("\"finalized\"") && line.contains("finality = \"depth\""),
            "{line}"
        );

        let run = payrecon(&config, &["run", "--format", "json"]).await;
        run.assert_code(1).assert_no_panic();
        assert!(run.stdout.is_empty(), "no report: {}", run.stdout);
        let last = run.stderr.lines().last().unwrap_or_default();
        assert!(
            last.starts_with("payrecon: chain ethereum"),
            "{}",
            run.stderr
        );
        assert!(last.contains("depth"), "{last}");
        assert_untouched(&w, 2).await;

        serve_exits_1(&config, &["chain ethereum", "depth"]).await;
        assert_untouched(&w, 2).await;

        // With finality = "depth" the same node is fine.
        let depth = config_with(
            &w,
            &format!("rpc_url = \"{}\"\nfinality = \"depth\"", w.rpc_url),
        );
        let text = std::fs::read_to_string(&depth).unwrap();
        std::fs::write(&depth, text.replace("finality = \"finalized\"\n", "")).unwrap();
        payrecon(&depth, &["check"]).await.assert_code(0);
        payrecon(&depth, &["run"]).await.assert_code(0);
        assert_eq!(orders_in(&w, "final").await, 2, "{tags:?}");
    }
}

#[tokio::test]
async fn a_chain_id_mismatch_refuses_run_and_serve_before_any_write() {
    let w = World::sqlite().await; // the sandbox node is chain 1
    provider_up(&w);
    w.missing_payments(1, 3).await;
    let with_creds = w.rpc_url.replace("http://", "http://ops:hunter2pw@");
    let config = config_with(
        &w,
        &format!("rpc_urls = [\"{with_creds}\"]\nchain_id = 137"),
    );

    let run = payrecon(&config, &["run"]).await;
    run.assert_code(1).assert_no_panic();
    let err = run.stderr.lines().last().unwrap_or_default();
    for needle in [
        "chain ethereum",
        "137",
        "chain id 1,",
        &w.rpc_url,
        "refusing",
    ] {
        assert!(err.contains(needle), "{needle:?} not in {err}");
    }
    assert!(!run.stderr.contains("hunter2pw"), "{}", run.stderr);
    assert_untouched(&w, 3).await;

    serve_exits_1(&config, &["chain id 1,", "137"]).await;
    assert_untouched(&w, 3).await;

    let check = payrecon(&config, &["check"]).await;
    check.assert_code(1);
    assert!(
        check
            .stdout
            .lines()
            .any(|l| l.starts_with("FAILED chain ethereum") && l.contains("137")),
        "{}",
        check.stdout
    );

    // The right id: the same ledger is reconciled.
    let config = config_with(&w, &format!("rpc_urls = [\"{with_creds}\"]\nchain_id = 1"));
    let check = payrecon(&config, &["check"]).await;
    check.assert_code(0);
    assert!(
        check.stdout.contains("chain ethereum: chain id 1,"),
        "{}",
        check.stdout
    );
    payrecon(&config, &["run"]).await.assert_code(0);
    assert_eq!(orders_in(&w, "final").await, 3);
}

#[tokio::test]
async fn a_refused_first_url_fails_over_and_the_run_succeeds_logging_it_once() {
    let w = World::sqlite().await;
    provider_up(&w);
    w.missing_payments(1, 5).await;
    let config = config_with(
        &w,
        &format!(
            "rpc_urls = [\"{}\", \"{}\"]\nchain_id = 1",
            dead_url(1),
            w.rpc_url
        ),
    );
    let run = payrecon(&config, &["run", "--format", "json"]).await;
    run.assert_code(0).assert_no_panic();
    let switches = run
        .stderr
        .lines()
        .filter(|l| l.contains("failing over to the next URL"))
        .count();
    assert_eq!(switches, 1, "{}", run.stderr);
    assert_eq!(orders_in(&w, "final").await, 5);
    let report = run.json();
    for p in report["providers"].as_array().unwrap() {
        assert_eq!(p["status"], "ok", "{p}");
    }

    // check reports the dead backup as a FAILED line next to the working chain.
    let check = payrecon(&config, &["check"]).await;
    check.assert_code(1);
    assert!(
        check.stdout.contains("ok     chain ethereum: chain id 1"),
        "{}",
        check.stdout
    );
    assert!(
        check
            .stdout
            .lines()
            .any(|l| l.starts_with("FAILED chain ethereum: http://127.0.0.1:")),
        "{}",
        check.stdout
    );
}

#[tokio::test]
async fn all_urls_down_reports_the_chain_failed_and_exits_1() {
    let w = World::sqlite().await;
    w.chain.mine(100);
    pending_payment(&w, 1).await;
    // A first run on a working node leaves the order pending: the sweep has a row to check.
    payrecon(&w.config(""), &["run"]).await.assert_code(0);
    assert_eq!(orders_in(&w, "pending").await, 1);
    w.missing_payments(2, 1).await;

    let config = config_with(
        &w,
        &format!(
            "rpc_urls = [\"{}\", \"{}\"]\nmax_retries = 1",
            dead_url(1),
            dead_url(2)
        ),
    );
    let run = payrecon(&config, &["run", "--format", "json"]).await;
    run.assert_code(1).assert_no_panic();
    assert!(
        run.stderr.contains("unreachable at start"),
        "{}",
        run.stderr
    );
    let report = run.json();
    let entries = report["providers"].as_array().unwrap();
    for name in ["sandbox", "chain"] {
        let e = entries
            .iter()
            .find(|e| e["provider"] == name)
            .unwrap_or_else(|| panic!("no {name} entry: {report}"));
        assert_eq!(e["status"], "failed", "{e}");
        let error = e["error"].as_str().unwrap_or_default();
        assert!(error.contains("ethereum"), "{error}");
    }
    assert_eq!(orders_in(&w, "unpaid").await, 1, "P-2 not credited");
    assert_eq!(orders_in(&w, "pending").await, 1, "Q-1 not moved");
    assert_eq!(
        scalar(
            &w.db_url,
            "SELECT COUNT(*) FROM payrecon_runs WHERE status = 'failed'"
        )
        .await,
        1
    );
}
