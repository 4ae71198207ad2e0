//! Exit codes (docs/reference.md §9): 0 ok, 1 not completed, 2 usage, 3 --fail-on-gaps with
//! gaps; what goes to stderr when the run cannot even start; no secret in any output.

use payrecon_testkit::sandbox::chaingateway::{FakeChaingateway, Fault};
use payrecon_testkit::sandbox::SANDBOX_API_KEY;

use super::harness::{payrecon, World};
use crate::support::free_port;
use payrecon_testkit::inspect::Inspect;

fn one_line(s: &str) -> &str {
    let lines: Vec<&str> = s.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "expected one line on stderr, got:\n{s}");
    lines[0]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_config_exits_1_with_one_line_naming_the_key() {
    let w = World::sqlite().await;
    let cases = [
        ("[reconcile]\nbatch_sise = 10\n", "batch_sise"),
        (
            "[reconcile]\nresend_cooldown = \"soon\"\n",
            "resend_cooldown",
        ),
        ("[schedule]\ncron = \"every minute\"\n", "schedule.cron"),
    ];
    for (extra, key) in cases {
        let config = w.config(extra);
        for args in [&["run"][..], &["check"], &["migrate"], &["serve"]] {
            let out = payrecon(&config, args).await;
            out.assert_code(1);
            out.assert_no_panic();
            let line = one_line(&out.stderr);
            assert!(line.contains(key), "{args:?}: {line:?} does not name {key}");
            assert!(out.stdout.is_empty(), "stdout: {}", out.stdout);
        }
    }
    // A missing config file is an error too, not a panic.
    let out = payrecon(&w.dir.path().join("nope.toml"), &["run"]).await;
    out.assert_code(1);
    out.assert_no_panic();
    assert!(one_line(&out.stderr).contains("nope.toml"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_database_exits_1_without_the_password() {
    let w = World::sqlite().await;
    w.cg.set_block_number(
        "ethereum",
        1,
        payrecon_testkit::sandbox::chaingateway::BlockShape::Integer,
    );
    let port = free_port();
    let config = w.config("");
    // The three at once: each waits out the pool's connect timeout.
    let runs = [&["run"][..], &["migrate"], &["check"]].map(|args| {
        let mut cmd = super::harness::command(&config, args);
        cmd.env(
            "PAYRECON_DATABASE__URL",
            format!("postgres://payrecon:Hunter2Secret@127.0.0.1:{port}/ledger"),
        );
        async move {
            let t0 = std::time::Instant::now();
            let out = super::harness::output(cmd).await;
            (args, out, t0.elapsed())
        }
    });
    for (args, out, took) in futures::future::join_all(runs).await {
        out.assert_code(1);
        out.assert_no_panic();
        assert!(
            !out.stderr.contains("Hunter2Secret") && !out.stdout.contains("Hunter2Secret"),
            "{args:?} leaked the password:\n{}\n{}",
            out.stderr,
            out.stdout
        );
        assert!(
            took < std::time::Duration::from_secs(30),
            "{args:?} took {took:?}"
        );
        if args != ["check"] {
            let line = one_line(&out.stderr);
            assert!(line.contains("database"), "{line}");
            assert!(line.contains("postgres://payrecon:***@127.0.0.1"), "{line}");
            assert!(out.stdout.is_empty());
        } else {
            // check still reports every item: the database failed, the chain and the
            // provider reachable.
            let lines: Vec<&str> = out.stdout.lines().collect();
            assert_eq!(lines.len(), 4, "{}", out.stdout);
            assert!(lines[3].starts_with("WARN   events"), "{}", lines[3]);
            assert!(lines[0].starts_with("FAILED database"), "{}", lines[0]);
            assert!(lines[1].starts_with("ok") && lines[1].contains("chain ethereum"));
            assert!(lines[2].starts_with("ok") && lines[2].contains("provider sandbox"));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_down_exits_1_and_still_prints_the_report() {
    let w = World::sqlite().await;
    let orders = w.missing_payments(1, 1).await;
    let down = format!("http://127.0.0.1:{}/api/v2", free_port());
    let config = w.config_for(&down, "");
    let out = payrecon(&config, &["run", "--format", "json", "--fail-on-gaps"]).await;
    out.assert_code(1);
    out.assert_no_panic();
    let r = out.json();
    let p = &r["providers"][0];
    assert_eq!(p["provider"], "sandbox");
    assert_eq!(p["status"], "failed");
    assert!(p["error"].as_str().is_some_and(|e| !e.is_empty()), "{p}");
    // The chain sweep still ran.
    assert_eq!(r["providers"][1]["provider"], "chain");
    assert_eq!(r["providers"][1]["status"], "ok");
    let order = w.store.order_by_ref(&orders[0]).await.unwrap().unwrap();
    assert_eq!(order.state.as_str(), "unpaid");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_errors_exit_2() {
    let w = World::sqlite().await;
    let config = w.config("");
    for args in [
        &["run", "--bogus"][..],
        &["run", "--since", "yesterday-ish"],
        &["run", "--until", "2026-13-45"],
        &["run", "--since", "1h", "--until", "2h"],
        &["run", "--format", "yaml"],
        &["run", "--provider", "nosuch"],
        &["frobnicate"],
    ] {
        let out = payrecon(&config, args).await;
        out.assert_code(2);
        out.assert_no_panic();
        assert!(out.stdout.is_empty(), "{args:?} stdout: {}", out.stdout);
        assert!(!out.stderr.is_empty(), "{args:?}: nothing on stderr");
    }
    // Nothing ran: no run row.
    assert_eq!(w.count("payrecon_runs").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_provider_is_a_usage_error_even_without_a_database() {
    let w = World::sqlite().await;
    let config = w.config("");
    let mut cmd = super::harness::command(&config, &["run", "--provider", "nosuch"]);
    cmd.env(
        "PAYRECON_DATABASE__URL",
        format!("postgres://u:pw@127.0.0.1:{}/x", free_port()),
    );
    let out = super::harness::output(cmd).await;
    out.assert_code(2);
    assert!(out.stderr.contains("nosuch"), "{}", out.stderr);
    // It lists the names that are configured.
    assert!(
        out.stderr.contains("the configured ones are \"sandbox\""),
        "{}",
        out.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fail_on_gaps_exits_3_with_gaps_and_0_without() {
    let w = World::sqlite().await;
    w.missing_payments(1, 2).await;
    let config = w.config("");
    let out = payrecon(&config, &["run", "--fail-on-gaps", "--format", "json"]).await;
    out.assert_code(3);
    assert_eq!(out.json()["totals"]["gaps"], 2);
    // The gaps are closed now: the same run finds none.
    let out = payrecon(&config, &["run", "--fail-on-gaps", "--format", "json"]).await;
    out.assert_code(0);
    assert_eq!(out.json()["totals"]["gaps"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_secret_in_the_output_of_a_failing_run() {
    const DB_PASSWORD: &str = "DbPw_7c1e9f0a";
    const API_KEY: &str = "sk_live_Zq81VvQe0r7xTT";
    let (_guard, urls) = crate::support::all_backends().await;
    for url in urls {
        // PostgreSQL gets a password in its URL (the test server trusts loopback, so it is
        // accepted and must still never be printed).
        let url = url.replacen(
            "postgres://postgres@",
            &format!("postgres://postgres:{DB_PASSWORD}@"),
            1,
        );
        let w = World::new(payrecon_testkit::tmp::dir().unwrap(), url.clone()).await;
        // A provider that knows this key, and answers every request 400 with the request
        // headers (Authorization too) echoed in the body.
        let (cg, cg_url) = FakeChaingateway::start(API_KEY).await;
        cg.add_notification("ethereum", w.cg_notification(1).await);
        cg.push_fault(Fault::EchoHeaders, 1000);
        let key_file = w.write("cg.key", &format!("{API_KEY}\n"));
        let toml = payrecon_testkit::sandbox::config_toml(&url, &cg_url, &w.rpc_url, "").replace(
            &format!("api_key = \"{SANDBOX_API_KEY}\""),
            &format!("api_key_file = \"{}\"", key_file.display()),
        );
        let config = w.write("config.toml", &toml);
        for format in ["json", "text"] {
            let out = payrecon(&config, &["run", "--format", format]).await;
            out.assert_code(1);
            out.assert_no_panic();
            for (name, s) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
                assert!(
                    !s.contains("Zq81VvQe"),
                    "{url}: {name} leaked the API key:\n{s}"
                );
                assert!(
                    !s.contains(DB_PASSWORD),
                    "{url}: {name} leaked the DB password:\n{s}"
                );
            }
            if format == "json" {
                let r = out.json();
                assert_eq!(r["providers"][0]["status"], "failed");
                assert!(
                    r["providers"][0]["error"].as_str().unwrap().contains("400"),
                    "{r}"
                );
            }
        }
        assert!(cg.requests() > 0);
        // The failed run is recorded, its error scrubbed too.
        let runs = w.count("payrecon_runs").await;
        assert_eq!(runs, 2);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chain_down_exits_1_with_the_report() {
    let w = World::sqlite().await;
    let refs = w.missing_payments(1, 2).await;
    let toml = payrecon_testkit::sandbox::config_toml(
        &w.db_url,
        &w.cg_url,
        &format!("http://127.0.0.1:{}", free_port()),
        "",
    );
    let config = w.write("config.toml", &toml);
    let out = payrecon(&config, &["run", "--format", "json"]).await;
    out.assert_code(1);
    out.assert_no_panic();
    let r = out.json();
    let failed: Vec<&str> = r["providers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["status"] == "failed")
        .map(|p| p["provider"].as_str().unwrap())
        .collect();
    assert!(!failed.is_empty(), "{r}");
    assert_eq!(r["totals"]["applied"], 0);
    for o in refs {
        let o = w.store.order_by_ref(&o).await.unwrap().unwrap();
        assert_eq!(
            o.state.as_str(),
            "unpaid",
            "nothing applied without the chain"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_logs_stay_on_stderr() {
    let w = World::sqlite().await;
    w.missing_payments(1, 1).await;
    let mut cmd = super::harness::command(&w.config(""), &["run", "--format", "json"]);
    cmd.env("PAYRECON_LOG_FORMAT", "json");
    let out = super::harness::output(cmd).await;
    out.assert_code(0);
    assert_eq!(out.json()["totals"]["applied"], 1);
    let logs: Vec<&str> = out.stderr.lines().collect();
    assert!(!logs.is_empty());
    for l in logs {
        let v: serde_json::Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
        assert!(v.get("level").is_some(), "{l}");
    }
}

/// A ledger on SQLite with one unpaid order on each of an EVM, a Tron and a Bitcoin chain
/// whose nodes are all down (closed ports), and no provider: the sweep and the deposit scan
/// are the only net. Returns the config's path.
pub(crate) async fn chains_down(w: &World, extra: &str) -> std::path::PathBuf {
    let orders = [
        (
            "E-1",
            "ethereum",
            "0x00000000000000000000000000000000000000e1",
        ),
        ("T-1", "tron", "TLa2f6VPqDgRE67v1736s7bJ8Ray5wYjU7"),
        (
            "B-1",
            "bitcoin",
            "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq",
        ),
    ];
    let orders: Vec<payrecon::store::NewOrder> = orders
        .iter()
        .map(|(r, chain, to)| payrecon::store::NewOrder {
            order_ref: r.to_string(),
            chain: chain.to_string(),
            pay_to: to.to_string(),
            asset: "native".into(),
            amount_due: payrecon::domain::U256::from(1000u64),
        })
        .collect();
    w.store.insert_orders(&orders).await.unwrap();
    let closed = || format!("http://127.0.0.1:{}", free_port());
    w.write(
        "config.toml",
        &format!(
            "[database]\nurl = \"{db}\"\n\n\
             [chains.ethereum]\nrpc_url = \"{e}\"\nmax_retries = 1\n\n\
             [chains.tron]\nkind = \"tron\"\nrpc_url = \"{t}/jsonrpc\"\napi_url = \"{t}\"\n\
             finality = \"depth\"\nmax_retries = 1\n\n\
             [chains.bitcoin]\nkind = \"bitcoin\"\nesplora_url = \"{b}\"\nmax_retries = 1\n\n\
             {extra}\n",
            db = w.db_url,
            e = closed(),
            t = closed(),
            b = closed(),
        ),
    )
}

/// docs/reference.md §4 and §9: a chain that cannot be read is a failed part naming the chain,
/// never "ok"; the run exits 1, its row is `failed` and `status` says so; nothing is applied.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chains_that_cannot_be_read_fail_the_run_by_name() {
    let w = World::sqlite().await;
    let config = chains_down(&w, "").await;
    let out = payrecon(&config, &["run", "--format", "json"]).await;
    out.assert_code(1);
    out.assert_no_panic();
    let r = out.json();
    let entries = r["providers"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "{r}");
    let sweep = &entries[0];
    assert_eq!(sweep["provider"], "chain", "{r}");
    assert_eq!(sweep["status"], "failed", "{r}");
    let error = sweep["error"].as_str().unwrap();
    for chain in ["chain ethereum", "chain tron", "chain bitcoin"] {
        assert!(error.contains(chain), "{chain} not named: {error}");
    }
    let run_id = r["run_id"].as_str().unwrap();
    let run = w.store.run_by_id(run_id).await.unwrap().unwrap();
    assert_eq!(run.status, "failed", "{run:?}");
    let status = payrecon(&config, &["status", "--format", "json"]).await;
    let s = status.json();
    let chain = s["providers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["provider"] == "chain")
        .unwrap();
    assert_eq!(
        chain["last_run"]["status"], "failed",
        "status hides it: {s}"
    );
    // It says when serve runs next (schedule.cron).
    let next = s["next_scheduled_run"].as_str().unwrap();
    assert!(next.parse::<jiff::Timestamp>().is_ok(), "{next}");
    let text = payrecon(&config, &["status"]).await;
    assert!(
        text.stdout.contains("next scheduled run: "),
        "{}",
        text.stdout
    );
    for r in ["E-1", "T-1", "B-1"] {
        let o = w.store.order_by_ref(r).await.unwrap().unwrap();
        assert_eq!(o.state.as_str(), "unpaid", "{r}");
    }
}
