//! End-to-end reconciliation at the library level: `Engine::run` against a real anvil node,
//! the fake Chaingateway over loopback HTTP, and real SQLite and PostgreSQL ledgers.
//!
//! Every scenario builds a `World` per backend: its own anvil (token deployed), its own fake
//! Chaingateway, its own database, and an `App` built from a TOML configuration that names
//! the deployed token as the asset (6 decimals), 3 confirmations and `finalized` finality.

use payrecon::app::App;
use payrecon::config::Config;
use payrecon::domain::{Attach, BlockRef, PaymentKey, PlannedTransition, State, TxHash, U256};
use payrecon::engine::RunOptions;
use payrecon::report::{FindingOut, ProviderReport, Report};
use payrecon::store::{ApplyContext, NewOrder, Source, Store};
use payrecon_testkit::inspect::OrderSnapshot;
use payrecon_testkit::sandbox::chaingateway::{notification, FakeChaingateway};
use serde_json::Value;

use crate::evm::{deploy_token, send_token};
use crate::support::{self, Anvil};
use payrecon_testkit::inspect::Inspect;

mod credit_time;
mod faults;
mod gaps;
mod invariants;
mod late;
mod long_list;
mod merchant;
mod onchain;
mod receipts;
mod scan;
mod window;

/// The fake Chaingateway's API key (also the secret that must never leak).
pub(crate) const KEY: &str = "sk_live_e2e_4b1d9c7a3f2e8d6b";
/// The provider's name in these configurations.
pub(crate) const CG: &str = "cg";
/// Confirmations for `pending -> confirmed`.
pub(crate) const CONFS: u64 = 3;

/// A payee address (not a precompile, not an anvil account).
pub(crate) fn payee(n: u64) -> String {
    format!("0xa11ce{n:035x}")
}

/// A tx hash the chain does not have.
pub(crate) fn ghost_hash(n: u64) -> String {
    format!("0x{:064x}", 0xdead_0000u64 + n)
}

/// `whole` USDT in base units (6 decimals).
pub(crate) fn usdt(whole: u64) -> U256 {
    U256::from(whole) * U256::from(1_000_000u64)
}

pub(crate) fn minutes_ago(m: i64) -> jiff::Timestamp {
    jiff::Timestamp::now() - jiff::SignedDuration::from_mins(m)
}

/// A window of `[now - hours, now]`.
pub(crate) fn opts_since(hours: i64) -> RunOptions {
    let now = jiff::Timestamp::now();
    RunOptions::window(now - jiff::SignedDuration::from_hours(hours), now)
}

pub(crate) fn opts() -> RunOptions {
    opts_since(48)
}

pub(crate) struct World {
    pub anvil: Anvil,
    pub token: String,
    pub payer: String,
    pub cg: FakeChaingateway,
    pub cg_url: String,
    pub db_url: String,
    pub app: App,
    /// What the test injects that a run may log as an ERROR (a provider it took down, a
    /// fault it pushed): every other ERROR a run logs fails the test (`run`).
    pub allowed: std::sync::Mutex<Vec<String>>,
}

impl World {
    /// A world on `db_url` with the default provider `cg`; None when anvil is skipped.
    pub async fn start(db_url: &str) -> Option<World> {
        World::start_with(db_url, "", "").await
    }

    /// `providers` is appended after the `cg` provider table, `extra` after everything.
    pub async fn start_with(db_url: &str, providers: &str, extra: &str) -> Option<World> {
        World::start_on_chain(db_url, &default_chain(), providers, extra).await
    }

    /// As `start_with`, with `chain` as the `[chains.ethereum]` table's settings.
    pub async fn start_on_chain(
        db_url: &str,
        chain: &str,
        providers: &str,
        extra: &str,
    ) -> Option<World> {
        let anvil = Anvil::start().await?;
        let token = deploy_token(&anvil).await;
        let payer = anvil.accounts().await[0].clone();
        let (cg, cg_url) = FakeChaingateway::start(KEY).await;
        let text = toml_with_chain(db_url, &cg_url, &anvil.url, &token, chain, providers, extra);
        let config = Config::from_toml(&text, std::iter::empty()).expect("a valid config");
        let app = App::build(config).await.expect("App::build");
        Some(World {
            anvil,
            token,
            payer,
            cg,
            cg_url,
            db_url: db_url.to_string(),
            app,
            allowed: Default::default(),
        })
    }

