//! The real binary: `run` flushes its events to a receiver before it exits, `payrecon events`
//! lists them read-only, `events replay` queues them again (ids unchanged), `check` reports
//! the endpoint, and the secret appears in no output.

use super::receiver::{Receiver, Reply};
use super::SECRET;
use crate::cli::harness::{payrecon, World};
use payrecon_testkit::inspect::Inspect;

fn events_toml(url: &str) -> String {
    format!(
        "[events]\nurl = \"{url}\"\nsecret = \"{SECRET}\"\ntimeout = \"2s\"\n\
         retry_schedule = [\"100ms\"]\nflush_timeout = \"10s\"\n"
    )
}

/// A sandbox world per backend (SQLite, and PostgreSQL when configured).
async fn worlds() -> (tempfile::TempDir, Vec<World>) {
    let (dir, urls) = crate::support::all_backends().await;
    let mut out = Vec::new();
    for url in urls {
        let w = World::new(payrecon_testkit::tmp::dir().unwrap(), url).await;
        out.push(w);
    }
    // The SQLite file lives in `dir`: the caller keeps it for the test's duration.
    (dir, out)
}

#[tokio::test]
async fn run_flushes_its_events_and_the_operator_lists_and_replays_them() {
    let (_dir, worlds) = worlds().await;
    for w in worlds {
        run_flushes(w).await;
    }
}

async fn run_flushes(w: World) {
    let receiver = Receiver::start().await;
    // P-2's event fails twice: dead after the one retry of the schedule.
    receiver.script_order("P-2", [Reply::status(500), Reply::status(500)]);
    w.missing_payments(1, 3).await;
    let config = w.config(&events_toml(&receiver.url()));

    let run = payrecon(&config, &["run", "--format", "json"]).await;
    run.assert_code(0);
    assert_eq!(run.json()["totals"]["applied"], 3);
    let delivered = receiver.delivered();
    // Each order's payment event, then its transition's.
    assert_eq!(delivered.len(), 4, "P-1 and P-3 before run exited");

    // P-2's retry came due within flush_timeout and failed too: its payment event is dead,
    // and its transition's event waits behind it (an order's events keep their order).
    let list = payrecon(&config, &["events", "--format", "json"]).await;
    list.assert_code(0);
    let v = list.json();
    assert_eq!(v["events"].as_array().unwrap().len(), 6, "{v}");
    assert_eq!(
        (
            v["counts"]["pending"].as_i64(),
            v["counts"]["dead"].as_i64()
        ),
        (Some(1), Some(1)),
        "{v}"
    );
    let pending = payrecon(&config, &["events", "--status", "dead", "--order", "P-2"]).await;
    pending.assert_code(0);
    assert!(
        pending.stdout.contains("P-2") && pending.stdout.contains("HTTP 500"),
        "{}",
        pending.stdout
    );
    let dead = payrecon(&config, &["events", "--status", "dead", "--format", "json"]).await;
    let dead = dead.json();
    assert_eq!(dead["events"].as_array().unwrap().len(), 1, "{dead}");
    let id = dead["events"][0]["id"].as_str().unwrap().to_string();
    assert_eq!(receiver.received().iter().filter(|r| r.id == id).count(), 2);
    let with_dead = payrecon(&config, &["status", "--format", "json"]).await;
    let ev = &with_dead.json()["events"];
    assert_eq!(
        (ev["pending"].as_i64(), ev["dead"].as_i64()),
        (Some(1), Some(1)),
        "{ev}"
    );
    let text = payrecon(&config, &["status"]).await;
    assert!(
        text.stdout.contains("events: 1 pending, 1 dead"),
        "{}",
        text.stdout
    );

    let replay = payrecon(&config, &["events", "replay", "--id", &id]).await;
    replay.assert_code(0);
    assert!(replay.stdout.starts_with("1 event(s)"), "{}", replay.stdout);
    let usage = payrecon(&config, &["events", "replay"]).await;
    usage.assert_code(2);
    // A replay that puts nothing back fails and says why: the event is in the queue already,
    // or there is no such event.
    let again = payrecon(&config, &["events", "replay", "--id", &id]).await;
    again.assert_code(1);
    assert!(
        again.stderr.contains(&format!("event {id} is pending")),
        "{}",
        again.stderr
    );
    let nope = payrecon(&config, &["events", "replay", "--id", "evt_nope"]).await;
    nope.assert_code(1);
    assert!(
        nope.stderr.contains("no event has the id evt_nope"),
        "{}",
        nope.stderr
    );
    let no_order = payrecon(&config, &["events", "replay", "--order", "NOPE-1"]).await;
    no_order.assert_code(1);
    assert!(
        no_order.stderr.contains("order NOPE-1 has no event"),
        "{}",
        no_order.stderr
    );
    payrecon(&config, &["run"]).await.assert_code(0);
    // The replayed event, then the one that waited behind it.
    let got = receiver.received();
    let tail: Vec<_> = got[got.len() - 2..].iter().map(|r| r.answered).collect();
    assert_eq!(tail, [200, 200]);
    assert_eq!(got[got.len() - 2].id, id);
    assert_eq!(receiver.delivered().len(), 6);

    let check = payrecon(&config, &["check"]).await;
    assert!(
        check
            .stdout
            .lines()
            .any(|l| l.starts_with("ok") && l.contains("events endpoint")),
        "{}",
        check.stdout
    );
    receiver.stop();
    let down = payrecon(&config, &["check"]).await;
    down.assert_code(1);
    assert!(
        down.stdout.contains("FAILED events endpoint"),
        "{}",
        down.stdout
    );

    let status = payrecon(&config, &["status", "--format", "json"]).await;
    assert_eq!(status.json()["events"]["enabled"], true);
    for out in [
        &run, &list, &pending, &replay, &again, &nope, &check, &down, &status,
    ] {
        for text in [&out.stdout, &out.stderr] {
            assert!(!text.contains(&SECRET[6..]), "the secret leaked: {text}");
        }
    }

    // With events off, nothing is put back: it would never leave.
    let off = w.config("");
    let refused = payrecon(&off, &["events", "replay", "--order", "P-2"]).await;
    refused.assert_code(1);
    assert!(
        refused
            .stderr
            .contains("events are off ([events] url is not set)"),
        "{}",
        refused.stderr
    );
}

