//! The demo's second act: the shop's orders dated before the chain's first block, and the
//! balance check after the run.

use super::{err, Payments};
use crate::app::{App, AppError};
use crate::engine::Trigger;
use crate::store::Store;

/// The shop created its orders three hours ago, before the chain's first block: each deposit
/// address's opening balance (before its oldest order) is at the genesis block.
pub(super) async fn age_orders(store: &Store, now: jiff::Timestamp) -> Result<(), AppError> {
    let created = now - jiff::SignedDuration::from_hours(3);
    store.backdate_orders(created).await.map_err(err)
}

/// `payrecon balances check --chain ethereum`: every deposit address against the chain at its
/// final block (the check does not read Solana chains yet).
/// It finds A-1013's payment in ETH (no provider reported it, and native coins emit no log
/// for a scan to read) and the drain of A-1005's address.
pub(super) async fn check_balances(
    app: &App,
    assets: &crate::assets::Assets,
    paid: &Payments,
) -> Result<(), AppError> {
    let b = &app.config.balances;
    let report = app
        .engine
        .check_balances(b.lookback, &b.treasury, Some("ethereum"), Trigger::Cli)
        .await
        .map_err(err)?;
    println!();
    println!(
        "payrecon balances check --chain ethereum: each deposit address against the chain at its final block \
         (A-1013 was paid in ETH, {}…, and no provider said so; {}… drained A-1005's address):",
        &paid.unreported.as_str()[..10],
        &paid.drain.as_str()[..10]
    );
    println!();
    print!("{}", report.to_text_with(assets));
    Ok(())
}
