//! An EVM chain's answer to the balance check (`chain/check.rs`): balances at the final block
//! (and at the opening block of new addresses) in batches, token `Transfer` logs in and out
//! since each address's last check, and for the native coin the blocks where a balance
//! changed and their transactions.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::EvmClient;
use crate::chain::check::{BalanceQuery, BalanceRead, Since};
use crate::chain::ChainError;
use crate::domain::{Address, Asset, ChainHead, Flow, U256};

impl EvmClient {
    /// `ChainClient::read_balances` on an EVM chain.
    pub(crate) async fn read_balances(
        &self,
        head: &ChainHead,
        queries: &[&BalanceQuery],
    ) -> Result<Vec<BalanceRead>, ChainError> {
        let f = head.final_block;
        let mut reads = self.starts(head, queries).await?;
        if reads.is_empty() {
            return Ok(reads);
        }
        let holdings: Vec<(Address, Asset)> = reads
            .iter()
            .map(|r| (r.address.clone(), r.asset.clone()))
            .collect();
        let at_final = self.balances_at(f, &holdings).await?;
        for (r, b) in reads.iter_mut().zip(at_final) {
            r.at_final = b;
        }
        self.token_flows_of(&mut reads, f).await?;
        self.native_flows_of(&mut reads, f).await?;
        Ok(reads)
    }

    /// Each query's start: after its last check, or at the block before the first block of
    /// its oldest order (its opening balance read there). One whose oldest order is newer than
    /// the final block waits.
    async fn starts(
        &self,
        head: &ChainHead,
        queries: &[&BalanceQuery],
    ) -> Result<Vec<BalanceRead>, ChainError> {
        let f = head.final_block;
        let mut out = Vec::new();
        let mut starts: BTreeMap<i64, u64> = BTreeMap::new();
        let mut new_at: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
        for q in queries {
            let read = |lo: u64, lo_balance: U256| BalanceRead {
                address: q.address.clone(),
                asset: q.asset.clone(),
                lo,
                lo_balance,
                at_final: U256::ZERO,
                flows: Vec::new(),
            };
            match q.since {
                Since::Checked { block, balance } => out.push(read(block, balance)),
                Since::Time(since) => {
                    let second = since.as_second();
                    let start = match starts.get(&second) {
                        Some(b) => *b,
                        None => {
                            let b = self.first_block_since(since, head.number).await?;
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
                    out.push(read(opening, U256::ZERO));
                }
            }
        }
        for (block, at) in new_at {
            let holdings: Vec<(Address, Asset)> = at
                .iter()
                .map(|i| (out[*i].address.clone(), out[*i].asset.clone()))
                .collect();
            for (i, b) in at
                .into_iter()
                .zip(self.balances_at(block, &holdings).await?)
            {
                out[i].lo_balance = b;
            }
        }
        Ok(out)
    }

    /// The token transfers in and out of the reads' addresses since each read's start: one
    /// log read per start block shared by its reads.
    async fn token_flows_of(&self, reads: &mut [BalanceRead], f: u64) -> Result<(), ChainError> {
        let mut by_start: BTreeMap<u64, (Vec<Address>, Vec<Address>)> = BTreeMap::new();
        for r in reads.iter() {
            if let Asset::Token(t) = &r.asset {
                let (tokens, addresses) = by_start.entry(r.lo).or_default();
                if !tokens.contains(t) {
                    tokens.push(t.clone());
                }
                if !addresses.contains(&r.address) {
                    addresses.push(r.address.clone());
                }
            }
        }
        let at: HashMap<(String, String, u64), usize> = reads
            .iter()
            .enumerate()
            .map(|(i, r)| ((r.address.to_string(), r.asset.to_string(), r.lo), i))
            .collect();
        for (lo, (tokens, addresses)) in by_start {
            for flow in self.token_flows(&tokens, &addresses, lo + 1, f).await? {
                for party in [&flow.from, &flow.to] {
                    let key = (party.clone(), flow.asset.to_string(), lo);
                    if let Some(i) = at.get(&key) {
                        let list = &mut reads[*i].flows;
                        if !list.iter().any(|x| x.key == flow.key) {
                            list.push(flow.clone());
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// The native transfers of each native read since its start. The blocks where it sent a
    /// transaction come from its nonce (read at its start and at `f` for every native read,
    /// in batches: a payment in and a drain out that leave the balance where it was are still
    /// found); between them its balance only grows, and bisection finds each block where it
    /// did. Then those blocks' transactions.
    async fn native_flows_of(&self, reads: &mut [BalanceRead], f: u64) -> Result<(), ChainError> {
        let natives: Vec<usize> = (0..reads.len())
            .filter(|i| reads[*i].asset == Asset::Native)
            .collect();
        let nonce_reads: Vec<(u64, Address)> = natives
            .iter()
            .flat_map(|i| {
                [
                    (reads[*i].lo, reads[*i].address.clone()),
                    (f, reads[*i].address.clone()),
                ]
            })
            .collect();
        let nonces = self.nonces_at(&nonce_reads).await?;
        for (i, pair) in natives.into_iter().zip(nonces.chunks(2)) {
            let r = &reads[i];
            let sent = self
                .nonce_changes(&r.address, (r.lo, pair[0]), (f, pair[1]))
                .await?;
            // Segments between the blocks it sent from, with the balances at their ends.
            let mut ends = Vec::with_capacity(sent.len() * 2);
            for b in &sent {
                ends.push(b - 1);
                ends.push(*b);
            }
            let holding = [(r.address.clone(), Asset::Native)];
            let mut bounds = vec![(r.lo, r.lo_balance)];
            for b in ends {
                let v = if b == r.lo {
                    r.lo_balance
                } else if b == f {
                    r.at_final
                } else {
                    self.balances_at(b, &holding).await?[0]
                };
                bounds.push((b, v));
            }
            bounds.push((f, r.at_final));
            let mut blocks: BTreeSet<u64> = sent.iter().copied().collect();
            for seg in bounds.chunks(2) {
                for (block, _, _) in self.native_changes(&r.address, seg[0], seg[1]).await? {
                    blocks.insert(block);
                }
            }
            let mut found: Vec<Flow> = Vec::new();
            for block in blocks {
                found.extend(self.native_flows(&r.address, block).await?);
            }
            reads[i].flows.extend(found);
        }
        Ok(())
    }
}
