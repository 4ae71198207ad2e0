//! The sandbox chain's state: blocks, transactions, receipts and logs in HashMaps, and their
//! JSON-RPC shapes (the fields alloy's `Block`, `Transaction` and `TransactionReceipt` need).
//! Balances at any block (what the balance check reads) are the genesis allocation plus the
//! transactions up to it; every transaction costs its sender `FEE` wei, as its receipt says.

use std::collections::HashMap;

use alloy::primitives::{b256, keccak256, Address as EvmAddress, Bytes, B256, U256};
use serde_json::{json, Value};

/// topic 0 of an ERC-20/ERC-721 `Transfer`: keccak256(`Transfer(address,address,uint256)`).
pub const TRANSFER_TOPIC: B256 =
    b256!("ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef");

/// What a sandbox transaction does.
pub(super) struct Payment {
    from: EvmAddress,
    to: EvmAddress,
    value: U256,
    input: Bytes,
    /// (topics, data) of each log, in order.
    logs: Vec<(Vec<B256>, Bytes)>,
    pub(super) reverted: bool,
    /// Native coin the called contract passes on inside the call (no transaction, no log).
    pub(super) internal: Option<(EvmAddress, U256)>,
}

impl Payment {
    pub(super) fn token(
        contract: EvmAddress,
        from: EvmAddress,
        to: EvmAddress,
        amount: U256,
    ) -> Payment {
        let mut input = vec![0xa9, 0x05, 0x9c, 0xbb]; // transfer(address,uint256)
        input.extend_from_slice(to.into_word().as_slice());
        input.extend_from_slice(&amount.to_be_bytes::<32>());
        let topics = vec![TRANSFER_TOPIC, from.into_word(), to.into_word()];
        Payment {
            from,
            to: contract,
            value: U256::ZERO,
            input: input.into(),
            logs: vec![(topics, amount.to_be_bytes::<32>().to_vec().into())],
            reverted: false,
            internal: None,
        }
    }

    pub(super) fn nft(contract: EvmAddress, from: EvmAddress, to: EvmAddress, id: U256) -> Payment {
        let id = B256::from(id.to_be_bytes::<32>());
        let topics = vec![TRANSFER_TOPIC, from.into_word(), to.into_word(), id];
        Payment {
            from,
            to: contract,
            value: U256::ZERO,
            input: Bytes::new(),
            logs: vec![(topics, Bytes::new())],
            reverted: false,
            internal: None,
        }
    }

    pub(super) fn native(from: EvmAddress, to: EvmAddress, value: U256) -> Payment {
        Payment {
            from,
            to,
            value,
            input: Bytes::new(),
            logs: Vec::new(),
            reverted: false,
            internal: None,
        }
    }
}

struct Tx {
    hash: B256,
    nonce: u64,
    payment: Payment,
    /// Block-level index of the first log.
    first_log: u64,
    /// (block number, index in block) once mined.
    mined: Option<(u64, u64)>,
}

struct Block {
    hash: B256,
    parent: B256,
    timestamp: u64,
    txs: Vec<B256>,
}

pub(super) struct Node {
    chain_id: u64,
    genesis_time: u64,
    /// Balances at genesis by (holder, token; `None` for the native coin).
    alloc: HashMap<(EvmAddress, Option<EvmAddress>), U256>,
    blocks: Vec<Block>,
    pending: Vec<B256>,
    pending_logs: u64,
    txs: HashMap<B256, Tx>,
    nonces: HashMap<EvmAddress, u64>,
    counter: u64,
    /// Whether logs carry their block's `blockTimestamp` (execution-apis #639: geth 1.16+,
    /// reth, Erigon, Besu, anvil); off, the node answers as older ones do, without it.
    log_times: bool,
}

/// How far `finalized` and `safe` trail the head, as on anvil.
const FINALIZED_LAG: u64 = 64;
const SAFE_LAG: u64 = 32;

