//! Bitcoin end to end (docs/configuration.md, "Bitcoin"): `Engine::run` against the fake
//! Esplora API, the fake Chaingateway serving `bitcoin` records as Chaingateway writes them (a
//! txid, the address, the amount in BTC, no output index), and real SQLite and PostgreSQL
//! ledgers.

use payrecon::app::App;
use payrecon::config::Config;
use payrecon::domain::U256;
use payrecon::report::Report;
use payrecon::store::NewOrder;
use payrecon_testkit::esplora::{FakeEsplora, Out};
use payrecon_testkit::sandbox::chaingateway::{notification, FakeChaingateway};
use serde_json::json;

use crate::reconcile::{minutes_ago, opts, CG, KEY};
use payrecon_testkit::inspect::Inspect;

mod config;
mod gaps;
mod payments;
mod reorgs;

const TIP: u64 = 925_000;
/// Real mainnet addresses of each kind.
const P2WPKH: &str = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq";
const P2PKH: &str = "1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2";
const P2TR: &str = "bc1p5d7rjq7g6rdk2yhzks9smlaqtedr4dekq08ge8ztwac72sfr9rusxg3297";
const CHANGE: &str = "bc1qxy2kgdygjrsqtzq2n0yrf2493p83kkfjhx0wlh";

fn txid(n: u64) -> String {
    format!("{:064x}", 0xb7c_0000u64 + n)
}

struct BtcWorld {
    esplora: FakeEsplora,
    cg: FakeChaingateway,
    app: App,
}

impl BtcWorld {
    async fn start(db: &str) -> BtcWorld {
        let esplora = FakeEsplora::start(TIP).await;
        let (cg, cg_url) = FakeChaingateway::start(KEY).await;
        let text = format!(
            r#"[database]
url = "{db}"

{chain}
[providers.{CG}]
kind = "chaingateway"
base_url = "{cg_url}"
api_key = "{KEY}"
network = "mainnet"
chains = ["bitcoin"]
timeout = "5s"
max_retries = 2
backoff = "20ms"
"#,
            chain = esplora.config_table("confirmations = 2\nfinal_depth = 6\nmax_retries = 2"),
        );
        let config = Config::from_toml(&text, std::iter::empty()).expect("a valid config");
        let app = App::build(config).await.expect("App::build");
        BtcWorld { esplora, cg, app }
    }

    async fn order(&self, order_ref: &str, pay_to: &str, sats: u64) {
        let o = NewOrder {
            order_ref: order_ref.into(),
            chain: "bitcoin".into(),
            pay_to: pay_to.into(),
            asset: "native".into(),
            amount_due: U256::from(sats),
        };
        self.app.engine.store.insert_orders(&[o]).await.unwrap();
    }

    async fn row(&self, order_ref: &str) -> payrecon_testkit::inspect::OrderSnapshot {
        let o = self.app.engine.store.order_by_ref(order_ref).await.unwrap();
        o.unwrap_or_else(|| panic!("no order {order_ref}"))
    }

    async fn run(&self) -> Report {
        self.app.engine.run(&opts()).await.expect("run")
    }

    /// A Chaingateway `bitcoin` notification: the amount in BTC (or none).
    fn notify(&self, id: &str, txid: &str, to: &str, btc: Option<&str>) {
        let mut n = notification(id, txid, "native", to, btc, minutes_ago(5));
        n["type"] = json!("BTC");
        n["blockchain"] = json!("bitcoin");
        n["from"] = json!(CHANGE);
        self.cg.add_notification("bitcoin", n);
    }
}

fn pays(address: &str, sats: u64) -> Vec<Out> {
    vec![
        Out {
            address: CHANGE.into(),
            sats: 2_000_000,
        },
        Out {
            address: address.into(),
            sats,
        },
    ]
}
