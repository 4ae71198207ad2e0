//! The world of the two-`serve` test: the sandbox chain and the fake Chaingateway (provider
//! `cg`) in this process, a PostgreSQL or MariaDB/MySQL ledger, and helpers that add paid orders and read the
//! audit trail, the lease row and the fake's resend counts.

use std::collections::BTreeMap;
use std::path::PathBuf;

use alloy::primitives::U256 as EvmU256;
use payrecon::domain::{Address, State};
use payrecon::store::{NewOrder, Store};
use payrecon_testkit::sandbox::chain::SandboxChain;
use payrecon_testkit::sandbox::chaingateway::{notification, FakeChaingateway};
use payrecon_testkit::sandbox::SANDBOX_TOKEN;

use crate::cli::harness::{addr, usdt};
use crate::reconcile::{toml_with_chain, KEY};
use payrecon_testkit::inspect::Inspect;

pub(crate) struct Pair {
    pub chain: SandboxChain,
    pub cg: FakeChaingateway,
    pub store: Store,
    pub config: PathBuf,
    /// Order number -> the notification was put on the failed list.
    pub orders: BTreeMap<u32, bool>,
    _dir: tempfile::TempDir,
}

/// The lease row of a provider.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LeaseRow {
    pub holder: String,
    pub token: i64,
    /// Seconds since the epoch.
    pub expires_at: f64,
    /// The database's clock when read.
    pub now: f64,
}

impl LeaseRow {
    /// The pid in `host:pid:suffix`.
    pub fn pid(&self) -> u32 {
        let pid = self.holder.rsplit(':').nth(1).expect("host:pid:suffix");
        pid.parse()
            .unwrap_or_else(|_| panic!("holder {}", self.holder))
    }
    pub fn held(&self) -> bool {
        self.expires_at > self.now
    }
}

impl Pair {
    /// On a fresh PostgreSQL schema or MariaDB/MySQL database `db_url`; `extra` ends the
    /// configuration.
    pub async fn start(db_url: &str, extra: &str) -> Pair {
        let chain = SandboxChain::new(1);
        let rpc_url = chain.serve().await.unwrap();
        let (cg, cg_url) = FakeChaingateway::start(KEY).await;
        let store = Store::connect(db_url, 4).await.unwrap();
        store.migrate().await.unwrap();
        let keys = "confirmations = 12\nfinality = \"finalized\"\nscan_unpaid = false";
        let toml = toml_with_chain(db_url, &cg_url, &rpc_url, SANDBOX_TOKEN, keys, "", extra);
        let dir = payrecon_testkit::tmp::dir().unwrap();
        let config = dir.path().join("config.toml");
        std::fs::write(&config, toml).unwrap();
        Pair {
            chain,
            cg,
            store,
            config,
            orders: BTreeMap::new(),
            _dir: dir,
        }
    }

    /// Orders `O-<n>` for `ns`, each paid 25 USDT on chain in one new block and listed by
    /// the provider (a missing payment); the notifications of `failed` are on the failed list.
    /// `final_now`: 70 more blocks, so the payments are final at once (one jump each);
    /// otherwise they stay pending (1 confirmation of 12) until `mine_final`.
    pub async fn pay(&mut self, ns: &[u32], failed: &[u32], final_now: bool) {
        let orders: Vec<NewOrder> = ns
            .iter()
            .map(|n| NewOrder {
                order_ref: format!("O-{n}"),
                chain: "ethereum".into(),
                pay_to: addr(*n).to_string(),
                asset: SANDBOX_TOKEN.into(),
                amount_due: usdt(25),
            })
            .collect();
        self.store.insert_orders(&orders).await.unwrap();
        let token = Address::parse(SANDBOX_TOKEN).unwrap();
        let payer = Address::parse("0x00000000000000000000000000000000000000fe").unwrap();
        let payments: Vec<(Address, EvmU256)> = ns
            .iter()
            .map(|n| (addr(*n), EvmU256::from(usdt(25))))
            .collect();
        let txs = self.chain.add_token_transfers(&token, &payer, &payments);
        self.chain.mine_block();
        if final_now {
            self.chain.mine(70);
        }
        let created = jiff::Timestamp::now() - jiff::SignedDuration::from_mins(30);
        for (n, (tx, _)) in ns.iter().zip(&txs) {
            let id = format!("n-{n}");
            let to = addr(*n);
            let record = notification(
                &id,
                tx.as_str(),
                SANDBOX_TOKEN,
                to.as_str(),
                Some("25"),
                created,
            );
            self.cg.add_notification("ethereum", record);
            let is_failed = failed.contains(n);
            if is_failed {
                assert!(self.cg.mark_failed("ethereum", &id));
            }
            self.orders.insert(*n, is_failed);
        }
    }

    /// 70 blocks: every payment so far is final.
    pub fn mine_final(&self) {
        self.chain.mine(70);
    }

    /// The states of orders `O-<n>`.
    pub async fn states(&self, ns: &[u32]) -> Vec<State> {
        let mut out = Vec::new();
        for n in ns {
            let o = self.store.order_by_ref(&format!("O-{n}")).await.unwrap();
            out.push(o.expect("the order").state);
        }
        out
    }

    /// Whether every one of `ns` is at `state`.
    pub async fn all_at(&self, ns: &[u32], state: State) -> bool {
        self.states(ns).await.iter().all(|s| *s == state)
    }

    pub async fn scalar(&self, sql: &str) -> i64 {
        let rows = self
            .store
            .rows(sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        rows[0][0].as_deref().unwrap_or("0").parse().unwrap()
    }

    /// The lease row of `provider` (a name of this test's, put in the SQL as it is), with the
    /// database's clock.
    pub async fn lease(&self, provider: &str) -> Option<LeaseRow> {
        let sql = match &self.store {
            Store::MySql(_) => {
                let epoch_us = |t: &str| {
                    format!("CAST(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', {t}) AS CHAR)")
                };
                format!(
                    "SELECT holder, token, {}, {} FROM payrecon_leases WHERE provider = '{provider}'",
                    epoch_us("expires_at"),
                    epoch_us("UTC_TIMESTAMP(6)")
                )
            }
            _ => format!(
                "SELECT holder, token, CAST(EXTRACT(EPOCH FROM expires_at) * 1000000 AS TEXT), \
                 CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000 AS TEXT) \
                 FROM payrecon_leases WHERE provider = '{provider}'"
            ),
        };
        let rows = self.store.rows(&sql).await.unwrap();
        let r = rows.into_iter().next()?;
        let num = |i: usize| -> f64 { r[i].as_deref().unwrap().parse().unwrap() };
        Some(LeaseRow {
            holder: r[0].clone().unwrap(),
            token: num(1) as i64,
            expires_at: num(2) / 1e6,
            now: num(3) / 1e6,
        })
    }

    /// Resend requests the fake answered, per notification id.
    pub fn resends(&self) -> BTreeMap<String, usize> {
        let mut out = BTreeMap::new();
        for (_, id) in self.cg.retries() {
            *out.entry(id).or_default() += 1;
        }
        out
    }

    /// Resends expected: one per failed notification.
    pub fn expected_resends(&self) -> BTreeMap<String, usize> {
        self.orders
            .iter()
            .filter(|(_, failed)| **failed)
            .map(|(n, _)| (format!("n-{n}"), 1))
            .collect()
    }
}
