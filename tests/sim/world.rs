//! One simulated world: the sandbox chain, the fake Chaingateway, a ledger (SQLite file, a
//! PostgreSQL schema or a MariaDB/MySQL database), one or two `App`s on it, and the ground
//! truth the generator wrote.

use alloy::primitives::U256 as EvmU256;
use payrecon::app::App;
use payrecon::config::Config;
use payrecon::domain::{Address, State, U256};
use payrecon::engine::{RunOptions, Trigger};
use payrecon::store::{NewOrder, Store};
use payrecon_testkit::sandbox::chain::SandboxChain;
use payrecon_testkit::sandbox::chaingateway::FakeChaingateway;
use payrecon_testkit::sandbox::{config_toml, SANDBOX_API_KEY, SANDBOX_TOKEN};
use payrecon_testkit::scratch::Place;

/// Where the ledger lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
    MySql,
}

/// An order as the generator created it.
pub struct SimOrder {
    pub order_ref: String,
    pub pay_to: Address,
    pub native: bool,
    pub due: u128,
}

/// An on-chain transaction the generator sent.
pub struct SimPay {
    pub tx: String,
    /// Block-level log index (token), -1 (native).
    pub log_index: i64,
    pub to: Address,
    pub native: bool,
    pub amount: u128,
    pub reverted: bool,
    pub block: u64,
    /// Listed by the provider (under at least one notification id).
    pub notified: bool,
}

pub struct World {
    pub chain: SandboxChain,
    pub cg: FakeChaingateway,
    pub app: App,
    /// A second instance on the same database (some seeds).
    pub other: Option<App>,
    pub orders: Vec<SimOrder>,
    pub pays: Vec<SimPay>,
    /// Run ids of every non-dry run (to read `payrecon_runs.error`).
    pub run_ids: Vec<String>,
    /// Each order's state after the previous step.
    pub last: std::collections::HashMap<String, State>,
    /// The seed's scratch space on a shared server: dropped after a green seed, kept after a
    /// red one.
    pub scratch: Option<Scratch>,
    /// The configuration both `App`s were built from (a child `payrecon` process can use it).
    #[allow(dead_code)]
    pub config_text: String,
    /// The ledger's URL (SQLite file or PostgreSQL schema).
    #[allow(dead_code)]
    pub db_url: String,
    /// Scratch space of this seed (the SQLite ledger lives here).
    #[allow(dead_code)]
    pub dir: tempfile::TempDir,
    /// `POST /webhooks/sandbox` and its consumer (seeds with ingest, `Extras::webhooks`).
    pub hooks: Option<crate::webhooks::Hooks>,
    /// The proxy between the `App`s and PostgreSQL (seeds that cut the connection).
    pub db_proxy: Option<payrecon_testkit::pgproxy::PgProxy>,
    /// A fake Qvard behind a second provider (`kind = "http"`, seeds with `Extras::qvard`).
    pub qv: Option<payrecon_testkit::qvard::FakeQvard>,
    /// Pays the fake Qvard lists, and faults queued in it so far.
    pub qv_listed: std::collections::HashSet<usize>,
    pub qv_faults: u64,
    /// Chain requests failed on purpose so far (`SandboxChain::fail_next`).
    pub chain_faults: u64,
    /// The merchant's application: receives payrecon's events, fulfils on `order.final`.
    pub merchant: crate::merchant::Merchant,
    /// How the provider's notification list is shaped (docs/configuration.md,
    /// "Long notification lists"; set by the scenario).
    pub list: crate::lists::ListShape,
    /// `[reconcile] underpaid_tolerance` as a share in hundredths of a percent (0: none).
    pub tolerance_bp: u128,
}

/// What `World::start_with` adds to a plain world.
#[derive(Debug, Default, Clone, Copy)]
pub struct Extras {
    /// Webhook ingest on the sandbox provider, served and consumed in-process.
    pub webhooks: bool,
    /// PostgreSQL through a proxy the seed can cut (ignored on SQLite).
    pub db_proxy: bool,
    /// A second provider: the Qvard preset against the fake Qvard.
    pub qvard: bool,
}

pub fn opts(dry_run: bool) -> RunOptions {
    let now = jiff::Timestamp::now();
    RunOptions {
        since: now - jiff::SignedDuration::from_hours(48),
        until: now + jiff::SignedDuration::from_mins(1),
        providers: Vec::new(),
        dry_run,
        no_resend: false,
        trigger: Trigger::Cli,
        progress: false,
        backfill: false,
    }
}

pub use payrecon_testkit::scratch::Scratch;