/// The genesis time unless one is given, and the time between blocks.
pub(super) const GENESIS_TIME: u64 = 1_700_000_000;
const BLOCK_TIME: u64 = 12;
/// What every transaction costs its sender: the receipt's `gasUsed` × `effectiveGasPrice`.
pub(super) const FEE: u64 = 21_000 * 0x7735_9400;

impl Node {
    pub(super) fn new(chain_id: u64, genesis_time: u64) -> Node {
        let genesis = Block {
            hash: keccak256(format!("sandbox block {chain_id} 0")),
            parent: B256::ZERO,
            timestamp: genesis_time,
            txs: Vec::new(),
        };
        Node {
            chain_id,
            genesis_time,
            alloc: HashMap::new(),
            blocks: vec![genesis],
            pending: Vec::new(),
            pending_logs: 0,
            txs: HashMap::new(),
            nonces: HashMap::new(),
            counter: 0,
            log_times: true,
        }
    }

    pub(super) fn head(&self) -> u64 {
        self.blocks.len() as u64 - 1
    }

    /// Adds a transaction to the pending block: its hash and the block-level index of its
    /// first log (-1 when it has none).
    pub(super) fn add(&mut self, payment: Payment) -> (B256, i64) {
        self.counter += 1;
        let hash = keccak256(format!("sandbox tx {} {}", self.chain_id, self.counter));
        let nonce = self.nonces.entry(payment.from).or_insert(0);
        let tx = Tx {
            hash,
            nonce: *nonce,
            first_log: self.pending_logs,
            mined: None,
            payment,
        };
        *nonce += 1;
        let log_index = if tx.payment.reverted || tx.payment.logs.is_empty() {
            -1
        } else {
            self.pending_logs += tx.payment.logs.len() as u64;
            tx.first_log as i64
        };
        self.txs.insert(hash, tx);
        self.pending.push(hash);
        (hash, log_index)
    }

    pub(super) fn mine_block(&mut self) -> u64 {
        let number = self.blocks.len() as u64;
        let parent = self.blocks[number as usize - 1].hash;
        let txs = std::mem::take(&mut self.pending);
        for (i, h) in txs.iter().enumerate() {
            if let Some(tx) = self.txs.get_mut(h) {
                tx.mined = Some((number, i as u64));
            }
        }
        self.pending_logs = 0;
        self.blocks.push(Block {
            hash: keccak256(format!("sandbox block {} {number}", self.chain_id)),
            parent,
            timestamp: self.genesis_time + BLOCK_TIME * number,
            txs,
        });
        number
    }

    /// Adds `amount` to `holder`'s balance at genesis (of `token`; `None`: the native coin).
    pub(super) fn fund(&mut self, holder: EvmAddress, token: Option<EvmAddress>, amount: U256) {
        let v = self.alloc.entry((holder, token)).or_default();
        *v = v.saturating_add(amount);
    }

    /// `holder`'s balance of `token` (`None`: the native coin) at block `at`; what would go
    /// below zero stays at zero (a sandbox sender need not be funded).
    pub(super) fn balance_at(
        &self,
        holder: EvmAddress,
        token: Option<EvmAddress>,
        at: u64,
    ) -> U256 {
        let mut balance = self
            .alloc
            .get(&(holder, token))
            .copied()
            .unwrap_or_default();
        for block in self.blocks.iter().take(at as usize + 1) {
            for tx in block.txs.iter().filter_map(|h| self.txs.get(h)) {
                let p = &tx.payment;
                let (mut add, mut sub) = (U256::ZERO, U256::ZERO);
                match token {
                    None => {
                        if p.from == holder {
                            sub += U256::from(FEE);
                        }
                        if !p.reverted && p.from == holder {
                            sub += p.value;
                        }
                        if !p.reverted && p.to == holder {
                            add += p.value;
                        }
                        if let Some((to, v)) = p.internal.filter(|_| !p.reverted) {
                            if p.to == holder {
                                sub += v;
                            }
                            if to == holder {
                                add += v;
                            }
                        }
                    }
                    Some(t) if !p.reverted && p.to == t => {
                        for (topics, data) in &p.logs {
                            if topics.len() != 3 || topics[0] != TRANSFER_TOPIC {
                                continue;
                            }
                            let amount = U256::from_be_slice(data);
                            if topics[1] == holder.into_word() {
                                sub += amount;
                            }
                            if topics[2] == holder.into_word() {
                                add += amount;
                            }
                        }
                    }
                    Some(_) => {}
                }
                balance = balance.saturating_add(add).saturating_sub(sub);
            }
        }
        balance
    }

