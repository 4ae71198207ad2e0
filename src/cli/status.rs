//! `payrecon status`: the operator's read-only view (`crate::status` reads it).

use super::Exit;

use super::{CliError, Format, Outcome};
use crate::config::Config;

/// Runs `payrecon status`.
pub async fn command(config: &Config, format: Format) -> Outcome {
    let status = crate::status::collect(config)
        .await
        .map_err(CliError::failed)?;
    match format {
        Format::Json => println!("{}", status.to_json()),
        Format::Text => print!(
            "{}",
            status.to_text_with(&crate::assets::Assets::of(config))
        ),
    }
    Ok(Exit::Done)
}