/// A seed's own ledger: a SQLite file in a temporary directory (kept as long as this is), a
/// fresh PostgreSQL schema or a fresh MariaDB/MySQL database (`scratch`: to drop when green).
pub struct Ledger {
    pub url: String,
    pub scratch: Option<Scratch>,
    pub _dir: Option<tempfile::TempDir>,
}

pub async fn ledger(backend: Backend) -> Result<Ledger, String> {
    let shared = |var: &str| std::env::var(var).map_err(|e| format!("{var}: {e}"));
    Ok(match backend {
        Backend::Sqlite => {
            let dir = payrecon_testkit::tmp::dir().map_err(|e| e.to_string())?;
            let url = format!("sqlite://{}", dir.path().join("ledger.db").display());
            Ledger {
                url,
                scratch: None,
                _dir: Some(dir),
            }
        }
        Backend::Postgres => {
            let base = shared("PAYRECON_TEST_PG_URL")?;
            on_server(&base, Place::Schema).await?
        }
        Backend::MySql => {
            let base = shared("PAYRECON_TEST_MYSQL_URL")?;
            on_server(&base, Place::Database).await?
        }
    })
}

/// A seed's ledger in a fresh schema or database on the server of `base`.
async fn on_server(base: &str, place: Place) -> Result<Ledger, String> {
    let s = payrecon_testkit::scratch::create(base, "payrecon_sim", place)
        .await
        .map_err(|e| format!("a fresh {place:?} on {base}: {e}"))?;
    Ok(Ledger {
        url: s.url.clone(),
        scratch: Some(s),
        _dir: None,
    })
}

/// Drops a green seed's schema or database.
pub async fn drop_scratch(scratch: Scratch) {
    scratch
        .drop()
        .await
        .expect("drop the seed's schema or database");
}

impl World {
    /// What an order of `due` must be paid to count as paid: `due` less the tolerance
    /// (`Tolerance::Share`'s rounding: down).
    pub fn due_after_tolerance(&self, due: u128) -> u128 {
        due - due * self.tolerance_bp / 10_000
    }

    #[allow(dead_code)] // the kill and anvil slices build plain worlds
    pub async fn start(backend: Backend, extra: &str, second: bool) -> World {
        Self::start_with(backend, extra, second, Extras::default()).await
    }

    /// `start` with webhook ingest and/or a cuttable database connection.
    pub async fn start_with(backend: Backend, extra: &str, second: bool, x: Extras) -> World {
        let dir = payrecon_testkit::tmp::dir().expect("temp dir");
        let (db_url, scratch) = match backend {
            Backend::Sqlite => (
                format!("sqlite://{}", dir.path().join("ledger.db").display()),
                None,
            ),
            Backend::Postgres | Backend::MySql => {
                let l = ledger(backend)
                    .await
                    .expect("a ledger on the shared server");
                (l.url, l.scratch)
            }
        };
        let chain = SandboxChain::new(1);
        let rpc_url = chain.serve().await.expect("serve the sandbox chain");
        let (cg, cg_url) = FakeChaingateway::start(SANDBOX_API_KEY).await;
        let (app_db_url, db_proxy) = if x.db_proxy && backend == Backend::Postgres {
            let (_, upstream) = payrecon_testkit::pgproxy::via(&db_url, "");
            let proxy = payrecon_testkit::pgproxy::PgProxy::start(upstream).await;
            (
                payrecon_testkit::pgproxy::via(&db_url, &proxy.addr).0,
                Some(proxy),
            )
        } else {
            (db_url.clone(), None)
        };
        let mut extra = if x.webhooks {
            format!("{}{extra}", crate::webhooks::config_keys())
        } else {
            extra.to_string()
        };
        // Some seeds' receivers refuse every 3rd to 7th request (500): retries.
        let refuse = (db_url.len() as u64 + u64::from(second)) % 6;
        let merchant =
            crate::merchant::Merchant::start(if refuse < 2 { 0 } else { refuse + 1 }).await;
        extra.push_str(&merchant.config_keys());
        let qv = if x.qvard {
            let qv = crate::qvard::start().await;
            extra.push_str(&crate::qvard::config(qv.base_url()));
            Some(qv)
        } else {
            None
        };
        let text = config_toml(&app_db_url, &cg_url, &rpc_url, &extra);
        let build = || async {
            let config = Config::from_toml(&text, std::iter::empty()).expect("a valid config");
            App::build(config).await.expect("App::build")
        };
        let app = build().await;
        let other = if second { Some(build().await) } else { None };
        let hooks = if x.webhooks {
            Some(crate::webhooks::Hooks::start(&app).await)
        } else {
            None
        };
        World {
            chain,
            cg,
            app,
            other,
            orders: Vec::new(),
            pays: Vec::new(),
            run_ids: Vec::new(),
            last: std::collections::HashMap::new(),
            scratch,
            config_text: text,
            db_url,
            dir,
            hooks,
            db_proxy,
            qv,
            qv_listed: std::collections::HashSet::new(),
            qv_faults: 0,
            chain_faults: 0,
            merchant,
            list: Default::default(),
            tolerance_bp: 0,
        }
    }

