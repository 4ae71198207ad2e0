//! Every gap kind on Tron, the sweep's reorg handling on a chain whose final block is the
//! solidified one, and the deposit scan through `eth_getLogs` in base58 and out.

use payrecon::domain::State;

use super::{payee, txid, TronWorld, HEAD, USDT};
use crate::reconcile::{entry, found, gaps, on_backends, usdt, CG};
use payrecon_testkit::inspect::Inspect;

/// missing, failed_notification, amount_mismatch and unknown_payment in one run; lagging in
/// the next, once the payment has its confirmations.
#[tokio::test]
async fn every_provider_gap_kind_on_tron() {
    on_backends(|db| async move {
        let w = TronWorld::start(&db).await;
        let (miss, fail, under, lag, stray) =
            (payee(31), payee(32), payee(33), payee(34), payee(35));
        w.order("G-MISS", &miss, USDT, usdt(10)).await;
        w.order("G-FAIL", &fail, USDT, usdt(11)).await;
        w.order("G-UNDER", &under, USDT, usdt(12)).await;
        w.order("G-LAG", &lag, USDT, usdt(13)).await;
        w.pay_usdt(&txid(31), HEAD - 40, &miss, 10_000_000, 1);
        w.pay_usdt(&txid(32), HEAD - 40, &fail, 11_000_000, 2);
        w.pay_usdt(&txid(33), HEAD - 40, &under, 9_000_000, 3);
        w.pay_usdt(&txid(34), HEAD - 2, &lag, 13_000_000, 0);
        w.pay_usdt(&txid(35), HEAD - 40, &stray, 5_000_000, 4);
        w.notify("971", &txid(31), Some(USDT), miss.as_str(), "10.000000");
        w.notify("972", &txid(32), Some(USDT), fail.as_str(), "11.000000");
        assert!(w.cg.mark_failed("tron", "972"));
        w.notify("973", &txid(33), Some(USDT), under.as_str(), "9.000000");
        w.notify("974", &txid(34), Some(USDT), lag.as_str(), "13.000000");
        w.notify("975", &txid(35), Some(USDT), stray.as_str(), "5.000000");

        let report = w.run().await;
        let cg = entry(&report, CG);
        // G-LAG is missing too (unpaid -> pending) in this first run; G-UNDER (9 of 12) is
        // credited and held unpaid.
        assert_eq!(gaps(cg), [3, 0, 1, 1, 1, 0], "{db}: {}", report.to_json());
        assert_eq!(cg.resends.requested, 1, "{db}");
        assert_eq!(
            w.cg.retries(),
            vec![("tron".to_string(), "972".to_string())]
        );
        for (r, s) in [
            ("G-MISS", State::Final),
            ("G-FAIL", State::Final),
            ("G-UNDER", State::Unpaid),
            ("G-LAG", State::Pending),
        ] {
            assert_eq!(w.state(r).await, s, "{db}: {r}");
        }
        let unknown = found(&report, "unknown_payment");
        assert_eq!(unknown.len(), 1, "{db}");
        assert!(
            unknown[0].detail.contains(stray.as_str())
                || unknown[0].tx_hash.as_deref() == Some(txid(35).as_str()),
            "{db}: {:?}",
            unknown[0]
        );
        let mismatch = found(&report, "amount_mismatch");
        assert_eq!(mismatch[0].order_ref.as_deref(), Some("G-UNDER"), "{db}");
        assert_eq!(mismatch[0].action, "held", "{db}");

        w.node.mine(20);
        let report = w.run().await;
        assert_eq!(
            gaps(entry(&report, CG))[1],
            1,
            "{db}: lagging: {}",
            report.to_json()
        );
        assert!(w.state("G-LAG").await >= State::Confirmed, "{db}");
    })
    .await;
}