    /// A second, independent `App` on the same database, chain and provider (another
    /// process's worth of state: its own pools, clients and metrics).
    pub async fn another_app(&self, providers: &str, extra: &str) -> App {
        let text = toml(
            &self.db_url,
            &self.cg_url,
            &self.anvil.url,
            &self.token,
            providers,
            extra,
        );
        let config = Config::from_toml(&text, std::iter::empty()).expect("a valid config");
        App::build(config).await.expect("App::build")
    }

    pub fn store(&self) -> &Store {
        &self.app.engine.store
    }

    /// Inserts token orders `(order_ref, payee, amount_due)`.
    pub async fn orders(&self, orders: &[(&str, &str, U256)]) {
        let rows: Vec<NewOrder> = orders
            .iter()
            .map(|(r, to, due)| NewOrder {
                order_ref: r.to_string(),
                chain: "ethereum".into(),
                pay_to: to.to_string(),
                asset: self.token.clone(),
                amount_due: *due,
            })
            .collect();
        self.store().insert_orders(&rows).await.expect("insert");
    }

    pub async fn order(&self, order_ref: &str) -> OrderSnapshot {
        self.store()
            .order_by_ref(order_ref)
            .await
            .expect("read order")
            .unwrap_or_else(|| panic!("no order {order_ref}"))
    }

    /// A token payment of `amount` to `to`; returns the tx hash.
    pub async fn pay(&self, to: &str, amount: U256) -> String {
        send_token(&self.anvil, &self.token, &self.payer, to, amount).await
    }

    /// The receipt's `(block number, block hash, log index of the first log)`.
    pub async fn where_is(&self, tx: &str) -> (u64, String, i64) {
        let r = self.anvil.receipt(tx).await;
        let hex = |v: &Value| u64::from_str_radix(v.as_str().unwrap().trim_start_matches("0x"), 16);
        let number = hex(&r["blockNumber"]).unwrap();
        let log_index = r["logs"]
            .get(0)
            .map(|l| hex(&l["logIndex"]).unwrap() as i64)
            .unwrap_or(-1);
        (
            number,
            r["blockHash"].as_str().unwrap().to_string(),
            log_index,
        )
    }

    /// A Chaingateway notification for a token payment, created 30 minutes ago.
    pub fn notify(&self, id: &str, tx: &str, to: &str, amount: &str) {
        self.notify_at(id, tx, to, amount, minutes_ago(30));
    }

    pub fn notify_at(&self, id: &str, tx: &str, to: &str, amount: &str, at: jiff::Timestamp) {
        let n = notification(id, tx, &self.token, to, Some(amount), at);
        self.cg.add_notification("ethereum", n);
    }

    /// Writes payment columns and state the way the merchant's webhook handler would.
    pub async fn seed(&self, order_ref: &str, tx: &str, log_index: i64, amount: U256, to: State) {
        let snap = self.order(order_ref).await;
        let block = match self
            .anvil
            .try_rpc("eth_getTransactionReceipt", serde_json::json!([tx]))
            .await
        {
            Ok(r) if !r.is_null() => {
                let (n, h, _) = self.where_is(tx).await;
                BlockRef { number: n, hash: h }
            }
            _ => BlockRef {
                number: 1,
                hash: String::new(),
            },
        };
        let t = PlannedTransition {
            order_id: snap.id,
            order_ref: order_ref.into(),
            from: snap.state,
            to,
            attach: Some(Attach {
                key: PaymentKey {
                    chain: "ethereum".into(),
                    tx_hash: TxHash::parse(tx).unwrap(),
                    log_index,
                },
                amount,
                block,
            }),
            credit: None,
        };
        let ctx = ApplyContext {
            source: Source::Webhook,
            provider: "merchant".into(),
            run_id: String::new(),
            events: false,
            retries: Default::default(),
        };
        self.store().apply(&[t], &ctx).await.expect("seed");
    }

