//! Resend claims, run rows and findings: what payrecon records about its own work.

use std::time::Duration;

use payrecon::domain::U256;
use payrecon::store::{FindingRow, NewOrder, RunRow, RunTotals, Store};

use super::{hash, new_order, open, slot};
use crate::support;
use payrecon_testkit::inspect::Inspect;

#[tokio::test]
async fn claim_resend_honours_the_cooldown() {
    let (_dir, urls) = support::all_backends().await;
    let hour = Duration::from_secs(3600);
    for url in &urls {
        let store = open(url).await;
        let t0: jiff::Timestamp = "2026-11-01T10:00:00Z".parse().unwrap();
        let at = |mins: i64| t0 + jiff::SignedDuration::from_mins(mins);
        assert!(store.claim_resend("cg", "n-1", t0, hour).await.unwrap());
        assert!(!store.claim_resend("cg", "n-1", at(30), hour).await.unwrap());
        assert!(!store.claim_resend("cg", "n-1", at(59), hour).await.unwrap());
        assert!(store
            .claim_resend("other", "n-1", at(30), hour)
            .await
            .unwrap());
        assert!(store.claim_resend("cg", "n-1", at(60), hour).await.unwrap());
        assert!(!store.claim_resend("cg", "n-1", at(61), hour).await.unwrap());
        assert!(store
            .claim_resend("cg", "n-1", at(200), hour)
            .await
            .unwrap());
        assert_eq!(store.count("payrecon_resends").await.unwrap(), 2, "{url}");
    }
}

#[tokio::test]
async fn racing_claims_from_two_pools_yield_exactly_one_winner() {
    let (_dir, urls) = support::all_backends().await;
    for url in &urls {
        let a = open(url).await;
        let b = Store::connect(url, 4).await.unwrap();
        let now = jiff::Timestamp::now();
        let hour = Duration::from_secs(3600);
        for n in 0..20 {
            let id = format!("n-{n}");
            let (x, y) = tokio::join!(
                a.claim_resend("cg", &id, now, hour),
                b.claim_resend("cg", &id, now, hour)
            );
            let winners = [x.unwrap(), y.unwrap()].iter().filter(|w| **w).count();
            assert_eq!(winners, 1, "{url} {id}");
        }
    }
}

fn finding(n: usize) -> FindingRow {
    FindingRow {
        provider: "cg".into(),
        kind: "missing".into(),
        chain: "ethereum".into(),
        tx_hash: Some(hash(n as u64)),
        log_index: Some(n as i64),
        order_ref: Some(format!("A-{n}")),
        local_state: Some("unpaid".into()),
        observed_state: n.is_multiple_of(2).then(|| "final".into()),
        action: "applied".into(),
        detail: format!("finding {n}"),
        amount: None,
        asset: None,
        address: None,
    }
}

#[tokio::test]
async fn runs_and_findings_round_trip() {
    let (_dir, urls) = support::all_backends().await;
    for url in &urls {
        let store = open(url).await;
        let t0: jiff::Timestamp = "2026-11-01T10:00:00Z".parse().unwrap();
        let run = RunRow {
            id: uuid::Uuid::new_v4().to_string(),
            trigger: "cli".into(),
            started_at: t0,
            since: t0 - jiff::SignedDuration::from_hours(48),
            until: t0,
        };
        store.start_run(&run).await.unwrap();
        let started = store.run_by_id(&run.id).await.unwrap().unwrap();
        assert_eq!(
            (started.status.as_str(), started.finished_at),
            ("running", None)
        );

        let findings: Vec<_> = (0..1203).map(finding).collect();
        store.insert_findings(&run.id, &findings).await.unwrap();
        store.insert_findings(&run.id, &[]).await.unwrap();
        let totals = RunTotals {
            status: "failed".into(),
            checked: 1234,
            gaps: 1203,
            applied: 4,
            resends_requested: 2,
            error: Some("provider cg: timed out".into()),
            providers: Some(",cg,chain,".into()),
        };
        store
            .finish_run(&run.id, t0 + jiff::SignedDuration::from_secs(7), &totals)
            .await
            .unwrap();
        assert!(store.finish_run("nope", t0, &totals).await.is_err());

        let got = store.run_by_id(&run.id).await.unwrap().unwrap();
        assert_eq!(got.trigger, "cli");
        assert_eq!(got.status, "failed");
        assert!(got.finished_at.unwrap().starts_with("2026-11-01"), "{url}");
        assert_eq!(
            (got.checked, got.gaps, got.applied, got.resends_requested),
            (1234, 1203, 4, 2)
        );
        assert_eq!(got.error.as_deref(), Some("provider cg: timed out"));

        let stored = store.findings().await.unwrap();
        assert_eq!(stored.len(), 1203, "{url}");
        for n in [0, 1, 500, 1202] {
            let (a, b) = (&stored[n], &findings[n]);
            assert_eq!(
                (
                    &a.tx_hash,
                    a.log_index,
                    &a.order_ref,
                    &a.observed_state,
                    &a.detail
                ),
                (
                    &b.tx_hash,
                    b.log_index,
                    &b.order_ref,
                    &b.observed_state,
                    &b.detail
                )
            );
            assert_eq!(
                (&a.kind, &a.action, &a.local_state),
                (&b.kind, &b.action, &b.local_state)
            );
        }
    }
}

#[tokio::test]
async fn insert_orders_handles_many_chunks() {
    let (_dir, urls) = support::all_backends().await;
    for url in &urls {
        let store = open(url).await;
        // The largest amount each backend keeps (MariaDB/MySQL: 65 digits); one more is
        // refused there, never clamped.
        let max = store.max_amount().unwrap_or(U256::MAX);
        if max < U256::MAX {
            let over = NewOrder {
                amount_due: max + U256::from(1u8),
                ..new_order("OVER", 99_998, 0)
            };
            assert!(store.insert_orders(&[over]).await.is_err(), "{url}");
        }
        let orders: Vec<_> = (0..12_345u64)
            .map(|n| new_order(&format!("O-{n}"), n, n + 1))
            .collect();
        store.insert_orders(&orders).await.unwrap();
        assert_eq!(store.count("orders").await.unwrap(), 12_345, "{url}");
        let big = NewOrder {
            amount_due: max,
            ..new_order("MAX", 99_999, 0)
        };
        store.insert_orders(&[big]).await.unwrap();
        let slots: Vec<_> = [12_344, 99_999].into_iter().map(slot).collect();
        let view = store.load_view(&[], &slots).await.unwrap();
        assert_eq!(view.unpaid[&slot(12_344)][0].order_ref, "O-12344");
        assert_eq!(
            view.unpaid[&slot(12_344)][0].amount_due,
            U256::from(12_345u64)
        );
        assert_eq!(view.unpaid[&slot(99_999)][0].amount_due, max, "{url}");
        assert!(store
            .insert_orders(&[new_order("O-1", 1, 1)])
            .await
            .is_err());
    }
}
