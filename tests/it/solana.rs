//! Solana end to end (docs/configuration.md, "Solana") against a real local cluster (surfpool,
//! `testkit::surfnet`), payments made with Solana's own libraries: the deposit scan finds SOL
//! and USDC payments no provider reported (on the wallet, and on token accounts the payment
//! created), a Qvard record naming a signature resolves on the cluster, a failed transaction
//! pays nothing, and states follow the cluster's commitment to `final`. On SQLite, PostgreSQL
//! and MariaDB.

use payrecon::app::App;
use payrecon::config::Config;
use payrecon::domain::{expected_order, Catalog, ChainKind, OrderInput, State, U256};
use payrecon::report::Report;
use payrecon::store::{NewOrder, Registered, Retries};
use payrecon_testkit::inspect::Inspect;
use payrecon_testkit::qvard::{FakeQvard, QvardPayment};
use payrecon_testkit::surfnet::{Surfnet, TokenPay, USDC};

use crate::reconcile::{entry, found, minutes_ago, on_backends, opts};

const QKEY: &str = "qk_live_solana_5be1c0d7a9f3e284";

mod balances;
mod standin;

pub(crate) struct SolWorld {
    pub qvard: FakeQvard,
    pub app: App,
    /// `[balances]` and the chains' treasuries, for `check_balances`.
    pub balances: payrecon::config::BalancesConfig,
}

impl SolWorld {
    /// payrecon on `db` reading the Solana JSON-RPC at `rpc`, with Qvard as a provider.
    pub async fn start(db: &str, rpc: &str) -> SolWorld {
        SolWorld::start_with(db, rpc, "").await
    }

    /// `start`, with `chain` added to `[chains.solana]`.
    pub async fn start_with(db: &str, rpc: &str, chain: &str) -> SolWorld {
        let qvard = FakeQvard::start(QKEY).await;
        let text = format!(
            r#"[database]
url = "{db}"

[chains.solana]
kind = "solana"
rpc_url = "{rpc}"
timeout = "5s"
max_retries = 1
{chain}

[assets."solana:{USDC}"]
symbol = "USDC"
decimals = 6

[providers.qvard]
kind = "http"
preset = "qvard"
base_url = "{qvard}"
api_key = "{QKEY}"
chains = ["solana"]
timeout = "5s"
max_retries = 1
backoff = "20ms"
"#,
            qvard = qvard.base_url(),
        );
        let config = Config::from_toml(&text, std::iter::empty()).expect("a valid config");
        let balances = config.balances.clone();
        let app = App::build(config).await.expect("App::build");
        SolWorld {
            qvard,
            app,
            balances,
        }
    }

    pub async fn order(&self, order_ref: &str, pay_to: &str, asset: &str, amount: u64) {
        let o = NewOrder {
            order_ref: order_ref.into(),
            chain: "solana".into(),
            pay_to: pay_to.into(),
            asset: asset.into(),
            amount_due: U256::from(amount),
        };
        self.app.engine.store.insert_orders(&[o]).await.unwrap();
    }

    pub async fn row(&self, order_ref: &str) -> payrecon_testkit::inspect::OrderSnapshot {
        let o = self.app.engine.store.order_by_ref(order_ref).await.unwrap();
        o.unwrap_or_else(|| panic!("no order {order_ref}"))
    }

    pub async fn run(&self) -> Report {
        self.app.engine.run(&opts()).await.expect("run")
    }

    /// A completed Qvard payment naming `sig` at `log_index`.
    pub fn qvard(&self, id: &str, sig: &str, log_index: i64, asset: &str, amount: &str) {
        self.qvard.add_payment(&QvardPayment {
            id: id.into(),
            status: "completed".into(),
            chain: "solana".into(),
            tx_hash: Some(sig.into()),
            log_index: Some(log_index),
            asset: asset.into(),
            amount: amount.into(),
            completed_at: minutes_ago(2),
        });
    }
}