/// `payrecon demo` delivers its events to the sandbox merchant endpoint and shows them.
#[tokio::test]
async fn the_demo_delivers_its_events_to_a_sandbox_endpoint() {
    let dir = payrecon_testkit::tmp::dir().unwrap();
    let mut cmd = tokio::process::Command::new(crate::cli::harness::BIN);
    cmd.arg("demo")
        .arg("--dir")
        .arg(dir.path())
        .kill_on_drop(true);
    let out = crate::cli::harness::output(cmd).await;
    out.assert_code(0);
    let (head, rest) = out
        .stdout
        .split_once("The sandbox merchant endpoint received ")
        .unwrap_or_else(|| panic!("no events shown:\n{}", out.stdout));
    let n: usize = rest.split_whitespace().next().unwrap().parse().unwrap();
    let lines: Vec<&str> = rest
        .lines()
        .skip(1)
        .take_while(|l| l.starts_with("  order."))
        .collect();
    assert!(n >= 5, "{}", out.stdout);
    assert_eq!(lines.len(), n, "{rest}");
    assert!(lines.iter().any(|l| l.contains("order.final")), "{rest}");
    assert!(!rest.contains("BAD SIGNATURE"), "{rest}");
    assert!(head.contains("applied"), "the report comes first");
    // Amounts for people (docs/reference.md, conventions): tokens with the symbol, never base
    // units; a native payment's key as `native`; a held finding without an arrow.
    assert!(
        head.contains("underpaid: paid 20 USDT of 25 USDT, short 5 USDT"),
        "{head}"
    );
    assert!(head.contains("paid 0.002 ETH of 0.001 ETH"), "{head}");
    assert!(!head.contains("#-1") && head.contains(" native "), "{head}");
    let held = head.lines().find(|l| l.contains(" held ")).unwrap();
    assert!(!held.contains("->"), "{held}");
    assert!(!out.stdout.contains("25000000"), "{}", out.stdout);
    assert!(
        rest.contains("paid 20 USDT of 25 USDT, held: underpaid"),
        "{rest}"
    );
    // The balance check after the run finds what no provider reported: A-1013's payment in
    // ETH (paid, its events sent) and the drain of A-1005's address, in ETH for people.
    let (_, check) = head
        .split_once("payrecon balances check --chain ethereum:")
        .unwrap_or_else(|| panic!("no balance check shown:\n{head}"));
    let line = |kind: &str| {
        check
            .lines()
            .find(|l| l.trim_start().starts_with(kind))
            .unwrap_or_else(|| panic!("no {kind} finding:\n{check}"))
    };
    assert!(check.contains("balances   ok "), "{check}");
    assert!(line("missing").contains("A-1013"), "{check}");
    assert!(line("missing").contains("unpaid -> final"), "{check}");
    let drain = line("unexpected_outflow");
    assert!(
        drain.contains("sent 0.0015 ETH from deposit address 0x0505"),
        "{drain}"
    );
    assert!(!check.contains("balance_mismatch  "), "{check}");
    assert!(
        rest.contains("order.final            A-1013"),
        "A-1013's event: {rest}"
    );
    // Solana (docs/configuration.md, "Solana"): A-1014's USDC payment, which only its Solana
    // Pay reference names, found by the deposit scan; its event in USDC.
    let a1014 = head
        .lines()
        .find(|l| l.contains("A-1014"))
        .unwrap_or_else(|| panic!("no A-1014 finding:\n{head}"));
    assert!(
        a1014.contains("unpaid -> confirmed")
            && a1014.contains("12.5 USDC")
            && a1014.contains("named by its Solana Pay reference"),
        "{a1014}"
    );
    assert!(rest.contains("paid 12.5 USDC of 12.5 USDC"), "{rest}");
}

