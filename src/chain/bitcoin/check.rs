//! A Bitcoin chain's answer to the balance check (`chain/check.rs`), from Esplora: per
//! deposit address, its confirmed balance at the tip (read before and after its history, which
//! must agree), its confirmed history down to where its last check ended (or, the first time,
//! to its oldest order's time), the balance at the final block derived from the two, and each
//! transaction since the last check as flows: outputs paying the address are inflows; a
//! transaction spending the address's outputs sends its other outputs out (sweeps or not), its
//! change back, and its fee. Esplora answers per address: a check costs two balance reads and
//! the history pages since the last check per address, whatever changed.

use super::balance::AddressTx;
use super::{BitcoinClient, TIME_SKEW};
use crate::chain::check::{per_address, BalanceQuery, BalanceRead, Since};
use crate::chain::ChainError;
use crate::domain::{Address, Asset, ChainHead, Flow, PaymentKey, U256};

/// Reads of an address whose balance moved while its history was read, before the check fails.
const ATTEMPTS: usize = 3;

impl BitcoinClient {
    /// `ChainClient::read_balances` on Bitcoin (every query's asset is `native`).
    pub(crate) async fn read_balances(
        &self,
        head: &ChainHead,
        queries: &[&BalanceQuery],
    ) -> Result<Vec<BalanceRead>, ChainError> {
        let f = head.final_block;
        per_address(queries, |q| self.read_one(f, q)).await
    }

    /// One address: its balance at `f` and its flows since its last check, or since its
    /// oldest order's time the first time, its opening then derived.
    async fn read_one(&self, f: u64, q: BalanceQuery) -> Result<BalanceRead, ChainError> {
        let chain = &self.settings().name;
        let address = &q.address;
        let lo = q.checked().map(|(block, _)| block);
        let since = match q.since {
            Since::Time(t) => u64::try_from(t.as_second()).unwrap_or(0),
            Since::Checked { .. } => 0,
        };
        let past = |height: u64, time: Option<u64>| match lo {
            Some(lo) => height <= lo,
            None => time.is_some_and(|t| t.saturating_add(TIME_SKEW) < since),
        };
        let (tip_balance, txs) = self.consistent(address, past).await?;
        let in_range = |t: &&AddressTx| {
            t.block.number <= f
                && match lo {
                    Some(lo) => t.block.number > lo,
                    None => t.time.is_some_and(|time| time >= since),
                }
        };
        // The balance at `f`: the tip's, less what the transactions above `f` did.
        let above: i128 = txs
            .iter()
            .filter(|t| t.block.number > f)
            .map(AddressTx::net)
            .sum();
        let inconsistent = |what: &str| ChainError::Rpc {
            chain: chain.to_string(),
            what: "/address/:address",
            reason: format!("the history of {address} does not add up to its balance ({what})"),
        };
        let at_f = i128::from(tip_balance) - above;
        let at_f = u64::try_from(at_f).map_err(|_| inconsistent("at the final block"))?;
        let mine: Vec<&AddressTx> = txs.iter().filter(in_range).collect();
        let flows: Vec<Flow> = mine
            .iter()
            .flat_map(|t| flows_of(chain, address, t))
            .collect();
        let (lo, lo_balance) = match q.checked() {
            Some(checked) => checked,
            None => {
                // The opening: the balance before the first transaction in the window.
                let window: i128 = mine.iter().map(|t| t.net()).sum();
                let opening = u64::try_from(i128::from(at_f) - window)
                    .map_err(|_| inconsistent("at its opening"))?;
                let block = mine
                    .iter()
                    .map(|t| t.block.number)
                    .min()
                    .map_or(f, |b| b.saturating_sub(1));
                (block, U256::from(opening))
            }
        };
        Ok(BalanceRead {
            address: address.clone(),
            asset: Asset::Native,
            lo,
            lo_balance,
            at_final: U256::from(at_f),
            flows,
        })
    }

    /// The tip balance and the history, read so that they agree: the balance before and after
    /// the history must be the same (a block found meanwhile reads again).
    async fn consistent(
        &self,
        address: &Address,
        past: impl Fn(u64, Option<u64>) -> bool,
    ) -> Result<(u64, Vec<AddressTx>), ChainError> {
        for _ in 0..ATTEMPTS {
            let before = self.confirmed_balance(address).await?;
            let txs = self.address_txs(address, &past).await?;
            if self.confirmed_balance(address).await? == before {
                return Ok((before, txs));
            }
        }
        Err(ChainError::Rpc {
            chain: self.settings().name.clone(),
            what: "/address/:address",
            reason: format!(
                "the balance of {address} moved while its history was read, {ATTEMPTS} times"
            ),
        })
    }
}

/// A transaction as flows of `me`: each output paying it from someone else is an inflow; a
/// transaction spending its outputs sends each other output out (the fee on the first; its
/// change is no payment). One spending together with others' inputs is one flow of what it
/// lost, to `several`, or of what it gained, from them.
fn flows_of(chain: &str, me: &Address, t: &AddressTx) -> Vec<Flow> {
    let me = me.to_string();
    let key = |index: i64| PaymentKey {
        chain: chain.to_string(),
        tx_hash: t.txid.clone(),
        log_index: index,
    };
    let flow = |index: i64, from: &str, to: &str, amount: u64, fee: u64| Flow {
        key: key(index),
        from: from.to_string(),
        to: to.to_string(),
        asset: Asset::Native,
        amount: U256::from(amount),
        fee: U256::from(fee),
        block: t.block.clone(),
    };
    if t.spent == 0 {
        let payer = t.payer.clone().unwrap_or_default();
        return t
            .received
            .iter()
            .map(|(i, sats)| flow(*i, &payer, &me, *sats, 0))
            .collect();
    }
    if t.own {
        let mut out: Vec<Flow> = t
            .sent
            .iter()
            .map(|(i, to, sats)| flow(*i, &me, to, *sats, 0))
            .collect();
        match out.first_mut() {
            Some(first) => first.fee = U256::from(t.fee),
            // Every output back to the address (a consolidation): only the fee left it.
            None => out.push(flow(0, &me, &me, 0, t.fee)),
        }
        return out;
    }
    let net = t.net();
    let index = t.received.first().map_or(0, |r| r.0);
    let amount = u64::try_from(net.unsigned_abs()).unwrap_or(u64::MAX);
    if net >= 0 {
        vec![flow(index, "several", &me, amount, 0)]
    } else {
        vec![flow(index, &me, "several", amount, 0)]
    }
}
