//! The configuration's tables as serde reads them: defaults and unknown-key refusal.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use super::duration;
use crate::secret::Secret;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DatabaseConfig {
    pub url: Secret,
    /// The URL from a file (a systemd credential): it holds the password. Wins over `url`.
    #[serde(skip_serializing)]
    pub url_file: Option<PathBuf>,
    pub max_connections: u32,
    pub migrate: bool,
}

impl Default for DatabaseConfig {
    fn default() -> Self {
        DatabaseConfig {
            url: Secret::new("sqlite://payrecon.db"),
            url_file: None,
            max_connections: 8,
            migrate: true,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ScheduleConfig {
    pub cron: String,
    #[serde(with = "duration::serde_duration")]
    pub lookback: Duration,
}

impl Default for ScheduleConfig {
    fn default() -> Self {
        ScheduleConfig {
            cron: "0 */5 * * * *".into(),
            lookback: Duration::from_secs(48 * 3600),
        }
    }
}

/// `[balances]` (docs/reference.md §2): when `serve` checks the deposit addresses' balances,
/// and which.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BalancesConfig {
    /// Six fields, UTC; `""` turns the scheduled check off (`payrecon balances check` still
    /// runs one).
    pub cron: String,
    /// The deposit addresses of orders created within this window are checked.
    #[serde(with = "duration::serde_duration")]
    pub lookback: Duration,
    /// Each chain's treasury addresses (`chains.<name>.treasury`, in the ledger's spelling):
    /// an outflow to one is a sweep. Filled from the chains' sections.
    #[serde(skip)]
    pub treasury: BTreeMap<String, Vec<String>>,
}

impl Default for BalancesConfig {
    fn default() -> Self {
        BalancesConfig {
            cron: "0 30 3 * * *".into(),
            lookback: Duration::from_secs(30 * 24 * 3600),
            treasury: BTreeMap::new(),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HttpConfig {
    pub listen: String,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            listen: "127.0.0.1:9187".into(),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReconcileConfig {
    pub apply: bool,
    pub resend: bool,
    #[serde(with = "duration::serde_duration")]
    pub resend_cooldown: Duration,
    /// Records per pipeline batch (one ledger lookup, one receipt batch, one apply transaction).
    pub batch_size: usize,
    /// How long SIGTERM waits for the current run to finish before exiting.
    #[serde(with = "duration::serde_duration")]
    pub shutdown_grace: Duration,
    /// How long a `serve` instance's lease on a provider lasts without renewal (renewed every
    /// third of it while it runs); another instance takes over once it has expired.
    #[serde(with = "duration::serde_duration")]
    pub lease_ttl: Duration,
    /// How far short an order may be paid and still count as paid (docs/configuration.md,
    /// "Amounts"): base units (`"10000"`) or a share of the amount due (`"0.5%"`, at most
    /// `"10%"`). Validated into `Config::amounts`; `[assets."…"] underpaid_tolerance` overrides
    /// it per asset.
    pub underpaid_tolerance: String,
    /// A payment in a block after its order's `expires_at`: `hold` (credited, the order does
    /// not move, a person decides) or `accept` (it counts like any payment). See
    /// docs/configuration.md, "Amounts".
    pub late_payments: String,
}

impl Default for ReconcileConfig {
    fn default() -> Self {
        ReconcileConfig {
            apply: true,
            resend: true,
            resend_cooldown: Duration::from_secs(3600),
            batch_size: 500,
            shutdown_grace: Duration::from_secs(30),
            lease_ttl: Duration::from_secs(30),
            underpaid_tolerance: "0".into(),
            late_payments: "hold".into(),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawChain {
    /// `evm` (default) | `tron` (docs/configuration.md, "Tron").
    pub(super) kind: Option<String>,
    /// Tron: java-tron's HTTP API (`/wallet/…`, `/walletsolidity/…`).
    pub(super) api_url: Option<Secret>,
    /// Tron: sent as `TRON-PRO-API-KEY` (TronGrid), or read from `api_key_file`.
    pub(super) api_key: Option<Secret>,
    pub(super) api_key_file: Option<std::path::PathBuf>,
    /// Bitcoin: the Esplora REST API (docs/configuration.md, "Bitcoin").
    pub(super) esplora_url: Option<Secret>,
    /// Bitcoin: `mainnet` (default) | `testnet` | `signet` | `regtest`.
    pub(super) network: Option<String>,
    pub(super) rpc_url: Option<Secret>,
    pub(super) rpc_urls: Option<Vec<Secret>>,
    pub(super) chain_id: Option<u64>,
    pub(super) max_requests_per_second: Option<u32>,
    /// Default 12; not on Solana (its commitment decides).
    pub(super) confirmations: Option<u64>,
    /// Default `finalized` (`depth` on Bitcoin, its only mode).
    pub(super) finality: Option<String>,
    /// Default 64; not on Solana.
    pub(super) final_depth: Option<u64>,
    #[serde(default = "default_rpc_batch")]
    pub(super) rpc_batch_size: usize,
    #[serde(default = "default_timeout", with = "duration::serde_duration")]
    pub(super) timeout: Duration,
    #[serde(default = "default_retries")]
    pub(super) max_retries: u32,
    /// Default 1h; 0s on Solana (a finalized transaction cannot roll back).
    #[serde(default, with = "duration::serde_opt_duration")]
    pub(super) recheck_final: Option<Duration>,
    #[serde(default = "default_true")]
    pub(super) scan_unpaid: bool,
    #[serde(default = "default_log_range")]
    pub(super) log_range: u64,
    /// Where sweeps go (docs/operations.md, "Balances"): an outflow from a deposit address to
    /// one is expected.
    #[serde(default)]
    pub(super) treasury: Vec<String>,
}

fn default_true() -> bool {
    true
}
fn default_log_range() -> u64 {
    2000
}

/// `confirmations` when the table does not say.
pub(super) const DEFAULT_CONFIRMATIONS: u64 = 12;
/// `final_depth` when the table does not say.
pub(super) const DEFAULT_FINAL_DEPTH: u64 = 64;
fn default_rpc_batch() -> usize {
    50
}
/// `recheck_final` when the table does not say (on Solana: zero).
pub(super) const DEFAULT_RECHECK_FINAL: Duration = Duration::from_secs(3600);
fn default_timeout() -> Duration {
    Duration::from_secs(10)
}
fn default_retries() -> u32 {
    4
}
fn default_concurrency() -> usize {
    4
}
fn default_network() -> String {
    "mainnet".into()
}
fn default_backoff() -> Duration {
    Duration::from_millis(200)
}
fn default_list_margin() -> Duration {
    Duration::from_secs(600)
}
fn default_full_scan_every() -> Duration {
    Duration::from_secs(24 * 3600)
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AssetConfig {
    pub symbol: String,
    pub decimals: u8,
    /// This asset's `underpaid_tolerance` (else `[reconcile]`'s).
    pub underpaid_tolerance: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawProvider {
    #[allow(dead_code)] // checked by `validate` before the table is read
    pub(super) kind: String,
    pub(super) base_url: Option<String>,
    pub(super) api_key: Option<Secret>,
    pub(super) api_key_file: Option<PathBuf>,
    #[serde(default = "default_network")]
    pub(super) network: String,
    #[serde(default)]
    pub(super) chains: Vec<String>,
    #[serde(default = "default_timeout", with = "duration::serde_duration")]
    pub(super) timeout: Duration,
    #[serde(default = "default_concurrency")]
    pub(super) max_concurrency: usize,
    #[serde(default = "default_retries")]
    pub(super) max_retries: u32,
    #[serde(default = "default_backoff", with = "duration::serde_duration")]
    pub(super) backoff: Duration,
    /// Chaingateway never retries a notification: 0 (resend at once).
    #[serde(default, with = "duration::serde_duration")]
    pub(super) retry_window: Duration,
    /// The boundary search reads from `since - list_margin` (docs/configuration.md,
    /// "Long notification lists").
    #[serde(default = "default_list_margin", with = "duration::serde_duration")]
    pub(super) list_margin: Duration,
    /// One run per period reads every list whole (`0s`: never).
    #[serde(default = "default_full_scan_every", with = "duration::serde_duration")]
    pub(super) full_scan_every: Duration,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawConfig {
    #[serde(default)]
    pub(super) database: DatabaseConfig,
    #[serde(default)]
    pub(super) schedule: ScheduleConfig,
    #[serde(default)]
    pub(super) balances: BalancesConfig,
    #[serde(default)]
    pub(super) http: HttpConfig,
    #[serde(default)]
    pub(super) reconcile: ReconcileConfig,
    #[serde(default)]
    pub(super) chains: BTreeMap<String, RawChain>,
    #[serde(default)]
    pub(super) assets: BTreeMap<String, AssetConfig>,
    /// Read per kind in `validate` (each kind has its own keys).
    #[serde(default)]
    pub(super) providers: BTreeMap<String, toml::Table>,
    #[serde(default)]
    pub(super) events: super::events::RawEvents,
    #[serde(default)]
    pub(super) api: super::api::RawApi,
    #[serde(default)]
    pub(super) console: super::console::RawConsole,
}
