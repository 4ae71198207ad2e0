//! The demo's Solana chain (docs/configuration.md, "Solana"): a sandbox Solana node, and order
//! A-1014 for 12.5 USDC with a Solana Pay reference, paid on chain by a transfer carrying it
//! that no provider reports: the deposit scan finds it by the reference and applies it under
//! `chain`.

use payrecon_sandbox::solana::{base58, SandboxSolana};

use super::err;
use crate::app::AppError;
use crate::domain::{expected_order, Catalog, ChainKind, OrderInput, SolanaKey};
use crate::store::{Retries, Store};

/// USDC's mint on Solana mainnet (the sandbox holds it as any other key).
pub(super) const USDC: &str = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";

fn key(n: u8) -> String {
    SolanaKey::from_bytes([n; 32]).to_string()
}

/// The sandbox node and the configuration tables of its chain and of USDC on it.
pub(super) async fn start() -> Result<(SandboxSolana, String), AppError> {
    let node = SandboxSolana::start().await.map_err(err)?;
    let toml = format!(
        "[chains.solana]\nkind = \"solana\"\nrpc_url = \"{}\"\ntimeout = \"5s\"\n\
         max_retries = 2\n\n[assets.\"solana:{USDC}\"]\nsymbol = \"USDC\"\ndecimals = 6\n",
        node.url
    );
    Ok((node, toml))
}

/// Registers A-1014 (as the API would: with its reference) and pays it on the node: the
/// shop's wallet takes many orders, the reference says which one this payment is for.
pub(super) async fn order_and_pay(store: &Store, node: &SandboxSolana) -> Result<(), AppError> {
    let (shop, customer, reference) = (key(0x51), key(0x52), key(0x53));
    let catalog = Catalog::new([("solana".to_string(), ChainKind::Solana)])
        .with_asset_key(&format!("solana:{USDC}"));
    let input = OrderInput {
        order_ref: "A-1014",
        chain: "solana",
        pay_to: &shop,
        asset: USDC,
        amount_due: "12500000",
        expires_at: None,
        reference: Some(&reference),
    };
    let order = expected_order(&input, &catalog)
        .map_err(|e| err(format!("the demo's Solana order: {e:?}")))?;
    store
        .register_orders(&[order], &Retries::default())
        .await
        .map_err(err)?;
    let sig = base58(&[0x14; 64]);
    node.pay_token(
        &sig,
        990,
        &customer,
        &shop,
        USDC,
        6,
        12_500_000,
        Some(&reference),
    );
    Ok(())
}
