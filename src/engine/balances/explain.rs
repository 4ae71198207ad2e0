//! What every chain's balance check shares: the items to check, and how an item's flows and
//! its balance at the final block become findings, transfers to settle and the row to save.

use std::collections::HashMap;

use super::ChainCheck;
use crate::chain::ChainError;
use crate::domain::{
    classify, settle, Address, Asset, ChainHead, ChainTransfer, Checkpoint, Delta, Flow, FlowKind,
    GapKind, U256,
};
use crate::store::{BalanceRow, FindingRow};

/// Why a chain's check could not be done.
#[derive(Debug, thiserror::Error)]
pub(super) enum CheckError {
    #[error("{0}")]
    Chain(#[from] ChainError),
    #[error("deposit address {0:?} ({1}) is not an address or asset of this chain")]
    Ledger(String, String),
    #[error("the amounts of {0} ({1}) do not fit 256 bits")]
    Overflow(String, String),
}

/// One address and asset to check, from where its last check ended.
pub(super) struct Item {
    pub address: Address,
    pub asset: Asset,
    /// The block the check reads from (exclusive), and the balance there.
    pub lo: u64,
    pub lo_balance: U256,
    pub expected: Delta,
    /// The opening block and balance of an address checked for the first time.
    pub opening: Option<(u64, U256)>,
    pub previous: Option<BalanceRow>,
}

impl Item {
    /// An address checked before: read from where its last check (`p`) ended.
    pub fn resumed(address: Address, asset: Asset, p: BalanceRow) -> Item {
        Item {
            address,
            asset,
            lo: p.checked_block,
            lo_balance: p.balance,
            expected: p.expected,
            opening: None,
            previous: Some(p),
        }
    }

    /// An address checked for the first time, holding `balance` at `block`: its opening,
    /// what the ledger expects to start from.
    pub fn opened(address: Address, asset: Asset, block: u64, balance: U256) -> Item {
        Item {
            address,
            asset,
            lo: block,
            lo_balance: balance,
            expected: Delta::positive(balance),
            opening: Some((block, balance)),
            previous: None,
        }
    }
}

/// Each item's verdict at the final block `f`: its flows sorted (inflows to settle, sweeps
/// recorded, outflows elsewhere flagged), what nothing explains flagged `balance_mismatch`, and
/// the row to save.
pub(super) fn conclude(
    chain: &str,
    head: &ChainHead,
    items: Vec<Item>,
    at_final: Vec<U256>,
    mut flows: HashMap<(String, String), Vec<Flow>>,
    treasury: &[String],
) -> Result<ChainCheck, CheckError> {
    let f = head.final_block;
    let mut out = ChainCheck::default();
    let now = jiff::Timestamp::now();
    for (item, balance) in items.into_iter().zip(at_final) {
        let key = (item.address.to_string(), item.asset.to_string());
        let mine = flows.remove(&key).unwrap_or_default();
        let (inflows, outflows) = explain(chain, head, &item, &mine, treasury, &mut out)?;
        let overflow = || CheckError::Overflow(item.address.to_string(), item.asset.to_string());
        let verdict = settle(
            Checkpoint {
                expected: item.expected,
            },
            inflows,
            outflows,
            balance,
        )
        .ok_or_else(overflow)?;
        if !verdict.difference.is_zero() {
            out.findings.push((
                Some(GapKind::BalanceMismatch),
                mismatch(
                    chain,
                    &item,
                    balance,
                    f,
                    verdict.expected,
                    verdict.difference,
                ),
            ));
        }
        let (opening_block, opening_balance) = match (&item.previous, item.opening) {
            (Some(p), _) => (p.opening_block, p.opening_balance),
            (None, Some(o)) => o,
            (None, None) => (item.lo, item.lo_balance),
        };
        out.checked += 1;
        out.rows.push(BalanceRow {
            chain: chain.to_string(),
            address: item.address.to_string(),
            asset: item.asset.to_string(),
            opening_block,
            opening_balance,
            checked_block: f,
            balance,
            expected: verdict.expected,
            difference: verdict.difference,
            checked_at: now,
        });
    }
    Ok(out)
}

/// Sorts an item's flows: inflows become transfers to settle, sweeps and outflows findings;
/// returns the sums in and out (fees included).
fn explain(
    chain: &str,
    head: &ChainHead,
    item: &Item,
    flows: &[Flow],
    treasury: &[String],
    out: &mut ChainCheck,
) -> Result<(U256, U256), CheckError> {
    let me = item.address.to_string();
    let overflow = || CheckError::Overflow(me.clone(), item.asset.to_string());
    let (mut inflows, mut outflows) = (U256::ZERO, U256::ZERO);
    for flow in flows {
        if flow.from == me {
            // Sent to itself, only the fee leaves.
            let amount = if flow.to == me {
                U256::ZERO
            } else {
                flow.amount
            };
            outflows = outflows
                .checked_add(flow.fee)
                .and_then(|o| o.checked_add(amount))
                .ok_or_else(overflow)?;
        }
        let kind = match classify(&me, &flow.from, &flow.to, treasury) {
            Some(k) => k,
            None => continue,
        };
        match kind {
            FlowKind::Inflow => {
                inflows = inflows.checked_add(flow.amount).ok_or_else(overflow)?;
                out.inflows.push(ChainTransfer {
                    key: flow.key.clone(),
                    to: item.address.clone(),
                    asset: flow.asset.clone(),
                    amount: flow.amount,
                    block: flow.block.clone(),
                    state: head.state_of(flow.block.number),
                    block_time: None,
                });
            }
            // A call that moves no money from the address (it only paid its fee).
            FlowKind::Outflow | FlowKind::Sweep if flow.amount.is_zero() => {}
            FlowKind::Sweep => out.findings.push((None, flow_row(chain, "sweep", flow))),
            FlowKind::Outflow => out.findings.push((
                Some(GapKind::UnexpectedOutflow),
                flow_row(chain, "unexpected_outflow", flow),
            )),
        }
    }
    Ok((inflows, outflows))
}

fn flow_row(chain: &str, kind: &str, flow: &Flow) -> FindingRow {
    FindingRow {
        provider: super::BALANCES.into(),
        kind: kind.into(),
        chain: chain.to_string(),
        tx_hash: Some(flow.key.tx_hash.to_string()),
        log_index: Some(flow.key.log_index),
        order_ref: None,
        local_state: None,
        observed_state: None,
        action: if kind == "sweep" { "recorded" } else { "none" }.into(),
        detail: format!(
            "sent {} from deposit address {} to {} in block {} (asset {})",
            flow.amount, flow.from, flow.to, flow.block.number, flow.asset
        ),
        amount: Some(flow.amount.to_string()),
        asset: Some(flow.asset.to_string()),
        address: Some(flow.from.clone()),
    }
}

fn mismatch(
    chain: &str,
    item: &Item,
    balance: U256,
    block: u64,
    expected: Delta,
    difference: Delta,
) -> FindingRow {
    FindingRow {
        provider: super::BALANCES.into(),
        kind: GapKind::BalanceMismatch.as_str().into(),
        chain: chain.to_string(),
        tx_hash: None,
        log_index: None,
        order_ref: None,
        local_state: None,
        observed_state: None,
        action: "none".into(),
        detail: format!(
            "deposit address {} holds {balance} at block {block}; the ledger and the \
             transfers read explain {expected}, leaving {difference} unexplained (asset {})",
            item.address, item.asset
        ),
        amount: Some(difference.abs.to_string()),
        asset: Some(item.asset.to_string()),
        address: Some(item.address.to_string()),
    }
}
