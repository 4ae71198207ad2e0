//! One Solana chain's balance check (docs/configuration.md, "Solana"): per deposit wallet and
//! asset, its holding at the `finalized` commitment (SOL, or the sum of its token accounts of
//! the mint), then its finalized history above where its last check ended (the first time:
//! since its oldest order), each transaction read once. The holding at the run's final slot `F`
//! is the holding read (at the node's slot `S ≥ F`) less what the transactions in `(F, S]` did;
//! the transactions up to `F` are the flows: each transfer to or from the wallet, the fee it
//! paid, and whatever else changed its holding (a program moving lamports, an account closed to
//! it) as one flow from or to `several`. Every transaction in the history is explained whole,
//! so what the check flags is what the history does not hold: money that came or went outside
//! it.

use std::collections::HashMap;

use futures::{StreamExt, TryStreamExt};

use super::explain::{conclude_reads, unchecked, CheckError, Item, Read};
use super::ChainCheck;
use crate::chain::{ChainError, Floor, Moved, SolanaClient};
use crate::domain::{
    Address, Asset, BlockRef, ChainHead, ChainKind, Flow, PaymentKey, TxHash, U256,
};
use crate::store::{BalanceRow, BalanceScope};

/// Wallets read at once.
const IN_FLIGHT: usize = 4;

/// Checks `scope` (one chain's deposit wallets and assets) against `previous` checks.
pub(super) async fn check(
    sol: &SolanaClient,
    chain: &str,
    head: &ChainHead,
    scope: &[BalanceScope],
    previous: &HashMap<(String, String, String), BalanceRow>,
    treasury: &[String],
) -> Result<ChainCheck, CheckError> {
    let f = head.final_block;
    let kind = ChainKind::Solana;
    let mut wanted = Vec::new();
    for s in scope {
        let bad = || CheckError::Ledger(s.address.clone(), s.asset.clone());
        let address = kind.address("pay_to", &s.address).map_err(|_| bad())?;
        let asset = kind.asset(&s.asset).map_err(|_| bad())?;
        let Some(prev) = unchecked(previous, s, f) else {
            continue;
        };
        wanted.push((address, asset, prev, s.oldest_order));
    }
    let reads: Vec<Read> = futures::stream::iter(wanted)
        .map(|(address, asset, prev, since)| read(sol, chain, f, address, asset, prev, since))
        .buffered(IN_FLIGHT)
        .try_collect()
        .await?;
    conclude_reads(chain, head, reads, treasury)
}

/// One wallet and asset: its holding at `f` and its flows since its last check (`prev`), or
/// since `since` (its oldest order's time) the first time, its opening then derived.
async fn read(
    sol: &SolanaClient,
    chain: &str,
    f: u64,
    address: Address,
    asset: Asset,
    prev: Option<BalanceRow>,
    since: jiff::Timestamp,
) -> Result<Read, CheckError> {
    let holding = sol.holding(&address, &asset).await?;
    let inconsistent = |what: String| {
        CheckError::Chain(ChainError::Rpc {
            chain: chain.to_string(),
            what: "getSignaturesForAddress",
            reason: format!("the history of {address} ({asset}) {what}"),
        })
    };
    if holding.slot < f {
        return Err(inconsistent(format!(
            "was read at slot {}, below the final slot {f} this check started from (a node \
             behind the others)",
            holding.slot
        )));
    }
    let floor = match &prev {
        Some(p) => Floor::Slot(p.checked_block),
        None => Floor::Time(since),
    };
    let history = sol.history(&address, &asset, &holding, floor).await?;
    // The holding at `f`: what was read at its slot, less what happened after `f`.
    let above: i128 = history
        .iter()
        .filter(|m| m.slot > f && m.slot <= holding.slot)
        .map(|m| m.moves.net)
        .sum();
    let at_f = i128::try_from(holding.amount).unwrap_or(i128::MAX) - above;
    let at_f = u128::try_from(at_f)
        .map_err(|_| inconsistent("does not add up to its holding at the final slot".into()))?;
    let mine: Vec<&Moved> = history.iter().filter(|m| m.slot <= f).collect();
    let mut flows = Vec::new();
    for m in &mine {
        let tx_hash = ChainKind::Solana.tx_hash(&m.signature).map_err(|e| {
            inconsistent(format!(
                "lists {:?}, not a signature: {}",
                m.signature, e.reason
            ))
        })?;
        flows.extend(flows_of(chain, tx_hash, &address, &asset, m));
    }
    let item = match prev {
        Some(p) => Item::resumed(address, asset, p),
        None => {
            // The opening: the holding before the first transaction in the window.
            let window: i128 = mine.iter().map(|m| m.moves.net).sum();
            let opening = u128::try_from(i128::try_from(at_f).unwrap_or(i128::MAX) - window)
                .map_err(|_| {
                    inconsistent("does not add up to its holding at its opening".into())
                })?;
            let block = mine
                .iter()
                .map(|m| m.slot)
                .min()
                .map_or(f, |s| s.saturating_sub(1));
            Item::opened(address, asset, block, U256::from(opening))
        }
    };
    Ok(Read {
        item,
        at_final: U256::from(at_f),
        flows,
    })
}

/// A transaction as flows of `me`: each transfer to or from it; the fee it paid (on its first
/// outflow, else alone); what else changed its holding, from or to `several` (index −1).
fn flows_of(chain: &str, tx_hash: TxHash, me: &Address, asset: &Asset, m: &Moved) -> Vec<Flow> {
    let me = me.to_string();
    let flow = |index: i64, from: &str, to: &str, amount: u128, fee: u64| Flow {
        key: PaymentKey {
            chain: chain.to_string(),
            tx_hash: tx_hash.clone(),
            log_index: index,
        },
        from: from.to_string(),
        to: to.to_string(),
        asset: asset.clone(),
        amount: U256::from(amount),
        fee: U256::from(fee),
        // A slot has one block: the slot stands for its hash.
        block: BlockRef {
            number: m.slot,
            hash: m.slot.to_string(),
        },
    };
    let mut out = Vec::new();
    let mut explained: i128 = -i128::from(m.moves.fee);
    for (index, from, to, amount) in &m.moves.transfers {
        let units = u128::try_from(*amount).unwrap_or(u128::MAX);
        let signed = i128::try_from(units).unwrap_or(i128::MAX);
        explained += if *to == me { signed } else { -signed };
        out.push(flow(*index, from, to, units, 0));
    }
    if m.moves.fee > 0 {
        match out.iter_mut().find(|f| f.from == me) {
            Some(first) => first.fee = U256::from(m.moves.fee),
            None => out.push(flow(-1, &me, &me, 0, m.moves.fee)),
        }
    }
    let rest = m.moves.net - explained;
    if rest > 0 {
        out.push(flow(-1, "several", &me, rest.unsigned_abs(), 0));
    } else if rest < 0 {
        out.push(flow(-1, &me, "several", rest.unsigned_abs(), 0));
    }
    out
}
