//! `payrecon serve`: the daemon (`crate::daemon`) until SIGTERM or SIGINT.

use super::Exit;

use super::{CliError, Outcome};
use crate::config::Config;

/// Runs `payrecon serve`.
pub async fn command(config: Config) -> Outcome {
    // Before anything else, so that no signal finds the default handlers.
    let shutdown = crate::daemon::shutdown_signal();
    // A second serve on a SQLite file is refused before it migrates or reads a chain (serve
    // takes the lock for good once started).
    crate::daemon::exclusive_sqlite(config.database.url.expose()).map_err(CliError::failed)?;
    let app = crate::app::App::start(config).await?;
    crate::daemon::serve(app, shutdown, |_| {}).await?;
    Ok(Exit::Done)
}
