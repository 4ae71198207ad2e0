//! Two real `serve` processes on one PostgreSQL database, and on one MariaDB/MySQL database,
//! both scheduling a run every second
//! with a 2 s lease: over ~25 s of new gaps (missing payments, pending then final, failed
//! notifications), every transition is applied once and every resend requested once, and
//! both instances win some ticks. Then the instance holding the `cg` lease is SIGKILLed
//! mid-part: the other takes the lease over once it has expired, and does the new work.

use std::time::{Duration, Instant};

use payrecon::domain::State;

use super::pair::Pair;
use crate::serve::{series, Served};
use crate::support::{self, wait_until};
use payrecon_testkit::inspect::Inspect;

const TTL_SECS: f64 = 2.0;
const EXTRA: &str = "[schedule]\ncron = \"* * * * * *\"\n\n[reconcile]\nlease_ttl = \"2s\"\n";
/// How long new work keeps arriving while both instances run.
const PERIOD: Duration = Duration::from_secs(24);

async fn runs_ok(s: &Served) -> f64 {
    let text = s.metrics().await;
    series(
        &text,
        "payrecon_runs_total",
        &[("provider", "cg"), ("outcome", "ok")],
    )
    .expect("payrecon_runs_total{provider=cg,outcome=ok}")
}

/// No order has two audit rows to one state, and there are exactly `expected` rows.
async fn assert_each_transition_once(p: &Pair, expected: i64) {
    let dups = p
        .scalar(
            "SELECT COUNT(*) FROM (SELECT order_id, to_state FROM payrecon_transitions \
             GROUP BY order_id, to_state HAVING COUNT(*) > 1) d",
        )
        .await;
    assert_eq!(dups, 0, "an order has two audit rows to one state");
    let rows = p.scalar("SELECT COUNT(*) FROM payrecon_transitions").await;
    if rows != expected {
        let trail = p
            .store
            .rows(
                "SELECT o.order_ref, t.from_state, t.to_state FROM orders o \
                 LEFT JOIN payrecon_transitions t ON t.order_id = o.id ORDER BY o.id, t.id",
            )
            .await
            .unwrap();
        panic!("{rows} audit rows, {expected} expected: {trail:#?}");
    }
}

