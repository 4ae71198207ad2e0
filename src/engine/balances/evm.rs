//! One EVM chain's balance check: balances at the final block (and at the opening block of
//! new addresses) in batches, token `Transfer` logs in and out since each address's last
//! check, and for the native coin the blocks where a balance changed and their transactions.

use std::collections::{BTreeMap, HashMap};

use super::explain::{conclude, CheckError, Item};
use super::ChainCheck;
use crate::chain::EvmClient;
use crate::domain::{Address, Asset, ChainHead, Flow, U256};
use crate::store::{BalanceRow, BalanceScope};

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
    if items.is_empty() {
        return Ok(ChainCheck::default());
    }
    let holdings: Vec<(Address, Asset)> = items
        .iter()
        .map(|i| (i.address.clone(), i.asset.clone()))
        .collect();
    let at_final = evm.balances_at(f, &holdings).await?;
    let mut flows = token_flows(evm, &items, f).await?;
    native_flows(evm, &items, &at_final, f, &mut flows).await?;
    conclude(chain, head, items, at_final, flows, treasury)
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
            Some(p) => out.push(Item::resumed(address, asset, p.clone())),
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
                out.push(Item::opened(address, asset, opening, U256::ZERO));
            }
        }
    }
    for (block, at) in new_at {
        let holdings: Vec<(Address, Asset)> = at
            .iter()
            .map(|i| (out[*i].address.clone(), out[*i].asset.clone()))
            .collect();
        for (i, b) in at.into_iter().zip(evm.balances_at(block, &holdings).await?) {
            out[i] = Item::opened(out[i].address.clone(), out[i].asset.clone(), block, b);
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

/// The native transfers of each native item since its start. The blocks where it sent a
/// transaction come from its nonce (read at its start and at `f` for every native item, in
/// batches: a payment in and a drain out that leave the balance where it was are still
/// found); between them its balance only grows, and bisection finds each block where it did.
/// Then those blocks' transactions.
async fn native_flows(
    evm: &EvmClient,
    items: &[Item],
    at_final: &[U256],
    f: u64,
    flows: &mut HashMap<(String, String), Vec<Flow>>,
) -> Result<(), CheckError> {
    let natives: Vec<(&Item, U256)> = items
        .iter()
        .zip(at_final)
        .filter(|(i, _)| i.asset == Asset::Native)
        .map(|(i, b)| (i, *b))
        .collect();
    let reads: Vec<(u64, Address)> = natives
        .iter()
        .flat_map(|(i, _)| [(i.lo, i.address.clone()), (f, i.address.clone())])
        .collect();
    let nonces = evm.nonces_at(&reads).await?;
    for ((item, now), pair) in natives.into_iter().zip(nonces.chunks(2)) {
        let sent = evm
            .nonce_changes(&item.address, (item.lo, pair[0]), (f, pair[1]))
            .await?;
        // Segments between the blocks it sent from, with the balances at their ends.
        let mut ends = Vec::with_capacity(sent.len() * 2);
        for b in &sent {
            ends.push(b - 1);
            ends.push(*b);
        }
        let holding = [(item.address.clone(), Asset::Native)];
        let mut bounds = vec![(item.lo, item.lo_balance)];
        for b in ends {
            let v = if b == item.lo {
                item.lo_balance
            } else if b == f {
                now
            } else {
                evm.balances_at(b, &holding).await?[0]
            };
            bounds.push((b, v));
        }
        bounds.push((f, now));
        let mut blocks: std::collections::BTreeSet<u64> = sent.iter().copied().collect();
        for seg in bounds.chunks(2) {
            for (block, _, _) in evm.native_changes(&item.address, seg[0], seg[1]).await? {
                blocks.insert(block);
            }
        }
        let key = (item.address.to_string(), Asset::Native.to_string());
        for block in blocks {
            let found = evm.native_flows(&item.address, block).await?;
            flows.entry(key.clone()).or_default().extend(found);
        }
    }
    Ok(())
}