    /// How many transactions `holder` sent in blocks up to `at` (its nonce there).
    pub(super) fn nonce_at(&self, holder: EvmAddress, at: u64) -> u64 {
        let blocks = self.blocks.iter().take(at as usize + 1);
        blocks
            .flat_map(|b| &b.txs)
            .filter(|h| self.txs.get(*h).is_some_and(|t| t.payment.from == holder))
            .count() as u64
    }

    /// The logs in blocks `from..=to` matching `addresses` (empty: any) and `topics` (per
    /// position: `None` any, else one of the list), as `eth_getLogs` answers.
    pub(super) fn logs(
        &self,
        from: u64,
        to: u64,
        addresses: &[EvmAddress],
        topics: &[Option<Vec<B256>>],
    ) -> Vec<Value> {
        let mut out = Vec::new();
        for n in from..=to.min(self.head()) {
            for h in &self.blocks[n as usize].txs {
                let tx = &self.txs[h];
                let p = &tx.payment;
                if p.reverted || !(addresses.is_empty() || addresses.contains(&p.to)) {
                    continue;
                }
                for (i, (t, data)) in p.logs.iter().enumerate() {
                    let matches = topics.iter().enumerate().all(|(k, want)| match want {
                        None => true,
                        Some(list) => t.get(k).is_some_and(|x| list.contains(x)),
                    });
                    if matches {
                        out.push(self.log_json(tx, i, t, data));
                    }
                }
            }
        }
        out
    }

    fn log_json(&self, tx: &Tx, i: usize, topics: &[B256], data: &Bytes) -> Value {
        let (block_hash, block_number, index) = self.place(tx);
        let mut log = json!({
            "address": tx.payment.to, "topics": topics, "data": data, "blockHash": block_hash,
            "blockNumber": block_number, "transactionHash": tx.hash,
            "transactionIndex": index, "logIndex": hex(tx.first_log + i as u64), "removed": false,
        });
        let time = tx.mined.and_then(|(n, _)| self.block_time(n));
        if let (true, Some(t)) = (self.log_times, time) {
            log["blockTimestamp"] = hex(t);
        }
        log
    }

    pub(super) fn set_log_times(&mut self, on: bool) {
        self.log_times = on;
    }

    pub(super) fn block_of(&self, tx: &B256) -> Option<u64> {
        self.txs.get(tx)?.mined.map(|(n, _)| n)
    }

    pub(super) fn block_time(&self, number: u64) -> Option<u64> {
        let i = usize::try_from(number).ok()?;
        self.blocks.get(i).map(|b| b.timestamp)
    }

    pub(super) fn chain_id(&self) -> u64 {
        self.chain_id
    }

    /// Block number for a tag or hex number; `None` when there is no such block. The error
    /// (a `String`) is the JSON-RPC error message this stand-in node answers with.
    pub(super) fn resolve_block(&self, tag: &str) -> Result<Option<u64>, String> {
        let head = self.head();
        let n = match tag {
            "latest" | "pending" => head,
            "earliest" => 0,
            "finalized" => head.saturating_sub(FINALIZED_LAG),
            "safe" => head.saturating_sub(SAFE_LAG),
            hex => {
                let digits = hex
                    .strip_prefix("0x")
                    .ok_or(format!("bad block tag {hex:?}"))?;
                u64::from_str_radix(digits, 16).map_err(|_| format!("bad block number {hex:?}"))?
            }
        };
        Ok((n <= head).then_some(n))
    }