/// Above the solidified block a Tron payment can still move: re-included in another block
/// it is re-keyed by the sweep (a `reorged` finding, applied) and goes on to final; dropped,
/// it is a `reorged` finding every run and its state is kept.
#[tokio::test]
async fn a_reorg_above_the_solidified_block_is_rekeyed_or_flagged_never_moved_back() {
    on_backends(|db| async move {
        let w = TronWorld::start(&db).await;
        let (moved, dropped) = (payee(41), payee(42));
        w.order("R-MOVED", &moved, USDT, usdt(3)).await;
        w.order("R-DROPPED", &dropped, USDT, usdt(4)).await;
        w.pay_usdt(&txid(41), HEAD - 3, &moved, 3_000_000, 5);
        w.pay_usdt(&txid(42), HEAD - 3, &dropped, 4_000_000, 6);
        w.notify("981", &txid(41), Some(USDT), moved.as_str(), "3.000000");
        w.notify("982", &txid(42), Some(USDT), dropped.as_str(), "4.000000");
        w.run().await;
        assert_eq!(w.state("R-MOVED").await, State::Pending, "{db}");
        assert_eq!(w.state("R-DROPPED").await, State::Pending, "{db}");

        // The last 5 blocks are replaced; one payment is in the new fork two blocks later.
        w.node.reorg_from(HEAD - 4);
        w.node.move_tx(&txid(41), HEAD - 1);
        w.node.drop_tx(&txid(42));
        let report = w.run().await;
        // The sweep's findings (the provider path reports the same two from its records).
        let swept = |r: &payrecon::report::Report| {
            found(r, "reorged")
                .into_iter()
                .filter(|f| f.provider == "chain")
                .count()
        };
        assert_eq!(swept(&report), 2, "{db}: {}", report.to_json());
        let row = w
            .app
            .engine
            .store
            .order_by_ref("R-MOVED")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            row.block_number,
            Some((HEAD - 1) as i64),
            "{db}: re-keyed to the new block"
        );
        assert_eq!(
            row.block_hash.as_deref(),
            Some(format!("0x{}", w.node.block_id(HEAD - 1)).as_str())
        );
        assert_eq!(
            w.state("R-DROPPED").await,
            State::Pending,
            "{db}: never moved back"
        );

        w.node.mine(40);
        let report = w.run().await;
        assert_eq!(w.state("R-MOVED").await, State::Final, "{db}");
        assert_eq!(w.state("R-DROPPED").await, State::Pending, "{db}");
        assert_eq!(swept(&report), 1, "{db}: the dropped one, every run");
    })
    .await;
}

/// The deposit scan on Tron: a USDT payment to an unpaid order's base58 address that no
/// provider reported is found by `eth_getLogs` (addresses sent as 0x hex, within Tron's 5,000
/// block range) and applied under the sweep's entry, in base58.
#[tokio::test]
async fn the_deposit_scan_finds_an_unreported_trc20_payment() {
    on_backends(|db| async move {
        let w = TronWorld::start_scanning(&db, true).await;
        let to = payee(51);
        w.order("D-1", &to, USDT, usdt(8)).await;
        w.pay_usdt(&txid(51), HEAD - 100, &to, 8_000_000, 9);
        let report = w.run().await;
        assert_eq!(
            w.state("D-1").await,
            State::Final,
            "{db}: {}",
            report.to_json()
        );
        let chain = entry(&report, "chain");
        assert_eq!(gaps(chain)[0], 1, "{db}: missing, found by the scan");
        let row = w
            .app
            .engine
            .store
            .order_by_ref("D-1")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(row.tx_hash.as_deref(), Some(txid(51).as_str()), "{db}");
        let logs = w
            .node
            .requests()
            .iter()
            .filter(|r| *r == "eth_getLogs")
            .count();
        assert!(logs >= 1, "{db}");
    })
    .await;
}

/// The HTTP API is retried like JSON-RPC: two 503s, then the TRX payment is found. When it
/// stays down the provider's part fails with an error naming the chain and the path, and
/// neither that error nor the report holds the API key.
#[tokio::test]
async fn the_http_api_is_retried_and_its_outage_fails_the_part_without_the_key() {
    let (_dir, db) = crate::support::sqlite_url();
    let w = TronWorld::start(&db).await;
    let to = payee(61);
    let trx = payrecon::domain::U256::from(5_000_000u64);
    w.order("H-1", &to, "native", trx).await;
    w.pay_trx(&txid(61), HEAD - 50, &to, 5_000_000);
    w.notify("991", &txid(61), None, to.as_str(), "5.000000");
    w.node.push_api_fault(503, 2);
    let report = w.run().await;
    assert_eq!(w.state("H-1").await, State::Final, "{}", report.to_json());
    let byid = w
        .node
        .requests()
        .iter()
        .filter(|r| *r == "/wallet/gettransactionbyid")
        .count();
    assert_eq!(byid, 3, "two 503s and the answer");

    let to = payee(62);
    w.order("H-2", &to, "native", trx).await;
    w.pay_trx(&txid(62), HEAD - 50, &to, 5_000_000);
    w.notify("992", &txid(62), None, to.as_str(), "5.000000");
    w.node.push_api_fault(503, 50);
    let report = w.run().await;
    let cg = entry(&report, CG);
    assert_eq!(cg.status, "failed", "{}", report.to_json());
    let error = cg.error.clone().unwrap_or_default();
    assert!(
        error.contains("chain tron") && error.contains("gettransactionbyid"),
        "{error}"
    );
    assert!(
        !report.to_json().contains(super::TRON_KEY),
        "the key leaked: {}",
        report.to_json()
    );
    assert_eq!(w.state("H-2").await, State::Unpaid);
}
