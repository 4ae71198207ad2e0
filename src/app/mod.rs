//! `App::build(config)`: the one way `serve`, `run`, `check`, the demo and the tests assemble
//! payrecon (store, chain clients, provider clients, metrics, engine).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::chain::{ChainClient, ChainError, Finality, Preflight};
use crate::config::Config;
use crate::engine::{Engine, ProviderEntry};
use crate::metrics::Metrics;
use crate::providers::Provider;
use crate::secret::Secret;
use crate::store::Store;

pub mod db;
pub use db::Access;

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct AppError(pub String);

pub struct App {
    pub config: Config,
    pub engine: Arc<Engine>,
    /// `POST /webhooks/<name>` of each provider with a webhook secret.
    pub webhooks: std::collections::HashMap<String, crate::webhook::Endpoint>,
    /// The delivery loop of events to the merchant (`[events] url` set).
    pub events: Option<Arc<crate::events::Deliverer>>,
}

impl App {
    /// Connects the database (and migrates it when `database.migrate`), builds every client.
    pub async fn build(config: Config) -> Result<App, AppError> {
        let store = db::open(&config, Access::Write).await?;
        Self::with_store(config, store)
    }

    /// `run` and `serve`: connects the database, builds every client, runs the start-of-run
    /// check of every chain (`preflight`) and only then migrates. A chain whose node reports
    /// another chain id, whose URLs disagree, or which lacks the finality tag refuses the
    /// start: nothing has been written. A chain that is merely unreachable is logged and the
    /// start goes on; the run then reports that chain's providers and the sweep as failed
    /// (exit 1), and `serve` retries it at every scheduled run.
    pub async fn start(config: Config) -> Result<App, AppError> {
        Self::start_with(config, false).await
    }

    /// `start` for `run --dry-run`, which writes nothing: the database must exist (an SQLite
    /// file is never created) and is never migrated.
    pub async fn start_dry(config: Config) -> Result<App, AppError> {
        Self::start_with(config, true).await
    }

    async fn start_with(config: Config, dry: bool) -> Result<App, AppError> {
        let access = if dry { Access::Read } else { Access::Write };
        let store = db::connect(&config, access).await?;
        let app = Self::with_store(config, store)?;
        let mut refusals = Vec::new();
        for (name, r) in app.preflight().await {
            match r {
                Ok(p) => {
                    tracing::info!(chain = %name, chain_id = %p.chain_id.map_or_else(|| "none".to_string(), |c| c.to_string()), head = p.head.number,
                    final_block = p.head.final_block, "Chain checked.")
                }
                Err(e) if e.is_misconfiguration() => refusals.push(app.engine.redact(&e)),
                Err(e) => tracing::warn!(chain = %name, error = %app.engine.redact(&e),
                    "The chain is unreachable at start; its providers will be reported as failed."),
            }
        }
        if !refusals.is_empty() {
            return Err(AppError(refusals.join("; ")));
        }
        if !dry {
            db::migrate(&app.config, &app.engine.store).await?;
        }
        Ok(app)
    }

    /// The start-of-run check of every chain, concurrently, in name order: each URL's chain
    /// id against `chain_id`, the head, and the finality tag.
    pub async fn preflight(&self) -> Vec<(String, Result<Preflight, ChainError>)> {
        let checks = self
            .engine
            .chains
            .iter()
            .map(|(name, c)| async move { (name.clone(), c.preflight().await) });
        futures::future::join_all(checks).await
    }

    /// Builds the clients around an existing store (no migration).
    pub fn with_store(config: Config, store: Store) -> Result<App, AppError> {
        // The largest amount the ledger keeps (MariaDB/MySQL's DECIMAL(65,0)): a transfer over
        // it is no payment, and a sum of payments over it is not credited.
        let ledger_max = store.max_amount();
        let Clients {
            chains,
            providers,
            metrics,
            secrets,
        } = Clients::of(&config, ledger_max)?;
        let amounts = crate::domain::AmountPolicy {
            max_paid: ledger_max,
            ..config.amounts.clone()
        };
        let engine = Engine {
            store,
            chains,
            providers,
            metrics,
            settings: config.reconcile.clone(),
            amounts,
            secrets,
            instance: instance_name(),
            events_wake: config
                .events
                .as_ref()
                .map(|_| Arc::new(tokio::sync::Notify::new())),
        };
        let webhooks = config
            .providers
            .iter()
            .filter_map(|p| {
                let w = p.webhook.as_ref()?;
                let endpoint = crate::webhook::endpoint(p.name(), w, p.event_id_pointer());
                Some((p.name().to_string(), endpoint))
            })
            .collect();
        let events = match (&config.events, &engine.events_wake) {
            (Some(cfg), Some(wake)) => Some(Arc::new(
                crate::events::Deliverer::new(
                    cfg.clone(),
                    engine.store.clone(),
                    engine.metrics.clone(),
                    engine.instance.clone(),
                    wake.clone(),
                )
                .map_err(|e| AppError(e.to_string()))?,
            )),
            _ => None,
        };
        Ok(App {
            config,
            engine: Arc::new(engine),
            webhooks,
            events,
        })
    }