    pub fn store(&self) -> &Store {
        &self.app.engine.store
    }

    pub async fn insert_orders(&self) {
        let rows: Vec<NewOrder> = self
            .orders
            .iter()
            .map(|o| NewOrder {
                order_ref: o.order_ref.clone(),
                chain: "ethereum".into(),
                pay_to: o.pay_to.to_string(),
                asset: if o.native {
                    "native".into()
                } else {
                    SANDBOX_TOKEN.into()
                },
                amount_due: U256::from(o.due),
            })
            .collect();
        self.store().insert_orders(&rows).await.expect("insert");
    }

    /// Sends a transfer into the pending block; returns its index in `pays`.
    pub fn send(&mut self, to: &Address, native: bool, amount: u128, reverted: bool) -> usize {
        let token = Address::parse(SANDBOX_TOKEN).unwrap();
        let payer = Address::parse("0x00000000000000000000000000000000000000fe").unwrap();
        let value = EvmU256::from(amount);
        let (tx, log_index) = if reverted {
            (self.chain.add_reverted(&token, &payer, to, value), -1)
        } else if native {
            (self.chain.add_native_transfer(&payer, to, value), -1)
        } else {
            self.chain.add_token_transfer(&token, &payer, to, value)
        };
        self.pays.push(SimPay {
            tx: tx.as_str().to_string(),
            log_index,
            to: to.clone(),
            native,
            amount,
            reverted,
            block: 0,
            notified: false,
        });
        self.pays.len() - 1
    }

    /// Seals the pending block; records the block of the transfers in it.
    pub fn mine_block(&mut self) {
        let b = self.chain.mine_block();
        for p in self.pays.iter_mut().filter(|p| p.block == 0) {
            p.block = b;
        }
    }

    /// The merchant's handler: moves `order_ref` forward to `to`, only if it holds a payment
    /// and is behind (one conditional statement, like a careful handler). No audit row.
    #[allow(dead_code)]
    pub async fn merchant_write(store: &Store, order_ref: &str, to: State) {
        Self::try_merchant_write(store, order_ref, to)
            .await
            .expect("the merchant's write");
    }

    /// `merchant_write` that returns the database's error (while the connection is cut), and
    /// whether the conditional update changed the row (the guide's handler then fulfils).
    pub async fn try_merchant_write(
        store: &Store,
        order_ref: &str,
        to: State,
    ) -> Result<bool, sqlx::Error> {
        let sql = payrecon_testkit::inspect::respell(
            store,
            "UPDATE orders SET state = $1 WHERE order_ref = $2 AND tx_hash IS NOT NULL \
             AND (CASE state WHEN 'unpaid' THEN 0 WHEN 'pending' THEN 1 \
             WHEN 'confirmed' THEN 2 ELSE 3 END) < $3",
        );
        let rank = to as i32;
        let res = payrecon_testkit::on_pool!(store, p => sqlx::query(&sql)
                .bind(to.as_str())
                .bind(order_ref)
                .bind(rank)
                .execute(p)
                .await
                .map(|r| r.rows_affected() == 1));
        res
    }

    /// Delivers the outbox: both instances' delivery loops at once (they claim in the
    /// database), each until nothing is due.
    pub async fn deliver_events(&self) {
        let flush = |app: &App| {
            let d = app.events.clone();
            async move {
                if let Some(d) = d {
                    d.flush(std::time::Duration::from_secs(5)).await;
                }
            }
        };
        let other = async {
            if let Some(o) = &self.other {
                flush(o).await;
            }
        };
        tokio::join!(flush(&self.app), other);
    }

    /// True when the fake Qvard lists `pays[i]`.
    pub fn qv_listed(&self, i: usize) -> bool {
        self.qv_listed.contains(&i)
    }

    /// True when `pays[i]` was delivered by an accepted webhook.
    pub fn delivered(&self, i: usize) -> bool {
        self.hooks
            .as_ref()
            .is_some_and(|h| h.delivered.contains(&i))
    }
}

/// `amount` base units as a decimal string with `decimals` places (trailing zeros trimmed).
pub fn decimal(amount: u128, decimals: u32) -> String {
    let scale = 10u128.pow(decimals);
    let (whole, frac) = (amount / scale, amount % scale);
    if frac == 0 {
        return whole.to_string();
    }
    let frac = format!("{frac:0width$}", width = decimals as usize);
    format!("{whole}.{}", frac.trim_end_matches('0'))
}