/// SOL to a wallet (instruction 0: log index 0), USDC by `transferChecked` into an account the
/// payment created (instruction 1 after the account's creation: log index 65536) and by a plain
/// `transfer` into an account that existed (listed on it, not on the wallet), all found by the deposit scan alone and `confirmed` at once (the cluster's
/// commitment); a Qvard record naming a USDC signature resolves; a failed transaction pays
/// nothing (the scan skips it; named by Qvard it is an `unknown_payment`). When the cluster
/// has finalized their slots, every payment is `final`; a run with nothing new changes nothing.
#[tokio::test]
async fn sol_and_usdc_payments_are_found_resolved_and_finalized() {
    on_backends(|db| async move {
        let Some(n) = Surfnet::start().await else {
            return;
        };
        let w = SolWorld::start(&db, &n.url).await;
        let n = &n;
        assert_eq!(n.mint(Some(USDC), 6).await, USDC);
        n.wallet("alice").await;
        n.fund_token("alice", USDC, 100_000_000).await;
        let shops: Vec<String> = futures::future::join_all((0..5).map(|_| n.key())).await;
        w.order("S-1", &shops[0], "native", 100_000_000).await;
        w.order("S-2", &shops[1], USDC, 12_345_678).await;
        w.order("S-3", &shops[2], USDC, 5_000_000).await;
        w.order("S-4", &shops[3], "native", 50_000_000).await;
        w.order("S-5", &shops[4], USDC, 20_000_000).await;
        let sig1 = n.pay_sol("alice", &shops[0], 100_000_000, false).await;
        let sig2 = n.pay_token(usdc(&shops[1], 12_345_678)).await;
        // Into S-3's existing account: listed on that account only, not on the wallet.
        n.fund_owner(&shops[2], USDC, 0).await;
        let sig3 = n
            .pay_token(TokenPay {
                unchecked: true,
                existing: true,
                ..usdc(&shops[2], 5_000_000)
            })
            .await;
        let sig4 = n.pay_sol("alice", &shops[3], u64::MAX / 2, true).await;
        let sig5 = n.pay_token(usdc(&shops[4], 20_000_000)).await;
        w.qvard("S-5", &sig5, 65_536, USDC, "20.00");
        w.qvard("S-4", &sig4, 0, "native", "0.05");

        let report = w.run().await;
        let json = report.to_json();
        for (r, sig, index, amount) in [
            ("S-1", &sig1, 0, "100000000"),
            ("S-2", &sig2, 65_536, "12345678"),
            ("S-3", &sig3, 0, "5000000"),
            ("S-5", &sig5, 65_536, "20000000"),
        ] {
            let row = w.row(r).await;
            assert_eq!(row.state, State::Confirmed, "{db} {r}: {json}");
            assert_eq!(row.tx_hash.as_deref(), Some(sig.as_str()), "{db} {r}");
            assert_eq!(row.log_index, Some(index), "{db} {r}");
            assert_eq!(row.amount_paid.as_deref(), Some(amount), "{db} {r}");
        }
        assert_eq!(w.row("S-4").await.state, State::Unpaid, "{db}: {json}");
        let q = entry(&report, "qvard");
        assert_eq!((q.status.as_str(), q.applied), ("ok", 1), "{db}: {json}");
        let unknown = found(&report, "unknown_payment");
        assert_eq!(unknown.len(), 1, "{db}: {json}");
        assert_eq!(unknown[0].tx_hash.as_deref(), Some(sig4.as_str()));
        assert_eq!(entry(&report, "chain").status, "ok", "{db}: {json}");

        n.advance(34).await;
        let report = w.run().await;
        for r in ["S-1", "S-2", "S-3", "S-5"] {
            let row = w.row(r).await;
            assert_eq!(row.state, State::Final, "{db} {r}: {}", report.to_json());
        }
        let again = w.run().await;
        let chain = entry(&again, "chain");
        assert_eq!((chain.status.as_str(), chain.applied), ("ok", 0), "{db}");
    })
    .await;
}

/// Solana Pay (docs/configuration.md, "Solana"): two orders for the same amount to one merchant
/// wallet, each with its own reference (registered as the API and `orders import` do). A
/// payment carrying the younger order's reference pays that order, not the older one the plan
/// would pick by address (docs/how-it-works.md, "How a run decides", Plan); the older order's
/// own payment then pays it. The reference is stored and read back, and registering the order
/// again with another reference is a conflict naming `reference`.
#[tokio::test]
async fn a_solana_pay_reference_picks_its_order_among_orders_to_one_wallet() {
    on_backends(|db| async move {
        let Some(n) = Surfnet::start().await else {
            return;
        };
        let w = SolWorld::start(&db, &n.url).await;
        let n = &n;
        n.mint(Some(USDC), 6).await;
        n.wallet("alice").await;
        n.fund_token("alice", USDC, 100_000_000).await;
        let shop = n.key().await;
        let (ref1, ref2) = (n.key().await, n.key().await);
        let catalog = Catalog::new([("solana".to_string(), ChainKind::Solana)])
            .with_asset_key(&format!("solana:{USDC}"));
        let order = |r: &'static str, reference: String| {
            let input = OrderInput {
                order_ref: r,
                chain: "solana",
                pay_to: &shop,
                asset: USDC,
                amount_due: "10000000",
                expires_at: None,
                reference: Some(&reference),
            };
            expected_order(&input, &catalog).expect("a valid order")
        };
        let orders = [order("R-1", ref1.clone()), order("R-2", ref2.clone())];
        let store = &w.app.engine.store;
        let done = store
            .register_orders(&orders, &Retries::default())
            .await
            .unwrap();
        assert!(
            done.iter().all(|r| matches!(r, Registered::Created(_))),
            "{db}"
        );
        let view = store.order_view("R-2").await.unwrap().unwrap();
        assert_eq!(view.reference.as_deref(), Some(ref2.as_str()), "{db}");
        let other = [order("R-2", ref1.clone())];
        let again = store
            .register_orders(&other, &Retries::default())
            .await
            .unwrap();
        assert!(
            matches!(&again[0], Registered::Conflict(_, f) if f == &["reference"]),
            "{db}: {again:?}"
        );

        let paid2 = n
            .pay_token(TokenPay {
                reference: Some(&ref2),
                ..usdc(&shop, 10_000_000)
            })
            .await;
        let report = w.run().await;
        let json = report.to_json();
        assert_eq!(w.row("R-1").await.state, State::Unpaid, "{db}: {json}");
        let r2 = w.row("R-2").await;
        assert_eq!(r2.state, State::Confirmed, "{db}: {json}");
        assert_eq!(r2.tx_hash.as_deref(), Some(paid2.as_str()), "{db}");

        let paid1 = n
            .pay_token(TokenPay {
                reference: Some(&ref1),
                ..usdc(&shop, 10_000_000)
            })
            .await;
        w.run().await;
        let r1 = w.row("R-1").await;
        assert_eq!(r1.state, State::Confirmed, "{db}");
        assert_eq!(r1.tx_hash.as_deref(), Some(paid1.as_str()), "{db}");
    })
    .await;
}

/// USDC from wallet "alice" to `to`, by `transferChecked`.
pub(crate) fn usdc(to: &str, amount: u64) -> TokenPay<'_> {
    TokenPay {
        from: "alice",
        to,
        mint: USDC,
        amount,
        decimals: 6,
        ..TokenPay::default()
    }
}
