//! One Tron chain's balance check. java-tron answers balances only at its head (`latest`), so
//! each balance comes with the block `T` it was read at, and the balance at the final block
//! `F` is that less what the flows in `(F, T]` did. TRC-20 flows come from `Transfer` logs
//! (JSON-RPC, like EVM's); TRX flows, and the TRX each transaction of a deposit address burned
//! as its fee, from the blocks (HTTP API, 100 blocks a read), for every TRX address (a payment
//! in and a sweep out leave a balance where it was: only the blocks show them). A new
//! address's opening is derived: its balance at `F` less its flows since the first block of
//! its oldest order.

use std::collections::{BTreeMap, HashMap};

use super::explain::{conclude, CheckError, Item};
use super::ChainCheck;
use crate::chain::{ChainClient, ChainError, TronClient};
use crate::domain::{Address, Asset, ChainHead, ChainKind, Flow, U256};
use crate::store::{BalanceRow, BalanceScope};

/// What one address and asset is checked from: after its last check, or (first time) from
/// the block before its oldest order's first block.
struct Want {
    address: Address,
    asset: Asset,
    lo: u64,
    prev: Option<BalanceRow>,
}

/// Checks `scope` (one chain's deposit addresses) against `previous` checks.
pub(super) async fn check(
    client: &ChainClient,
    tron: &TronClient,
    chain: &str,
    head: &ChainHead,
    scope: &[BalanceScope],
    previous: &HashMap<(String, String, String), BalanceRow>,
    treasury: &[String],
) -> Result<ChainCheck, CheckError> {
    let wants = wants(client, chain, head, scope, previous).await?;
    if wants.is_empty() {
        return Ok(ChainCheck::default());
    }
    let holdings: Vec<(Address, Asset)> = wants
        .iter()
        .map(|w| (w.address.clone(), w.asset.clone()))
        .collect();
    let tips = tron.balances_at_head(&holdings).await?;
    let top = tips.iter().map(|t| t.0).max().unwrap_or(head.number);
    let flows = read_flows(tron, &wants, top).await?;
    let f = head.final_block;
    let (mut items, mut at_final, mut window) = (Vec::new(), Vec::new(), HashMap::new());
    for (w, (tip_block, tip)) in wants.into_iter().zip(tips) {
        let me = w.address.to_string();
        let mine: Vec<&Flow> = flows
            .iter()
            .filter(|x| x.asset == w.asset && (x.from == me || x.to == me))
            .collect();
        let above = mine
            .iter()
            .copied()
            .filter(|x| x.block.number > f && x.block.number <= tip_block);
        let inside: Vec<Flow> = mine
            .iter()
            .filter(|x| x.block.number > w.lo && x.block.number <= f)
            .map(|x| (*x).clone())
            .collect();
        let inconsistent = |what: &str| {
            CheckError::Chain(ChainError::Rpc {
                chain: chain.to_string(),
                what: "balances",
                reason: format!(
                    "the flows of {me} ({}) do not add up to its balance ({what})",
                    w.asset
                ),
            })
        };
        if tip_block < f {
            return Err(inconsistent(&format!(
                "read at block {tip_block}, below the final block {f}: the node answering \
                 balances is behind"
            )));
        }
        let at_f = undo(tip, &me, above).ok_or_else(|| inconsistent("at the final block"))?;
        let item = match w.prev {
            Some(p) => Item::resumed(w.address.clone(), w.asset.clone(), p),
            None => {
                // TRX that left with no flow read (a freeze, a call's inner transfer) can take
                // the derived opening below zero: it opens at zero, and the check flags what
                // nothing explains as `balance_mismatch` for this address alone.
                let opening = undo(at_f, &me, inside.iter()).unwrap_or(U256::ZERO);
                Item::opened(w.address.clone(), w.asset.clone(), w.lo, opening)
            }
        };
        window.insert((me, w.asset.to_string()), inside);
        items.push(item);
        at_final.push(at_f);
    }
    conclude(chain, head, items, at_final, window, treasury)
}

/// The addresses to check and where each starts. One whose last check reached the final
/// block already, or whose oldest order is newer than it, waits.
async fn wants(
    client: &ChainClient,
    chain: &str,
    head: &ChainHead,
    scope: &[BalanceScope],
    previous: &HashMap<(String, String, String), BalanceRow>,
) -> Result<Vec<Want>, CheckError> {
    let f = head.final_block;
    let mut starts: BTreeMap<i64, u64> = BTreeMap::new();
    let mut out = Vec::new();
    for s in scope {
        let bad = || CheckError::Ledger(s.address.clone(), s.asset.clone());
        let address = ChainKind::Tron
            .address("pay_to", &s.address)
            .map_err(|_| bad())?;
        let asset = ChainKind::Tron.asset(&s.asset).map_err(|_| bad())?;
        let prev = previous
            .get(&(chain.to_string(), s.address.clone(), s.asset.clone()))
            .cloned();
        let lo = match &prev {
            Some(p) => p.checked_block,
            None => {
                let second = s.oldest_order.as_second();
                let start = match starts.get(&second) {
                    Some(b) => *b,
                    None => {
                        let b = client
                            .first_block_since(s.oldest_order, head.number)
                            .await?;
                        starts.insert(second, b);
                        b
                    }
                };
                start.saturating_sub(1)
            }
        };
        if lo >= f {
            continue;
        }
        out.push(Want {
            address,
            asset,
            lo,
            prev,
        });
    }
    Ok(out)
}

/// The flows the check needs, up to `top` (the highest block a balance was read at): TRC-20
/// logs of every token item's address from the lowest start; TRX blocks for the TRX items
/// checked for the first time or whose balance moved since their last check (returned too).
async fn read_flows(tron: &TronClient, wants: &[Want], top: u64) -> Result<Vec<Flow>, CheckError> {
    let (mut tokens, mut holders, mut trx) = (Vec::new(), Vec::new(), Vec::new());
    let (mut token_lo, mut trx_lo) = (u64::MAX, u64::MAX);
    for w in wants {
        match &w.asset {
            Asset::Token(t) => {
                if !tokens.contains(t) {
                    tokens.push(t.clone());
                }
                if !holders.contains(&w.address) {
                    holders.push(w.address.clone());
                }
                token_lo = token_lo.min(w.lo);
            }
            // Every TRX item, moved or not: a payment in and a sweep out (free bandwidth, no
            // fee) leave the balance where it was, and only the blocks show them.
            Asset::Native => {
                if !trx.contains(&w.address) {
                    trx.push(w.address.clone());
                }
                trx_lo = trx_lo.min(w.lo);
            }
        }
    }
    let mut flows = Vec::new();
    if !tokens.is_empty() {
        flows.extend(
            tron.token_flows(&tokens, &holders, token_lo + 1, top)
                .await?,
        );
    }
    if !trx.is_empty() {
        flows.extend(tron.trx_flows(&trx, trx_lo + 1, top).await?);
    }
    Ok(flows)
}

/// `balance` before `flows` of `me`: less what came in, plus what went out (and its fees);
/// `None` when that would be below zero or above 2^256.
fn undo<'a>(balance: U256, me: &str, flows: impl Iterator<Item = &'a Flow>) -> Option<U256> {
    let (mut add, mut sub) = (U256::ZERO, U256::ZERO);
    for x in flows {
        if x.from == me {
            add = add.checked_add(x.amount)?.checked_add(x.fee)?;
        }
        if x.to == me {
            sub = sub.checked_add(x.amount)?;
        }
    }
    balance.checked_add(add)?.checked_sub(sub)
}
