//! The balance check on Solana (docs/configuration.md, "Solana") against a real local cluster
//! (surfpool): per deposit wallet, its SOL and its USDC (the sum of its token accounts) at
//! `finalized`, its finalized history since its oldest order. Payments no provider reported are
//! credited, a payment beyond the orders is an `unknown_payment`, a sweep to the treasury is
//! recorded (its fee paid in SOL explained), a transfer elsewhere is an `unexpected_outflow`,
//! and money that arrives outside any transaction (a cheat code here; a lost history in life)
//! opens `balance_mismatch`. On SQLite, PostgreSQL and MariaDB.

use payrecon::domain::{State, U256};
use payrecon::engine::Trigger;
use payrecon_testkit::inspect::Inspect;
use payrecon_testkit::surfnet::{Surfnet, TokenPay, USDC};

use super::{usdc, SolWorld};
use crate::balances::{age_orders, open_of};
use crate::reconcile::{entry, on_backends};

#[tokio::test]
async fn a_solana_check_explains_payments_sweeps_and_drains_on_a_real_cluster() {
    on_backends(|db| async move {
        let Some(n) = Surfnet::start().await else {
            return;
        };
        let treasury = n.key().await;
        let w = SolWorld::start_with(&db, &n.url, &format!("treasury = [\"{treasury}\"]")).await;
        let n = &n;
        n.mint(Some(USDC), 6).await;
        n.wallet("alice").await;
        n.fund_token("alice", USDC, 100_000_000).await;
        // 100 SOL by a cheat code before its orders: its opening.
        let shop = n.wallet("shop").await;
        let thief = n.key().await;
        n.fund_owner(&treasury, USDC, 0).await;
        w.order("B-1", &shop, "native", 1_000_000_000).await;
        w.order("B-2", &shop, USDC, 10_000_000).await;
        age_orders(&w.app).await;
        let check = || {
            w.app.engine.check_balances(
                w.balances.lookback,
                &w.balances.treasury,
                None,
                Trigger::Cli,
            )
        };

        n.pay_sol("alice", &shop, 1_000_000_000, false).await;
        let paid2 = n.pay_token(usdc(&shop, 10_000_000)).await;
        let extra = n.pay_token(usdc(&shop, 3_000_000)).await;
        let sweep = n
            .pay_token(TokenPay {
                from: "shop",
                existing: true,
                ..usdc(&treasury, 5_000_000)
            })
            .await;
        let drain = n.pay_sol("shop", &thief, 200_000_000, false).await;
        n.advance(34).await;

        let r = check().await.expect("a check");
        let json = r.to_json();
        let e = entry(&r, "balances");
        assert_eq!((e.status.as_str(), e.checked), ("ok", 2), "{db}: {json}");
        assert_eq!(
            (e.gaps.unexpected_outflow, e.gaps.balance_mismatch),
            (1, 0),
            "{db}: {json}"
        );
        for r in ["B-1", "B-2"] {
            assert_eq!(w.row(r).await.state, State::Final, "{db} {r}: {json}");
        }
        assert_eq!(
            w.row("B-2").await.tx_hash.as_deref(),
            Some(paid2.as_str()),
            "{db}"
        );
        let store = &w.app.engine.store;
        let findings = store.findings().await.unwrap();
        let of = |kind: &str| -> Vec<Option<String>> {
            findings
                .iter()
                .filter(|f| f.kind == kind)
                .map(|f| f.tx_hash.clone())
                .collect()
        };
        assert_eq!(of("sweep"), [Some(sweep.clone())], "{db}: {json}");
        assert_eq!(of("unknown_payment"), [Some(extra.clone())], "{db}: {json}");
        let drains = open_of(&w.app, "unexpected_outflow").await;
        assert_eq!(drains.len(), 1, "{db}");
        assert_eq!(drains[0].tx_hash.as_deref(), Some(drain.as_str()), "{db}");
        assert_eq!(drains[0].amount.as_deref(), Some("200000000"), "{db}");
        let rows = store.balances(None, false).await.unwrap();
        let held = |asset: &str| {
            rows.iter()
                .find(|r| r.asset == asset)
                .unwrap_or_else(|| panic!("{db}: no row for {asset}: {rows:?}"))
                .clone()
        };
        assert_eq!(held(USDC).balance, U256::from(8_000_000u32), "{db}");
        assert_eq!(
            held("native").opening_balance,
            U256::from(100_000_000_000u64),
            "{db}: the cheat code's 100 SOL, before the window"
        );
        assert!(
            rows.iter().all(|r| r.difference.abs.is_zero()),
            "{db}: {rows:?}"
        );

        // USDC that arrives outside any transaction: what nothing explains.
        n.fund_owner(&shop, USDC, 50_000_000).await;
        n.advance(34).await;
        let r = check().await.expect("a check");
        let e = entry(&r, "balances");
        assert_eq!(e.gaps.balance_mismatch, 1, "{db}: {}", r.to_json());
        let open = open_of(&w.app, "balance_mismatch").await;
        assert_eq!(open.len(), 1, "{db}");
        let row = store.balances(None, true).await.unwrap();
        assert_eq!(row.len(), 1, "{db}: {row:?}");
        let grew = row[0].balance - U256::from(8_000_000u32);
        assert!(!grew.is_zero(), "{db}: {row:?}");
        assert_eq!(open[0].amount, Some(grew.to_string()), "{db}");
    })
    .await;
}