    /// `payrecon check`'s lines of the database, each chain RPC and each provider on each of
    /// its chains, from a configuration alone: the database is connected (never
    /// migrated) and, when it cannot be reached, reported as failed while the chains and
    /// providers are still checked.
    pub async fn check_config(config: Config) -> Result<(Vec<String>, bool), AppError> {
        // `check` only reads: it never creates a database. The clients need no store: none
        // of them credits anything here.
        let clients = Clients::of(&config, None)?;
        let reached = match db::connect(&config, Access::Read).await {
            Ok(store) => {
                let schema = schema_of(&store).await;
                store.close().await;
                schema
            }
            Err(e) => Err(e),
        };
        Ok(check_items(&clients, reached).await)
    }
}

/// The database's line of `check`: reachable, and its schema that of this binary (the
/// backend's name and the migrations applied), else why not.
async fn schema_of(store: &Store) -> Result<String, AppError> {
    let name = store.backend_name();
    store.ping().await.map_err(|e| AppError(e.to_string()))?;
    let applied = store
        .applied_migrations()
        .await
        .map_err(|e| AppError(e.to_string()))?;
    let shipped = store.shipped_migrations();
    let migrate = "run `payrecon migrate` (run and serve also do, with database.migrate on)";
    match applied {
        0 => Err(AppError(format!(
            "database ({name}): payrecon's tables are missing: {migrate}"
        ))),
        n if n < shipped => Err(AppError(format!(
            "database ({name}): the schema is at migration {n} of this binary's {shipped}: {migrate}"
        ))),
        n => Ok(format!("{name}, schema at migration {n}")),
    }
}

/// What a configuration builds besides the store: a client per chain and per provider, the
/// metrics they report to, and the secrets every text leaving payrecon is redacted of.
struct Clients {
    chains: BTreeMap<String, Arc<ChainClient>>,
    providers: Vec<ProviderEntry>,
    metrics: Arc<Metrics>,
    secrets: Vec<Secret>,
}

impl Clients {
    /// The clients of `config`; a chain client refuses transfers over `ledger_max`.
    fn of(config: &Config, ledger_max: Option<crate::domain::U256>) -> Result<Clients, AppError> {
        let secrets: Vec<Secret> = config.secrets().into_iter().cloned().collect();
        let chain_names: Vec<String> = config.chains.iter().map(|c| c.name.clone()).collect();
        let provider_chains: Vec<(String, Vec<String>)> = config
            .providers
            .iter()
            .map(|p| (p.name().to_string(), p.chains().to_vec()))
            .collect();
        let metrics = Arc::new(Metrics::new(&provider_chains, &chain_names));
        let mut chains = BTreeMap::new();
        for c in &config.chains {
            let settings = crate::chain::ChainSettings {
                max_amount: ledger_max,
                ..c.clone()
            };
            let client = ChainClient::new(settings).map_err(|e| AppError(e.to_string()))?;
            chains.insert(c.name.clone(), Arc::new(client));
        }
        let mut providers = Vec::new();
        for p in &config.providers {
            let observer = metrics.request_observer(p.name());
            let provider = Provider::new(&p.kind, observer).map_err(|e| AppError(e.to_string()))?;
            providers.push(ProviderEntry {
                provider: Arc::new(provider),
                chains: p.chains().to_vec(),
                retry_window: p.retry_window,
            });
        }
        Ok(Clients {
            chains,
            providers,
            metrics,
            secrets,
        })
    }

    fn redact(&self, text: impl std::fmt::Display) -> String {
        crate::secret::redact_all(&text.to_string(), &self.secrets)
    }
}

/// A lease holder name unique to this process: host, pid and a random suffix.
fn instance_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "host".into());
    let suffix: u32 = rand::random();
    format!("{host}:{}:{suffix:08x}", std::process::id())
}

async fn check_items(e: &Clients, db: Result<String, AppError>) -> (Vec<String>, bool) {
    let mut lines = Vec::new();
    let mut ok = true;
    let mut line = |good: bool, what: String| {
        ok &= good;
        lines.push(format!("{} {what}", if good { "ok    " } else { "FAILED" }));
    };
    match db {
        Ok(what) => line(true, format!("database ({what})")),
        // The error text starts with "database: ".
        Err(err) => line(false, e.redact(&err)),
    }
    let checks = e
        .chains
        .iter()
        .map(|(name, c)| async move { (name.clone(), c.settings().finality, c.preflight().await) });
    for (name, finality, r) in futures::future::join_all(checks).await {
        match r {
            Ok(p) => {
                let mode = match finality {
                    Finality::Finalized => "\"finalized\" tag",
                    Finality::Safe => "\"safe\" tag",
                    Finality::Depth => "depth",
                };
                // Bitcoin has no chain id.
                let id = p
                    .chain_id
                    .map(|n| format!("chain id {n}, "))
                    .unwrap_or_default();
                line(
                    true,
                    format!(
                        "chain {name}: {id}head {}, final {} ({mode})",
                        p.head.number, p.head.final_block
                    ),
                );
                for u in p.unreachable {
                    line(false, format!("chain {name}: {}", e.redact(&u)));
                }
            }
            // The error names the chain ("chain ethereum: ...").
            Err(err) => line(false, e.redact(&err)),
        }
    }
    for p in &e.providers {
        for probe in p.provider.probe(&p.chains).await {
            match probe {
                Ok(text) => line(true, text),
                Err((what, err)) => line(false, format!("{what}: {}", e.redact(&err))),
            }
        }
    }
    (lines, ok)
}