    /// One run; it fails the test when it logs an ERROR the test did not allow (an
    /// injected fault): a store error, a chain that could not be read, anything a person
    /// must be told of (docs/reference.md §4: a part that failed is never "ok").
    pub async fn run(&self) -> Report {
        use tracing::Instrument as _;
        let (guard, span) = payrecon_testkit::logguard::span();
        let report = self
            .app
            .engine
            .run(&opts())
            .instrument(span)
            .await
            .expect("run");
        let allowed = self.allowed.lock().unwrap().clone();
        let unexpected: Vec<String> = payrecon_testkit::logguard::take(guard)
            .into_iter()
            .filter(|line| !allowed.iter().any(|a| line.contains(a.as_str())))
            .collect();
        assert!(
            unexpected.is_empty(),
            "the run logged {} ERROR(s) the test did not inject:\n{}\n{}",
            unexpected.len(),
            unexpected.join("\n"),
            report.to_json()
        );
        report
    }

    /// Lets a run log ERRORs containing `needle` (a fault the test injects).
    pub fn allow_error(&self, needle: &str) {
        self.allowed.lock().unwrap().push(needle.to_string());
    }

    /// `(order_ref, from, to)` of every audit row, in id order.
    pub async fn audit(&self) -> Vec<(String, State, State, String)> {
        let rows = self.store().transitions().await.expect("transitions");
        rows.into_iter()
            .map(|t| (t.order_ref, t.from_state, t.to_state, t.source))
            .collect()
    }
}

/// A Chaingateway provider table named `name` at `base_url` on `ethereum`.
pub(crate) fn provider_table(name: &str, base_url: &str) -> String {
    format!(
        r#"
[providers.{name}]
kind = "chaingateway"
base_url = "{base_url}"
api_key = "{KEY}"
network = "mainnet"
chains = ["ethereum"]
timeout = "2s"
max_retries = 2
backoff = "20ms"
"#
    )
}

/// The scenario config; `chain` holds the chain table's confirmation and finality keys.
/// The scenarios' chain settings. The deposit scan would also find the payments these
/// scenarios keep from the providers (or put outside their window); it has its own scenarios
/// (`scan.rs`).
fn default_chain() -> String {
    format!("confirmations = {CONFS}\nfinality = \"finalized\"\nscan_unpaid = false")
}

fn toml(db: &str, cg: &str, rpc: &str, token: &str, providers: &str, extra: &str) -> String {
    toml_with_chain(db, cg, rpc, token, &default_chain(), providers, extra)
}

pub(crate) fn toml_with_chain(
    db: &str,
    cg: &str,
    rpc: &str,
    token: &str,
    chain: &str,
    providers: &str,
    extra: &str,
) -> String {
    format!(
        r#"[database]
url = "{db}"

[http]
listen = "127.0.0.1:0"

[chains.ethereum]
rpc_url = "{rpc}"
{chain}
max_retries = 1
timeout = "5s"

[assets."ethereum:{token}"]
symbol = "USDT"
decimals = 6

[providers.{CG}]
kind = "chaingateway"
base_url = "{cg}"
api_key = "{KEY}"
network = "mainnet"
chains = ["ethereum"]
timeout = "5s"
max_concurrency = 4
max_retries = 2
backoff = "20ms"
{providers}
{extra}
"#
    )
}

/// Every backend (SQLite, PostgreSQL, MariaDB), one world each; the closure is the scenario.
pub(crate) async fn on_backends<F, Fut>(scenario: F)
where
    F: Fn(String) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let (_dir, urls) = support::all_backends().await;
    if support::strict() {
        assert_eq!(
            urls.len(),
            support::backends_chosen(),
            "strict mode runs SQLite, PostgreSQL and MariaDB (those chosen)"
        );
    }
    for url in urls {
        scenario(url).await;
    }
}

/// The report entry of `provider`.
pub(crate) fn entry<'a>(report: &'a Report, provider: &str) -> &'a ProviderReport {
    report
        .providers
        .iter()
        .find(|p| p.provider == provider)
        .unwrap_or_else(|| panic!("no report entry for {provider}: {}", report.to_json()))
}

/// Findings of `kind`.
pub(crate) fn found<'a>(report: &'a Report, kind: &str) -> Vec<&'a FindingOut> {
    report.findings.iter().filter(|f| f.kind == kind).collect()
}

/// `[missing, lagging, failed_notification, amount_mismatch, unknown_payment, reorged]`.
pub(crate) fn gaps(p: &ProviderReport) -> [u64; 6] {
    let g = &p.gaps;
    [
        g.missing,
        g.lagging,
        g.failed_notification,
        g.amount_mismatch,
        g.unknown_payment,
        g.reorged,
    ]
}
