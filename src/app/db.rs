//! The one way every command and the daemon open the database: which connection (read-only
//! or not), whether a missing SQLite file may be created, the pool's size and whether the
//! schema is migrated are decided here, by the command's `Access`, and nowhere else.

use crate::config::Config;
use crate::store::Store;

use super::AppError;

/// What a command does with the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Reads only (`status`, `events`, `exceptions` and `exceptions show`, `export`, `check`,
    /// `run --dry-run`): the database must exist (an SQLite file is never created), every
    /// statement runs in a read-only session, and the schema is never migrated.
    Read,
    /// Reads and writes (`orders`, the decisions of `exceptions`, `events replay`, `run`,
    /// `serve`): an SQLite file is created when missing; the schema is migrated first when
    /// `database.migrate` is on (`migrate` below: `run` and `serve` migrate after their
    /// chains' start-of-run check, the others at once).
    Write,
    /// `payrecon migrate`: created when missing, left for the command to migrate and count.
    Schema,
}

/// Opens the configured database for `access`, with `database.max_connections` connections
/// at most (a read-only pool at most four). An error names the database by its redacted URL
/// and never carries a secret of the configuration.
pub async fn open(config: &Config, access: Access) -> Result<Store, AppError> {
    let store = connect(config, access).await?;
    if access == Access::Write {
        if let Err(e) = migrate(config, &store).await {
            store.close().await;
            return Err(e);
        }
    }
    Ok(store)
}

/// `open` without the migration `Access::Write` implies: for `run` and `serve`, which check
/// their chains first and then call `migrate`.
pub async fn connect(config: &Config, access: Access) -> Result<Store, AppError> {
    let url = config.database.url.expose();
    let max = config.database.max_connections;
    let store = match access {
        Access::Read => Store::connect_read_only(url, max).await,
        Access::Write | Access::Schema => Store::connect(url, max).await,
    };
    store.map_err(|e| AppError(scrub(config, &e)))
}

/// Brings the schema up to date when `database.migrate` is on (the default); with it off the
/// schema is the operator's (docs/operations.md, the two database users).
pub async fn migrate(config: &Config, store: &Store) -> Result<(), AppError> {
    if !config.database.migrate {
        return Ok(());
    }
    store
        .migrate()
        .await
        .map_err(|e| AppError(format!("migrating the database: {}", scrub(config, &e))))
}

/// Every secret of `config` scrubbed from `e`.
pub(crate) fn scrub(config: &Config, e: &dyn std::fmt::Display) -> String {
    crate::secret::redact(&e.to_string(), &config.secrets())
}