/// Every order is final and every failed notification was resent.
async fn all_done(p: &Pair) -> bool {
    let all: Vec<u32> = p.orders.keys().copied().collect();
    p.resends() == p.expected_resends() && p.all_at(&all, State::Final).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lease_two_serves_on_one_postgres_do_everything_once_and_take_over_from_a_killed_one() {
    if let Some(url) = support::pg_url().await {
        two_serves(&url).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lease_two_serves_on_one_mariadb_do_everything_once_and_take_over_from_a_killed_one() {
    if let Some(url) = support::mysql_url().await {
        two_serves(&url).await;
    }
}

async fn two_serves(url: &str) {
    let t0 = Instant::now();
    let mut p = Pair::start(url, EXTRA).await;
    // Gaps before the start: six missing payments (final: one jump each), two of their
    // notifications failed.
    p.pay(&[1, 2, 3, 4, 5, 6], &[2, 5], true).await;
    let mut expected: i64 = 6;
    let a = Served::start(&p.config).await;
    let b = Served::start(&p.config).await;

    // New work while both run: each round, three payments in a new block (pending), one
    // notification failed; once all three are seen pending, 70 blocks make them final.
    let period = Instant::now();
    let mut next = 100;
    let mut rounds = 0;
    while period.elapsed() < PERIOD {
        let ns: Vec<u32> = (next..next + 3).collect();
        next += 3;
        p.pay(&ns, &ns[..1], false).await;
        expected += 2 * ns.len() as i64; // unpaid -> pending, pending -> final
        let what = format!("round {rounds} pending");
        wait_until(&what, Duration::from_secs(10), || async {
            p.all_at(&ns, State::Pending).await
        })
        .await;
        p.mine_final();
        rounds += 1;
        tokio::time::sleep(Duration::from_millis(1200)).await;
    }
    wait_until("all final, all resent", Duration::from_secs(10), || {
        all_done(&p)
    })
    .await;
    assert_each_transition_once(&p, expected).await;
    assert_eq!(
        p.resends(),
        p.expected_resends(),
        "one resend per failed notification"
    );
    let (ran_a, ran_b) = (runs_ok(&a).await, runs_ok(&b).await);
    let runs = p.scalar("SELECT COUNT(*) FROM payrecon_runs").await;
    eprintln!(
        "{rounds} rounds, {} orders, {expected} transitions, {runs} runs; cg ok: a {ran_a}, b {ran_b}",
        p.orders.len()
    );
    assert!(
        ran_a > 0.0 && ran_b > 0.0,
        "both won ticks: a {ran_a}, b {ran_b}"
    );
    // A tick every second on each: a stalled loop shows far fewer runs. Not more than that
    // (a run under a loaded CI machine takes over a second, and single-flight skips ticks).
    let floor = PERIOD.as_secs() as i64 / 2;
    assert!(
        runs >= floor,
        "{runs} runs over {PERIOD:?} with two instances (at least {floor})"
    );

    // Slow provider answers: a cg part now takes seconds. Kill the instance holding its
    // lease mid-part.
    p.cg.set_latency(Duration::from_millis(1000));
    wait_until(
        "a cg lease held mid-part",
        Duration::from_secs(10),
        || async { p.lease("cg").await.is_some_and(|l| l.held()) },
    )
    .await;
    let pid = p.lease("cg").await.unwrap().pid();
    let (mut victim, mut survivor) = if pid == a.proc.pid() {
        (a, b)
    } else {
        assert_eq!(pid, b.proc.pid(), "the holder is one of the two");
        (b, a)
    };
    let before = runs_ok(&survivor).await;
    victim.proc.signal("KILL").await;
    let killed = Instant::now();
    let (code, _) = victim.proc.wait(Duration::from_secs(10)).await;
    assert_eq!(code, None, "killed by a signal");
    let dead = p.lease("cg").await.unwrap();
    assert_eq!(dead.pid(), pid, "nobody took a held lease: {dead:?}");
    assert!(dead.held(), "killed while holding it: {dead:?}");

    // The survivor takes it over once it has expired, not before.
    let spid = survivor.proc.pid();
    let mut taken = None;
    while killed.elapsed() < Duration::from_secs_f64(TTL_SECS + 3.0) {
        let l = p.lease("cg").await.unwrap();
        if l.token != dead.token {
            taken = Some(l);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let took = killed.elapsed();
    let taken = taken.unwrap_or_else(|| panic!("no takeover {took:?} after the kill"));
    assert_eq!(taken.pid(), spid, "the survivor took it: {taken:?}");
    assert!(taken.token > dead.token, "{taken:?} after {dead:?}");
    assert!(
        taken.now >= dead.expires_at,
        "taken over before the dead holder's lease expired: {taken:?} vs {dead:?}"
    );
    eprintln!("takeover {took:?} after the kill (ttl {TTL_SECS} s)");

    // New work after the kill is done by the survivor, once: pending, then final.
    p.cg.set_latency(Duration::ZERO);
    let ns = [900, 901, 902];
    p.pay(&ns, &[901], false).await;
    expected += 6;
    wait_until(
        "the survivor applies pending",
        Duration::from_secs(10),
        || async { p.all_at(&ns, State::Pending).await },
    )
    .await;
    p.mine_final();
    wait_until(
        "the survivor applies new work",
        Duration::from_secs(10),
        || all_done(&p),
    )
    .await;
    assert_each_transition_once(&p, expected).await;
    assert_eq!(p.resends(), p.expected_resends());
    assert!(runs_ok(&survivor).await > before, "the survivor ran cg");

    let (code, _) = survivor.stop("TERM", Duration::from_secs(15)).await;
    assert_eq!(code, Some(0), "{}", survivor.proc.stderr());
    eprintln!("total {:?}", t0.elapsed());
}
