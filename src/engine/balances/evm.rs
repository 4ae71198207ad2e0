//! One EVM chain's balance check: balances at the final block (and at the opening block of
//! new addresses) in batches, token `Transfer` logs in and out since each address's last
//! check, and for the native coin the blocks where a balance changed and their transactions.

use std::collections::{BTreeMap, HashMap};

use super::ChainCheck;
use crate::chain::{ChainError, EvmClient};
use crate::domain::{
    classify, settle, Address, Asset, ChainHead, ChainTransfer, Checkpoint, Delta, Flow, FlowKind,
    GapKind, U256,
};
use crate::store::{BalanceRow, BalanceScope, FindingRow};

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
struct Item {
    address: Address,
    asset: Asset,
    /// The block the check reads from (exclusive), and the balance there.
    lo: u64,
    lo_balance: U256,
    expected: Delta,
    /// The opening block and balance of an address checked for the first time.
    opening: Option<(u64, U256)>,
    previous: Option<BalanceRow>,
}

/// Checks `scope` (one chain's deposit addresses) against `previous` checks.
pub(super) async fn check(
    evm: &EvmClient,
    chain: &str,
    head: &ChainHead,
    scope: &[BalanceScope],
    previous: &HashMap<(String, String, String), BalanceRow>,
    treasury: &[String],
) -> Result<ChainCheck, CheckError> {
    let f = head.final_block;
    let items = items(evm, chain, head, scope, previous).await?;
    let mut out = ChainCheck::default();
    if items.is_empty() {
        return Ok(out);
    }
    let holdings: Vec<(Address, Asset)> = items
        .iter()
        .map(|i| (i.address.clone(), i.asset.clone()))
        .collect();
    let at_final = evm.balances_at(f, &holdings).await?;
    let mut flows = token_flows(evm, &items, f).await?;
    native_flows(evm, &items, &at_final, f, &mut flows).await?;
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

/// The addresses to check and where each starts: after its last check, or at the first
/// block of its oldest order (its opening balance read there). An address whose last check
/// reached the final block already, or whose oldest order is newer than it, waits.
async fn items(
    evm: &EvmClient,
    chain: &str,
    head: &ChainHead,
    scope: &[BalanceScope],
    previous: &HashMap<(String, String, String), BalanceRow>,
) -> Result<Vec<Item>, CheckError> {
    let f = head.final_block;
    let mut out = Vec::new();
    let mut starts: BTreeMap<i64, u64> = BTreeMap::new();
    let mut new_at: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    for s in scope {
        let bad = || CheckError::Ledger(s.address.clone(), s.asset.clone());
        let address = Address::parse(&s.address).map_err(|_| bad())?;
        let asset = Asset::parse(&s.asset).map_err(|_| bad())?;
        let prev = previous.get(&(chain.to_string(), s.address.clone(), s.asset.clone()));
        match prev {
            Some(p) if p.checked_block >= f => continue,
            Some(p) => out.push(Item {
                address,
                asset,
                lo: p.checked_block,
                lo_balance: p.balance,
                expected: p.expected,
                opening: None,
                previous: Some(p.clone()),
            }),
            None => {
                let second = s.oldest_order.as_second();
                let start = match starts.get(&second) {
                    Some(b) => *b,
                    None => {
                        let b = evm.first_block_since(s.oldest_order, head.number).await?;
                        starts.insert(second, b);
                        b
                    }
                };
                // The opening is the balance before the first block of the oldest order.
                let opening = start.saturating_sub(1);
                if opening >= f {
                    continue;
                }
                new_at.entry(opening).or_default().push(out.len());
                out.push(Item {
                    address,
                    asset,
                    lo: opening,
                    lo_balance: U256::ZERO,
                    expected: Delta::default(),
                    opening: Some((opening, U256::ZERO)),
                    previous: None,
                });
            }
        }
    }
    for (block, at) in new_at {
        let holdings: Vec<(Address, Asset)> = at
            .iter()
            .map(|i| (out[*i].address.clone(), out[*i].asset.clone()))
            .collect();
        for (i, b) in at.into_iter().zip(evm.balances_at(block, &holdings).await?) {
            out[i].lo_balance = b;
            out[i].expected = Delta::positive(b);
            out[i].opening = Some((block, b));
        }
    }
    Ok(out)
}

/// The token transfers in and out of the items' addresses since each item's start, by
/// `(address, asset)`: one log read per start block shared by its items.
async fn token_flows(
    evm: &EvmClient,
    items: &[Item],
    f: u64,
) -> Result<HashMap<(String, String), Vec<Flow>>, CheckError> {
    let mut by_start: BTreeMap<u64, (Vec<Address>, Vec<Address>)> = BTreeMap::new();
    for i in items {
        if let Asset::Token(t) = &i.asset {
            let (tokens, addresses) = by_start.entry(i.lo).or_default();
            if !tokens.contains(t) {
                tokens.push(t.clone());
            }
            if !addresses.contains(&i.address) {
                addresses.push(i.address.clone());
            }
        }
    }
    let wanted: std::collections::HashSet<(String, String, u64)> = items
        .iter()
        .map(|i| (i.address.to_string(), i.asset.to_string(), i.lo))
        .collect();
    let mut out: HashMap<(String, String), Vec<Flow>> = HashMap::new();
    for (lo, (tokens, addresses)) in by_start {
        for flow in evm.token_flows(&tokens, &addresses, lo + 1, f).await? {
            for party in [&flow.from, &flow.to] {
                let key = (party.clone(), flow.asset.to_string());
                if wanted.contains(&(key.0.clone(), key.1.clone(), lo)) {
                    let list = out.entry(key).or_default();
                    if !list.iter().any(|x| x.key == flow.key) {
                        list.push(flow.clone());
                    }
                }
            }
        }
    }
    Ok(out)
}

/// The native transfers of each native item whose balance changed since its start: the
/// blocks where it changed (bisection), then their transactions.
async fn native_flows(
    evm: &EvmClient,
    items: &[Item],
    at_final: &[U256],
    f: u64,
    flows: &mut HashMap<(String, String), Vec<Flow>>,
) -> Result<(), CheckError> {
    for (item, now) in items.iter().zip(at_final) {
        if item.asset != Asset::Native || item.lo_balance == *now {
            continue;
        }
        let changes = evm
            .native_changes(&item.address, (item.lo, item.lo_balance), (f, *now))
            .await?;
        let key = (item.address.to_string(), Asset::Native.to_string());
        for (block, _, _) in changes {
            let found = evm.native_flows(&item.address, block).await?;
            flows.entry(key.clone()).or_default().extend(found);
        }
    }
    Ok(())
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
            outflows = outflows
                .checked_add(flow.fee)
                .and_then(|o| o.checked_add(flow.amount))
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
            "{} {} from deposit address {} to {} in block {}",
            flow.amount, flow.asset, flow.from, flow.to, flow.block.number
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
            "deposit address {} holds {balance} {} at block {block}, the ledger and the \
             transfers read explain {expected}: {difference} unexplained",
            item.address, item.asset
        ),
        amount: Some(difference.abs.to_string()),
        asset: Some(item.asset.to_string()),
        address: Some(item.address.to_string()),
    }
}
