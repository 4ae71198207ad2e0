//! `payrecon balances`: the last balance check of each deposit address (read-only), and
//! `payrecon balances check`, which checks now (docs/reference.md, `balances`). Exit codes: 0
//! done, 1 a chain could not be checked or the database could not be read, 2 usage (an unknown
//! `--chain`).

use super::Exit;
use std::fmt::Write as _;

use super::{BalancesAction, BalancesArgs, CliError, Format, Outcome};
use crate::app::{db, Access};
use crate::config::Config;
use crate::engine::Trigger;
use crate::store::BalanceRow;

/// Runs `payrecon balances` and `payrecon balances check`.
pub async fn command(config: Config, args: BalancesArgs) -> Outcome {
    match args.action {
        None => list(&config, args.chain.as_deref(), args.mismatched, args.format).await,
        Some(BalancesAction::Check { chain, format }) => check(config, chain, format).await,
    }
}

fn known_chain(config: &Config, chain: Option<&str>) -> Result<(), CliError> {
    match chain {
        Some(c) if !config.chains.iter().any(|s| s.name == c) => Err(CliError::usage(format!(
            "--chain {c:?} is not a configured chain"
        ))),
        _ => Ok(()),
    }
}

async fn list(config: &Config, chain: Option<&str>, mismatched: bool, format: Format) -> Outcome {
    known_chain(config, chain)?;
    let store = db::open(config, Access::Read).await?;
    let rows = store
        .balances(chain, mismatched)
        .await
        .map_err(CliError::failed)?;
    let out = match format {
        Format::Json => {
            let items: Vec<serde_json::Value> = rows.iter().map(json_of).collect();
            format!("{}\n", serde_json::Value::Array(items))
        }
        Format::Text => table(&rows, &crate::assets::Assets::of(config)),
    };
    print!("{out}");
    Ok(Exit::Done)
}

async fn check(config: Config, chain: Option<String>, format: Format) -> Outcome {
    known_chain(&config, chain.as_deref())?;
    let lookback = config.balances.lookback;
    let treasury = config.balances.treasury.clone();
    let app = crate::app::App::start(config).await?;
    let report = app
        .engine
        .check_balances(lookback, &treasury, chain.as_deref(), Trigger::Cli)
        .await
        .map_err(CliError::failed)?;
    match format {
        Format::Json => report
            .write_json(std::io::stdout().lock())
            .map_err(|e| CliError::failed(format!("could not write the report: {e}")))?,
        Format::Text => print!(
            "{}",
            report.to_text_with(&crate::assets::Assets::of(&app.config))
        ),
    }
    Ok(Exit::of(!report.any_failed()))
}

/// One address's check as JSON (amounts in base units, as text: they exceed 2^53).
fn json_of(r: &BalanceRow) -> serde_json::Value {
    serde_json::json!({
        "chain": r.chain,
        "address": r.address,
        "asset": r.asset,
        "opening_block": r.opening_block,
        "opening_balance": r.opening_balance.to_string(),
        "checked_block": r.checked_block,
        "balance": r.balance.to_string(),
        "expected": r.expected.to_string(),
        "difference": r.difference.to_string(),
        "checked_at": r.checked_at.to_string(),
    })
}

/// The checks as a table, amounts in tokens where the asset is configured.
fn table(rows: &[BalanceRow], assets: &crate::assets::Assets) -> String {
    let mut s = String::new();
    if rows.is_empty() {
        let _ = writeln!(
            s,
            "no balance checks yet (payrecon balances check runs one)"
        );
        return s;
    }
    for r in rows {
        // A signed amount in tokens where the asset's decimals are known.
        let amount = |a: &str| assets.signed(&r.chain, &r.asset, a);
        let _ = writeln!(
            s,
            "{} {} {}: {} at block {} (expected {}, difference {}), checked {}",
            r.chain,
            r.address,
            r.asset,
            amount(&r.balance.to_string()),
            r.checked_block,
            amount(&r.expected.to_string()),
            amount(&r.difference.to_string()),
            r.checked_at
        );
    }
    s
}
