//! `payrecon_balances` and the scope of a balance check, on every backend: signed amounts
//! (a drain is negative) and 256-bit ones come back exactly, a second check updates the row
//! and keeps its opening, and the scope is the deposit addresses of recent orders only.

use jiff::{SignedDuration, Timestamp};
use payrecon::domain::{Delta, U256};
use payrecon::store::BalanceRow;

use super::{addr, exec, new_order, open, USDT};
use crate::support;

fn row(address: &str, asset: &str, balance: U256, difference: &str, at: Timestamp) -> BalanceRow {
    BalanceRow {
        chain: "ethereum".into(),
        address: address.into(),
        asset: asset.into(),
        opening_block: 10,
        opening_balance: U256::from(7u8),
        checked_block: 20,
        balance,
        expected: Delta::parse("-5").unwrap(),
        difference: Delta::parse(difference).unwrap(),
        checked_at: at,
    }
}

#[tokio::test]
async fn balances_round_trip_update_and_filter_on_every_backend() {
    let (_dir, urls) = support::all_backends().await;
    let at = Timestamp::from_millisecond(1_764_900_000_123).unwrap();
    // The largest amount every backend stores (MariaDB/MySQL's DECIMAL(65,0)).
    let big = U256::from(10u8).pow(U256::from(64u8)) - U256::from(1u8);
    for url in &urls {
        let store = open(url).await;
        let a = addr(1);
        let b = addr(2);
        let rows = vec![
            row(&a, USDT, U256::from(3u8), "-120", at),
            row(&a, "native", big, "0", at),
            row(&b, USDT, U256::ZERO, "35", at),
        ];
        store.save_balances(&rows).await.unwrap();
        assert_eq!(store.balances(None, false).await.unwrap(), rows, "{url}");
        // A later check moves the row on; the opening stays the first check's.
        let mut later = row(
            &a,
            USDT,
            U256::from(9u8),
            "0",
            at + SignedDuration::from_hours(24),
        );
        later.checked_block = 30;
        later.opening_block = 99;
        store
            .save_balances(std::slice::from_ref(&later))
            .await
            .unwrap();
        let now = store.balances(Some("ethereum"), false).await.unwrap();
        assert_eq!(now[0].checked_block, 30, "{url}");
        assert_eq!(now[0].balance, U256::from(9u8), "{url}");
        assert_eq!(now[0].opening_block, 10, "{url}: the opening is kept");
        let mismatched = store.balances(None, true).await.unwrap();
        assert_eq!(mismatched.len(), 1, "{url}");
        assert_eq!(
            (
                mismatched[0].address.as_str(),
                mismatched[0].difference.to_string()
            ),
            (b.as_str(), "35".to_string()),
            "{url}"
        );
        assert!(
            store
                .balances(Some("tron"), false)
                .await
                .unwrap()
                .is_empty(),
            "{url}"
        );
        // The console's pages of them: keyset by (chain, address, asset), one at a time.
        let c = addr(3);
        let more = [
            row(&c, USDT, U256::ZERO, "-1", at),
            row(&c, "native", U256::ZERO, "2", at),
        ];
        store.save_balances(&more).await.unwrap();
        let mut seen = Vec::new();
        let mut after: Option<(String, String, String)> = None;
        loop {
            let bound = after
                .as_ref()
                .map(|(c, a, t)| (c.as_str(), a.as_str(), t.as_str()));
            let page = store.mismatched_balances(bound, 1).await.unwrap();
            let Some(r) = page.first() else { break };
            assert_eq!(page.len(), 1, "{url}");
            seen.push((r.address.clone(), r.asset.clone()));
            after = Some((r.chain.clone(), r.address.clone(), r.asset.clone()));
        }
        let want = vec![
            (b.clone(), USDT.to_string()),
            (c.clone(), USDT.to_string()),
            (c.clone(), "native".to_string()),
        ];
        let mut sorted = want.clone();
        sorted.sort();
        assert_eq!(
            seen, sorted,
            "{url}: every mismatched address once, in order"
        );
    }
}

#[tokio::test]
async fn the_scope_is_the_deposit_addresses_of_recent_orders_with_their_oldest() {
    let (_dir, urls) = support::all_backends().await;
    for url in &urls {
        let store = open(url).await;
        let orders = vec![
            new_order("S-1", 1, 10),
            new_order("S-2", 1, 20),
            new_order("S-3", 2, 30),
            new_order("S-OLD", 3, 40),
        ];
        store.insert_orders(&orders).await.unwrap();
        exec(
            &store,
            "UPDATE orders SET created_at = '2026-11-01 10:00:00' WHERE order_ref = 'S-1'",
        )
        .await;
        exec(&store, "UPDATE orders SET created_at = '2026-11-20 10:00:00' WHERE order_ref IN ('S-2', 'S-3')").await;
        exec(
            &store,
            "UPDATE orders SET created_at = '2026-01-01 10:00:00' WHERE order_ref = 'S-OLD'",
        )
        .await;
        let since: Timestamp = "2026-10-01T00:00:00Z".parse().unwrap();
        let scope = store.balance_scope(since).await.unwrap();
        let got: Vec<(String, String)> = scope
            .iter()
            .map(|s| (s.address.clone(), s.oldest_order.to_string()))
            .collect();
        assert_eq!(
            got,
            vec![
                (addr(1), "2026-11-01T10:00:00Z".to_string()),
                (addr(2), "2026-11-20T10:00:00Z".to_string()),
            ],
            "{url}: one entry per address and asset, the old order's address left out"
        );
    }
}
