//! Invariant 5 through the binary: a `payrecon run` killed with SIGKILL mid-run leaves the
//! ledger consistent, and the next run completes the work.

use std::time::Duration;

use payrecon_testkit::inspect::Inspect;

use super::harness::{command, payrecon, Running, World};
use crate::support::wait_until;

const N: u32 = 3_000;

/// (order_ref, state, has a payment key, audit to_states) for every order.
async fn ledger(w: &World) -> Vec<(String, String, bool, Vec<String>)> {
    let sql = "SELECT o.order_ref, o.state, \
               CAST(CASE WHEN o.tx_hash IS NULL THEN 0 ELSE 1 END AS BIGINT), t.to_state \
               FROM orders o LEFT JOIN payrecon_transitions t ON t.order_id = o.id \
               ORDER BY o.id, t.id";
    let rows = w.store.rows(sql).await.unwrap();
    let mut out: Vec<(String, String, bool, Vec<String>)> = Vec::new();
    for row in rows {
        let [r, state, keyed, to] = <[Option<String>; 4]>::try_from(row).unwrap();
        let (r, state) = (r.unwrap(), state.unwrap());
        if out.last().is_none_or(|l| l.0 != r) {
            out.push((r, state, keyed.as_deref() == Some("1"), Vec::new()));
        }
        if let Some(to) = to {
            out.last_mut().unwrap().3.push(to);
        }
    }
    out
}

async fn duplicate_keys(w: &World) -> i64 {
    let sql = "SELECT COUNT(*) FROM (SELECT chain, tx_hash, log_index FROM orders \
               WHERE tx_hash IS NOT NULL GROUP BY chain, tx_hash, log_index \
               HAVING COUNT(*) > 1) d";
    let rows = w.store.rows(sql).await.unwrap();
    rows[0][0].as_deref().unwrap().parse().unwrap()
}

/// Every order is at the state its audit trail says: unpaid with no key and no audit row, or
/// keyed at exactly the highest `to_state` of its (distinct) audit rows.
fn assert_consistent(rows: &[(String, String, bool, Vec<String>)]) {
    let rank = |s: &str| {
        ["unpaid", "pending", "confirmed", "final"]
            .iter()
            .position(|x| *x == s)
            .unwrap()
    };
    for (r, state, keyed, to) in rows {
        let mut dedup = to.clone();
        dedup.sort();
        dedup.dedup();
        assert_eq!(dedup.len(), to.len(), "{r}: duplicate audit rows {to:?}");
        match to.iter().map(|s| rank(s)).max() {
            None => assert!(
                state == "unpaid" && !keyed,
                "{r}: {state}, keyed {keyed}, no audit row"
            ),
            Some(top) => {
                assert_eq!(rank(state), top, "{r}: state {state}, audit {to:?}");
                assert!(keyed, "{r}: audited but no payment key");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_run_leaves_the_ledger_consistent_and_the_next_completes_it() {
    let (_guard, urls) = crate::support::all_backends().await;
    for url in urls {
        let w = World::new(payrecon_testkit::tmp::dir().unwrap(), url.clone()).await;
        w.missing_payments(0, N).await;
        w.cg.set_per_page(100);
        w.chain.set_latency(Duration::from_millis(40));
        let config = w.config("[reconcile]\nbatch_size = 100\n");

        let mut run = Running::spawn(command(&config, &["run", "--format", "json"]));
        wait_until("some transitions", Duration::from_secs(60), || async {
            w.count("payrecon_transitions").await > 0
        })
        .await;
        run.child.start_kill().unwrap();
        let (code, _) = run.wait(Duration::from_secs(10)).await;
        assert_eq!(code, None, "{url}: killed by a signal, not exited");
        assert!(
            run.stdout().is_empty(),
            "{url}: a killed run printed a report"
        );

        let rows = ledger(&w).await;
        assert_eq!(rows.len(), N as usize);
        assert_consistent(&rows);
        let done = rows.iter().filter(|r| r.1 == "final").count();
        assert!(
            done > 0 && done < N as usize,
            "{url}: killed mid-run, {done} final"
        );
        assert_eq!(duplicate_keys(&w).await, 0, "{url}");
        eprintln!("{url}: killed after {done} of {N}");

        w.chain.set_latency(Duration::ZERO);
        let out = payrecon(&config, &["run", "--format", "json"]).await;
        out.assert_code(0);
        let r = out.json();
        assert_eq!(
            r["totals"]["applied"].as_u64().unwrap() as usize,
            N as usize - done,
            "{url}"
        );
        let rows = ledger(&w).await;
        assert_consistent(&rows);
        assert!(
            rows.iter().all(|r| r.1 == "final" && r.3 == ["final"]),
            "{url}"
        );
        assert_eq!(w.count("payrecon_transitions").await, i64::from(N));
        assert_eq!(duplicate_keys(&w).await, 0, "{url}");
    }
}
