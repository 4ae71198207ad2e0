//! A Solana chain's answer to the balance check (`chain/check.rs`; docs/configuration.md,
//! "Solana"): per deposit wallet and asset, its holding at the `finalized` commitment (SOL, or
//! the sum of its token accounts of the mint), then its finalized history above where its last
//! check ended (the first time: since its oldest order), each transaction read once. The
//! holding at the final slot `F` is the holding read (at the node's slot `S ≥ F`) less what
//! the transactions in `(F, S]` did; the transactions up to `F` are the flows: each transfer
//! to or from the wallet, the fee it paid, and whatever else changed its holding (a program
//! moving lamports, an account closed to it) as one flow from or to `several`. Every
//! transaction in the history is explained whole, so what the check flags is what the history
//! does not hold: money that came or went outside it.

use super::balance::{Floor, Moved};
use super::SolanaClient;
use crate::chain::check::{per_address, BalanceQuery, BalanceRead, Since};
use crate::chain::ChainError;
use crate::domain::{
    Address, Asset, BlockRef, ChainHead, ChainKind, Flow, PaymentKey, TxHash, U256,
};

impl SolanaClient {
    /// `ChainClient::read_balances` on Solana.
    pub(crate) async fn read_balances(
        &self,
        head: &ChainHead,
        queries: &[&BalanceQuery],
    ) -> Result<Vec<BalanceRead>, ChainError> {
        let f = head.final_block;
        per_address(queries, |q| self.read_one(f, q)).await
    }

    /// One wallet and asset: its holding at `f` and its flows since its last check, or since
    /// its oldest order's time the first time, its opening then derived.
    async fn read_one(&self, f: u64, q: BalanceQuery) -> Result<BalanceRead, ChainError> {
        let chain = &self.settings().name;
        let (address, asset) = (&q.address, &q.asset);
        let holding = self.holding(address, asset).await?;
        let inconsistent = |what: String| ChainError::Rpc {
            chain: chain.to_string(),
            what: "getSignaturesForAddress",
            reason: format!("the history of {address} ({asset}) {what}"),
        };
        if holding.slot < f {
            return Err(inconsistent(format!(
                "was read at slot {}, below the final slot {f} this check started from (a \
                 node behind the others)",
                holding.slot
            )));
        }
        let floor = match q.since {
            Since::Checked { block, .. } => Floor::Slot(block),
            Since::Time(t) => Floor::Time(t),
        };
        let history = self.history(address, asset, &holding, floor).await?;
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
            flows.extend(flows_of(chain, tx_hash, address, asset, m));
        }
        let (lo, lo_balance) = match q.checked() {
            Some(checked) => checked,
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
                (block, U256::from(opening))
            }
        };
        Ok(BalanceRead {
            address: address.clone(),
            asset: asset.clone(),
            lo,
            lo_balance,
            at_final: U256::from(at_f),
            flows,
        })
    }
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
