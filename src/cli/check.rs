//! `payrecon check`: the configuration, the database, every chain and every provider, a
//! line each; exit 1 when any failed.

use std::process::ExitCode;

use super::Outcome;
use crate::config::Config;

/// Runs `payrecon check`. An unreachable database is a FAILED line, and the chains and
/// providers are still checked.
pub async fn command(config: Config) -> Outcome {
    let (lines, ok) = crate::app::App::check_config(config).await?;
    for l in lines {
        println!("{l}");
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
