//! The balance check on Bitcoin, against the fake Esplora API and every backend: the opening
//! balance recorded; an unreported payment credited; a sweep to the treasury (with its change
//! and fee) recorded; a drain opening `unexpected_outflow`; money the history does not show
//! opening `balance_mismatch`; and what a check costs per address.

use payrecon::app::App;
use payrecon::config::Config;
use payrecon::domain::{State, U256};
use payrecon::engine::Trigger;
use payrecon::store::NewOrder;
use payrecon_testkit::esplora::{FakeEsplora, Out};
use payrecon_testkit::inspect::Inspect;
use payrecon_testkit::sandbox::chaingateway::FakeChaingateway;

use super::{age_orders, open_of};
use crate::reconcile::{entry, on_backends, CG, KEY};

const TIP: u64 = 925_000;
const DEPOSIT: &str = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq";
const TREASURY: &str = "bc1p5d7rjq7g6rdk2yhzks9smlaqtedr4dekq08ge8ztwac72sfr9rusxg3297";
const THIEF: &str = "1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2";

fn txid(n: u64) -> String {
    format!("{:064x}", 0xba1_0000u64 + n)
}

fn out(address: &str, sats: u64) -> Out {
    Out {
        address: address.into(),
        sats,
    }
}

#[tokio::test]
async fn a_bitcoin_check_explains_payments_sweeps_and_drains_from_esplora() {
    on_backends(|db| async move {
        let esplora = FakeEsplora::start(TIP).await;
        let (_cg, cg_url) = FakeChaingateway::start(KEY).await;
        let chain = esplora.config_table(&format!(
            "confirmations = 2\nfinal_depth = 6\nmax_retries = 1\ntreasury = [\"{TREASURY}\"]"
        ));
        let text = format!(
            "[database]\nurl = \"{db}\"\n\n{chain}\n[providers.{CG}]\nkind = \"chaingateway\"\n\
             base_url = \"{cg_url}\"\napi_key = \"{KEY}\"\nnetwork = \"mainnet\"\n\
             chains = [\"bitcoin\"]\ntimeout = \"5s\"\nmax_retries = 1\n"
        );
        let config = Config::from_toml(&text, std::iter::empty()).unwrap();
        let (lookback, treasuries) = (config.balances.lookback, config.balances.treasury.clone());
        let app = App::build(config).await.unwrap();
        let store = &app.engine.store;
        let o = NewOrder {
            order_ref: "BTC-1".into(),
            chain: "bitcoin".into(),
            pay_to: DEPOSIT.into(),
            asset: "native".into(),
            amount_due: U256::from(125_000u32),
        };
        store.insert_orders(&[o]).await.unwrap();
        age_orders(&app).await;
        let check = || {
            app.engine
                .check_balances(lookback, &treasuries, None, Trigger::Cli)
        };
        // Money the address held long before its order: the opening, not an exception.
        esplora.add(&txid(1), Some(TIP - 100), vec![out(DEPOSIT, 50_000)]);
        let r = check().await.unwrap();
        let e = entry(&r, "balances");
        assert_eq!(
            (e.status.as_str(), e.checked, e.gaps.total()),
            ("ok", 1, 0),
            "{db}: {}",
            r.to_json()
        );
        let rows = store.balances(None, false).await.unwrap();
        assert_eq!(rows.len(), 1, "{db}");
        assert_eq!(rows[0].opening_balance, U256::from(50_000u32), "{db}");
        assert_eq!(rows[0].checked_block, TIP - 5, "{db}: the final block");

        // An unreported payment, a sweep (both outputs spent: 100,000 to the treasury, 74,000
        // change, 1,000 fee), then a drain of the change.
        esplora.add(&txid(2), Some(TIP + 1), vec![out(DEPOSIT, 125_000)]);
        let sweep = vec![out(TREASURY, 100_000), out(DEPOSIT, 74_000)];
        esplora.add_spend_of(&txid(3), Some(TIP + 2), DEPOSIT, 175_000, sweep);
        esplora.add_spend_of(
            &txid(4),
            Some(TIP + 3),
            DEPOSIT,
            74_000,
            vec![out(THIEF, 73_000)],
        );
        esplora.mine(10);
        let r = check().await.unwrap();
        let e = entry(&r, "balances");
        assert_eq!(e.status, "ok", "{db}: {}", r.to_json());
        assert_eq!((e.checked, e.applied, e.gaps.missing), (1, 1, 1), "{db}");
        assert_eq!(
            (e.gaps.unexpected_outflow, e.gaps.balance_mismatch),
            (1, 0),
            "{db}: {}",
            r.to_json()
        );
        let paid = store.order_by_ref("BTC-1").await.unwrap().unwrap();
        assert_eq!(paid.state, State::Final, "{db}");
        let drains = open_of(&app, "unexpected_outflow").await;
        assert_eq!(drains.len(), 1, "{db}");
        assert_eq!(drains[0].tx_hash.as_deref(), Some(txid(4).as_str()), "{db}");
        assert_eq!(drains[0].amount.as_deref(), Some("73000"), "{db}");
        let findings = payrecon_testkit::inspect::Inspect::findings(store)
            .await
            .unwrap();
        let swept = findings
            .iter()
            .find(|f| f.kind == "sweep")
            .expect("the sweep");
        assert_eq!(swept.tx_hash.as_deref(), Some(txid(3).as_str()), "{db}");
        let rows = store.balances(None, true).await.unwrap();
        assert!(
            rows.is_empty(),
            "{db}: every difference explained: {rows:?}"
        );

        // Money the history does not show (an index that lost a transaction).
        esplora.add(&txid(5), Some(TIP + 11), vec![out(DEPOSIT, 30_000)]);
        esplora.unlist(&txid(5));
        esplora.mine(10);
        let r = check().await.unwrap();
        assert_eq!(
            entry(&r, "balances").gaps.balance_mismatch,
            1,
            "{db}: {}",
            r.to_json()
        );
        let open = open_of(&app, "balance_mismatch").await;
        assert_eq!(open.len(), 1, "{db}");
        assert_eq!(open[0].amount.as_deref(), Some("30000"), "{db}");

        // Nothing new at the final block: no request for the address; new blocks: two
        // balance reads and one history page.
        let address_requests = || {
            esplora
                .requests()
                .iter()
                .filter(|p| p.starts_with("/address/"))
                .count()
        };
        let before = address_requests();
        check().await.unwrap();
        assert_eq!(address_requests() - before, 0, "{db}");
        esplora.mine(2);
        check().await.unwrap();
        assert_eq!(
            address_requests() - before,
            3,
            "{db}: {:?}",
            esplora.requests()
        );
    })
    .await;
}