/// A manual `run` beside `serve` on one SQLite ledger: both apply and both deliver (serve's
/// loop, run's flush), claiming in the database; no event reaches the receiver twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_beside_serve_sends_no_event_twice() {
    let (_dir, worlds) = worlds().await;
    for w in worlds {
        run_beside_serve(w).await;
    }
}

async fn run_beside_serve(w: World) {
    use crate::cli::harness::{command, Running};
    let receiver = Receiver::start().await;
    // Slow answers widen the window in which both processes look for due events.
    receiver.script((0..200).map(|_| Reply {
        delay: std::time::Duration::from_millis(25),
        ..Reply::status(200)
    }));
    w.missing_payments(1, 24).await;
    let base = std::fs::read_to_string(w.config(&events_toml(&receiver.url()))).unwrap();
    let text = format!(
        "{}\n[schedule]\ncron = \"* * * * * *\"\n",
        base.replace("127.0.0.1:9187", "127.0.0.1:0")
    );
    let config = w.write("serve.toml", &text);
    let mut serve = Running::spawn(command(&config, &["serve"]));
    let run = payrecon(&config, &["run", "--format", "json"]).await;
    run.assert_code(0);
    crate::support::wait_until(
        "every event delivered",
        std::time::Duration::from_secs(30),
        || async {
            let c = w.store.event_counts().await.unwrap();
            let n = w.store.count("payrecon_events").await.unwrap();
            n == 48 && c.pending == 0
        },
    )
    .await;
    serve.signal("TERM").await;
    let (code, _) = serve.wait(std::time::Duration::from_secs(20)).await;
    assert_eq!(code, Some(0), "{}", serve.stderr());
    let got = receiver.received();
    // 24 transitions and 24 payments, one event each.
    assert_eq!(w.count("payrecon_transitions").await, 24);
    assert_eq!(super::distinct_ids(&got).len(), 48);
    // Each event reaches the receiver once per attempt recorded for it: once, unless an
    // attempt failed (a 2 s timeout on a loaded machine) and the next claim sent it again, as
    // at-least-once allows. Two processes never send one event under one claim.
    let events = w
        .store
        .list_events(&payrecon::store::EventFilter {
            limit: 1_000,
            ..Default::default()
        })
        .await
        .unwrap();
    let attempts: std::collections::HashMap<&str, i64> =
        events.iter().map(|e| (e.id.as_str(), e.attempts)).collect();
    let mut received: std::collections::HashMap<&str, i64> = Default::default();
    for r in &got {
        *received.entry(r.id.as_str()).or_default() += 1;
    }
    for (id, n) in &received {
        let a = attempts.get(id).copied().unwrap_or(0);
        assert!(
            *n <= a,
            "an event was sent twice: {id} received {n} times in {a} recorded attempts"
        );
    }
    let retried = events.iter().filter(|e| e.attempts > 1).count();
    if retried > 0 {
        eprintln!("{retried} events were attempted again after a failed attempt");
    }
}

/// `payrecon events` is read-only like `status`: it never creates a SQLite file.
#[tokio::test]
async fn listing_events_creates_nothing() {
    let w = World::sqlite().await;
    let missing = w.dir.path().join("nope.db");
    let text = std::fs::read_to_string(w.config(""))
        .unwrap()
        .replace(&w.db_url, &format!("sqlite://{}", missing.display()));
    let config = w.write("missing.toml", &text);
    let out = payrecon(&config, &["events"]).await;
    out.assert_code(1);
    out.assert_no_panic();
    assert!(
        !missing.exists(),
        "payrecon events created {}",
        missing.display()
    );
    assert!(out.stderr.contains("migrate"), "{}", out.stderr);
}
