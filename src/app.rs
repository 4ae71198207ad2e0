//! `App::build(config)`: the one way `serve`, `run`, `check`, the demo and the tests assemble
//! payrecon (store, chain clients, provider clients, metrics, engine).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::chain::ChainClient;
use crate::config::{Config, ProviderConfig};
use crate::engine::{Engine, Provider, ProviderEntry};
use crate::metrics::Metrics;
use crate::providers::chaingateway::ChaingatewayClient;
use crate::secret::{redact_url, Secret};
use crate::store::Store;

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct AppError(pub String);

pub struct App {
    pub config: Config,
    pub engine: Arc<Engine>,
}

impl App {
    /// Connects the database (and migrates it when `database.migrate`), builds every client.
    pub async fn build(config: Config) -> Result<App, AppError> {
        let secrets: Vec<Secret> = config.secrets().into_iter().cloned().collect();
        let scrub = |e: &dyn std::fmt::Display| {
            let refs: Vec<&Secret> = secrets.iter().collect();
            crate::secret::redact(&e.to_string(), &refs)
        };
        let url = config.database.url.expose();
        let store = Store::connect(url, config.database.max_connections)
            .await
            .map_err(|e| AppError(format!("database {}: {}", redact_url(url), scrub(&e))))?;
        if config.database.migrate {
            store
                .migrate()
                .await
                .map_err(|e| AppError(format!("migrating the database: {}", scrub(&e))))?;
        }
        Self::with_store(config, store)
    }

    /// Builds the clients around an existing store (no migration).
    pub fn with_store(config: Config, store: Store) -> Result<App, AppError> {
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
            let client = ChainClient::new(c.clone()).map_err(|e| AppError(e.to_string()))?;
            chains.insert(c.name.clone(), Arc::new(client));
        }
        let mut providers = Vec::new();
        for p in &config.providers {
            let provider = match p {
                ProviderConfig::Chaingateway(s) => {
                    let observer = metrics.request_observer(&s.name);
                    Provider::Chaingateway(
                        ChaingatewayClient::new(s.clone(), observer)
                            .map_err(|e| AppError(e.to_string()))?,
                    )
                }
            };
            providers.push(ProviderEntry {
                provider: Arc::new(provider),
                chains: p.chains().to_vec(),
            });
        }
        let engine = Engine {
            store,
            chains,
            providers,
            metrics,
            settings: config.reconcile.clone(),
            secrets,
        };
        Ok(App {
            config,
            engine: Arc::new(engine),
        })
    }

    /// `payrecon check`: database, each provider on each of its chains, each chain RPC.
    /// Returns one line per item and whether all passed.
    pub async fn check(&self) -> (Vec<String>, bool) {
        let e = &self.engine;
        let mut lines = Vec::new();
        let mut ok = true;
        let mut line = |good: bool, what: String| {
            ok &= good;
            lines.push(format!("{} {what}", if good { "ok    " } else { "FAILED" }));
        };
        match e.store.ping().await {
            Ok(()) => line(true, format!("database ({})", e.store.backend_name())),
            Err(err) => line(false, format!("database: {}", e.redact(&err.to_string()))),
        }
        for (name, c) in &e.chains {
            match (c.chain_id().await, c.head().await) {
                (Ok(id), Ok(h)) => line(
                    true,
                    format!(
                        "chain {name}: chain id {id}, head {}, final {}",
                        h.number, h.final_block
                    ),
                ),
                (Err(err), _) | (_, Err(err)) => line(false, e.redact(&err.to_string())),
            }
        }
        for p in &e.providers {
            for chain in &p.chains {
                let r = match &*p.provider {
                    Provider::Chaingateway(c) => c.block_number(chain).await,
                };
                match r {
                    Ok(n) => line(
                        true,
                        format!("provider {} on {chain}: block {n}", p.provider.name()),
                    ),
                    Err(err) => line(false, e.redact(&err.to_string())),
                }
            }
        }
        (lines, ok)
    }
}
