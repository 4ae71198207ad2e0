//! `payrecon migrate`: creates or upgrades the schema and says which it did.

use super::Exit;

use super::{CliError, Outcome};
use crate::app::{db, Access};
use crate::config::Config;

/// Runs `payrecon migrate` (whatever `database.migrate` says: this is the command that does).
pub async fn command(config: &Config) -> Outcome {
    let store = db::open(config, Access::Schema).await?;
    let done = migrate(&store).await;
    store.close().await;
    let (before, after) = done?;
    match (before, after - before) {
        (0, n) => eprintln!("payrecon: schema created ({n} migrations applied)"),
        (_, 0) => eprintln!("payrecon: schema is up to date ({after} migrations)"),
        (_, n) => eprintln!("payrecon: schema upgraded ({n} of {after} migrations applied now)"),
    }
    Ok(Exit::Done)
}

/// The number of migrations applied before and after.
async fn migrate(store: &crate::store::Store) -> Result<(i64, i64), CliError> {
    let before = store.applied_migrations().await?;
    store
        .migrate()
        .await
        .map_err(|e| CliError::failed(format!("migrating the database: {e}")))?;
    let after = store.applied_migrations().await.unwrap_or(before);
    Ok((before, after))
}