    pub(super) fn block_json(&self, number: u64, full: bool) -> Value {
        let b = &self.blocks[number as usize];
        let txs: Vec<Value> = if full {
            b.txs.iter().map(|h| self.tx_json(&self.txs[h])).collect()
        } else {
            b.txs.iter().map(|h| json!(h)).collect()
        };
        let zero32 = B256::ZERO;
        json!({
            "hash": b.hash, "parentHash": b.parent,
            "sha3Uncles": "0x1dcc4de8dec75d7aab85b567b6ccd41ad312451b948a7413f0a142fd40d49347",
            "miner": EvmAddress::ZERO, "stateRoot": keccak256(b.hash), "transactionsRoot": zero32,
            "receiptsRoot": zero32, "logsBloom": bloom(), "difficulty": "0x0",
            "number": hex(number), "gasLimit": "0x1c9c380", "gasUsed": hex(21_000 * b.txs.len() as u64),
            "timestamp": hex(b.timestamp), "extraData": "0x", "mixHash": zero32,
            "nonce": "0x0000000000000000", "baseFeePerGas": "0x3b9aca00", "totalDifficulty": "0x0",
            "size": "0x267", "uncles": [], "transactions": txs,
        })
    }

    pub(super) fn tx_by_hash(&self, hash: &B256) -> Value {
        self.txs
            .get(hash)
            .map_or(Value::Null, |tx| self.tx_json(tx))
    }

    fn tx_json(&self, tx: &Tx) -> Value {
        let p = &tx.payment;
        let (block_hash, block_number, index) = self.place(tx);
        json!({
            "type": "0x2", "chainId": hex(self.chain_id), "nonce": hex(tx.nonce), "gas": "0x186a0",
            "maxFeePerGas": "0x77359400", "maxPriorityFeePerGas": "0x3b9aca00", "to": p.to,
            "value": p.value, "accessList": [], "input": p.input,
            "r": keccak256(tx.hash), "s": keccak256(keccak256(tx.hash)), "yParity": "0x0", "v": "0x0",
            "hash": tx.hash, "blockHash": block_hash, "blockNumber": block_number,
            "transactionIndex": index, "from": p.from, "gasPrice": "0x77359400",
        })
    }

    /// The receipt, or `null` when unknown or not mined yet.
    pub(super) fn receipt(&self, hash: &B256) -> Value {
        let Some(tx) = self.txs.get(hash).filter(|t| t.mined.is_some()) else {
            return Value::Null;
        };
        let p = &tx.payment;
        let (block_hash, block_number, index) = self.place(tx);
        let logs: Vec<Value> = if p.reverted {
            Vec::new()
        } else {
            p.logs
                .iter()
                .enumerate()
                .map(|(i, (topics, data))| self.log_json(tx, i, topics, data))
                .collect()
        };
        json!({
            "type": "0x2", "status": if p.reverted { "0x0" } else { "0x1" },
            "cumulativeGasUsed": "0x5208", "logs": logs, "logsBloom": bloom(),
            "transactionHash": tx.hash, "transactionIndex": index, "blockHash": block_hash,
            "blockNumber": block_number, "gasUsed": "0x5208", "effectiveGasPrice": "0x77359400",
            "from": p.from, "to": p.to, "contractAddress": null,
        })
    }

    /// (blockHash, blockNumber, transactionIndex) as JSON, `null`s while pending.
    fn place(&self, tx: &Tx) -> (Value, Value, Value) {
        match tx.mined {
            Some((n, i)) => (json!(self.blocks[n as usize].hash), hex(n), hex(i)),
            None => (Value::Null, Value::Null, Value::Null),
        }
    }
}

fn hex(n: u64) -> Value {
    Value::String(format!("{n:#x}"))
}

fn bloom() -> &'static str {
    static BLOOM: std::sync::LazyLock<String> =
        std::sync::LazyLock::new(|| format!("0x{}", "0".repeat(512)));
    &BLOOM
}
