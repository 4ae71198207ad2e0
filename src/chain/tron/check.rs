//! A Tron chain's answer to the balance check (`chain/check.rs`). java-tron answers balances
//! only at its head (`latest`), so each balance comes with the block `T` it was read at, and
//! the balance at the final block `F` is that less what the flows in `(F, T]` did. TRC-20
//! flows come from `Transfer` logs (JSON-RPC, like EVM's); TRX flows, and the TRX each
//! transaction of a deposit address burned as its fee, from the blocks (HTTP API, 100 blocks
//! a read), for every TRX address (a payment in and a sweep out leave a balance where it was:
//! only the blocks show them). A new address's opening is derived: its balance at `F` less its
//! flows since the first block of its oldest order.

use std::collections::BTreeMap;

use super::TronClient;
use crate::chain::check::{BalanceQuery, BalanceRead, Since};
use crate::chain::ChainError;
use crate::domain::{Address, Asset, ChainHead, Flow, U256};

impl TronClient {
    /// `ChainClient::read_balances` on Tron.
    pub(crate) async fn read_balances(
        &self,
        head: &ChainHead,
        queries: &[&BalanceQuery],
    ) -> Result<Vec<BalanceRead>, ChainError> {
        let chain = &self.settings().name;
        let f = head.final_block;
        let starts = self.starts(head, queries).await?;
        if starts.is_empty() {
            return Ok(Vec::new());
        }
        let holdings: Vec<(Address, Asset)> = starts
            .iter()
            .map(|(q, _)| (q.address.clone(), q.asset.clone()))
            .collect();
        let tips = self.balances_at_head(&holdings).await?;
        let top = tips.iter().map(|t| t.0).max().unwrap_or(head.number);
        let flows = self.read_flows(&starts, top).await?;
        let mut out = Vec::with_capacity(starts.len());
        for ((q, lo), (tip_block, tip)) in starts.into_iter().zip(tips) {
            let me = q.address.to_string();
            let mine: Vec<&Flow> = flows
                .iter()
                .filter(|x| x.asset == q.asset && (x.from == me || x.to == me))
                .collect();
            let above = mine
                .iter()
                .copied()
                .filter(|x| x.block.number > f && x.block.number <= tip_block);
            let inside: Vec<Flow> = mine
                .iter()
                .filter(|x| x.block.number > lo && x.block.number <= f)
                .map(|x| (*x).clone())
                .collect();
            let inconsistent = |what: &str| ChainError::Rpc {
                chain: chain.to_string(),
                what: "balances",
                reason: format!(
                    "the flows of {me} ({}) do not add up to its balance ({what})",
                    q.asset
                ),
            };
            if tip_block < f {
                return Err(inconsistent(&format!(
                    "read at block {tip_block}, below the final block {f}: the node answering \
                     balances is behind"
                )));
            }
            let at_f = undo(tip, &me, above).ok_or_else(|| inconsistent("at the final block"))?;
            let lo_balance = match q.checked() {
                Some((_, balance)) => balance,
                // TRX that left with no flow read (a freeze, a call's inner transfer) can take
                // the derived opening below zero: it opens at zero, and the check flags what
                // nothing explains as `balance_mismatch` for this address alone.
                None => undo(at_f, &me, inside.iter()).unwrap_or(U256::ZERO),
            };
            out.push(BalanceRead {
                address: q.address.clone(),
                asset: q.asset.clone(),
                lo,
                lo_balance,
                at_final: at_f,
                flows: inside,
            });
        }
        Ok(out)
    }

    /// Each query with the block it reads after: its last check's, or the block before the
    /// first block of its oldest order. One whose oldest order is newer than the final block
    /// waits.
    async fn starts<'q>(
        &self,
        head: &ChainHead,
        queries: &[&'q BalanceQuery],
    ) -> Result<Vec<(&'q BalanceQuery, u64)>, ChainError> {
        let f = head.final_block;
        let mut first: BTreeMap<i64, u64> = BTreeMap::new();
        let mut out = Vec::new();
        for q in queries {
            let lo = match q.since {
                Since::Checked { block, .. } => block,
                Since::Time(since) => {
                    let second = since.as_second();
                    let start = match first.get(&second) {
                        Some(b) => *b,
                        None => {
                            let b = self.evm().first_block_since(since, head.number).await?;
                            first.insert(second, b);
                            b
                        }
                    };
                    start.saturating_sub(1)
                }
            };
            if lo < f {
                out.push((*q, lo));
            }
        }
        Ok(out)
    }

    /// The flows the check needs, up to `top` (the highest block a balance was read at):
    /// TRC-20 logs of every token query's address from the lowest start; TRX blocks for every
    /// TRX query.
    async fn read_flows(
        &self,
        starts: &[(&BalanceQuery, u64)],
        top: u64,
    ) -> Result<Vec<Flow>, ChainError> {
        let (mut tokens, mut holders, mut trx) = (Vec::new(), Vec::new(), Vec::new());
        let (mut token_lo, mut trx_lo) = (u64::MAX, u64::MAX);
        for (q, lo) in starts {
            match &q.asset {
                Asset::Token(t) => {
                    if !tokens.contains(t) {
                        tokens.push(t.clone());
                    }
                    if !holders.contains(&q.address) {
                        holders.push(q.address.clone());
                    }
                    token_lo = token_lo.min(*lo);
                }
                // Every TRX query, moved or not: a payment in and a sweep out (free bandwidth,
                // no fee) leave the balance where it was, and only the blocks show them.
                Asset::Native => {
                    if !trx.contains(&q.address) {
                        trx.push(q.address.clone());
                    }
                    trx_lo = trx_lo.min(*lo);
                }
            }
        }
        let mut flows = Vec::new();
        if !tokens.is_empty() {
            flows.extend(
                self.token_flows(&tokens, &holders, token_lo + 1, top)
                    .await?,
            );
        }
        if !trx.is_empty() {
            flows.extend(self.trx_flows(&trx, trx_lo + 1, top).await?);
        }
        Ok(flows)
    }
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
