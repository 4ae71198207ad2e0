//! A fake Esplora REST API on loopback (docs/configuration.md, "Bitcoin"), answering in the
//! shapes blockstream.info and mempool.space serve: `GET /blocks/tip/height` and
//! `/blocks/tip/hash` (plain text), `GET /tx/:txid` (JSON with `vin`,
//! `vout[n].scriptpubkey_address`/`value`, `status`; 404 "Transaction not found" as text),
//! `GET /block/:hash/status` (`in_best_chain`), and an address's history, newest first:
//! `GET /address/:address` (`chain_stats`, `mempool_stats`: funded and spent sums),
//! `GET /address/:address/txs` (the mempool's, then the first 25 confirmed) and
//! `GET /address/:address/txs/chain/:last_seen_txid` (the next 25 confirmed). Block `h` is
//! stamped `h * 600` seconds after a genesis placed so that the starting tip is now.
//! Transactions can sit in the mempool, move to another block, go back to the mempool, or
//! vanish (a reorg, a fee-bump replacement); one can keep citing a replaced block.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use axum::routing::get;
use axum::Router;

mod api;

use api::{address_chain, address_stats, address_txs, block_status, tip_hash, tip_height, tx};

/// An output: the address it pays (as Esplora spells it) and its value in satoshis.
#[derive(Debug, Clone)]
pub struct Out {
    pub address: String,
    pub sats: u64,
}

struct Entry {
    outputs: Vec<Out>,
    /// `None`: in the mempool.
    block: Option<u64>,
    /// Order of arrival: later transactions of a block come first in a history.
    seq: u64,
    /// A block hash the status keeps citing (an index that lags a reorg).
    cited: Option<String>,
    /// The address its input spends from (in that address's history too), and the value of
    /// that input.
    spends: Option<String>,
    spent: u64,
    /// Counted in the address's balance (`GET /address/:address`) but missing from its
    /// history: an index that lost a transaction.
    unlisted: bool,
    /// Served instead of the transaction's JSON (malformed-answer tests).
    raw: Option<String>,
}

struct EsploraState {
    tip: u64,
    /// Block 0's timestamp.
    genesis: u64,
    next_seq: u64,
    /// Bumped per reorg: block hashes from `from` on change.
    forks: Vec<(u64, u64)>,
    /// Hashes of blocks a reorg replaced (still answered, `in_best_chain: false`).
    stale: HashSet<String>,
    txs: HashMap<String, Entry>,
    requests: Vec<String>,
    faults: VecDeque<u16>,
    /// Answers (status, HTML body) the next address-history requests get instead of JSON.
    raw_history: VecDeque<(u16, String)>,
}

type Shared = Arc<Mutex<EsploraState>>;

fn lock(s: &Shared) -> MutexGuard<'_, EsploraState> {
    s.lock().unwrap_or_else(|p| p.into_inner())
}

/// The API's handle. Dropping it stops the server.
pub struct FakeEsplora {
    state: Shared,
    url: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeEsplora {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Seconds between blocks.
const BLOCK_SECONDS: u64 = 600;

fn block_hash(s: &EsploraState, n: u64) -> String {
    let fork = crate::fork_at(&s.forks, n);
    let mix = (u128::from(n) << 20 | u128::from(fork))
        .wrapping_mul(0x2545_f491_4f6c_dd1d_9e37_79b9_7f4a_7c15);
    // Mainnet block hashes start with zeros (proof of work).
    format!("00000000000000000{:015x}{mix:032x}", n ^ fork << 40)
}

impl FakeEsplora {
    /// Starts the API with the tip at `tip`.
    pub async fn start(tip: u64) -> FakeEsplora {
        let now = u64::try_from(jiff::Timestamp::now().as_second()).unwrap_or(0);
        let state = Arc::new(Mutex::new(EsploraState {
            tip,
            genesis: now.saturating_sub(tip * BLOCK_SECONDS),
            next_seq: 0,
            forks: Vec::new(),
            stale: HashSet::new(),
            txs: HashMap::new(),
            requests: Vec::new(),
            faults: VecDeque::new(),
            raw_history: VecDeque::new(),
        }));
        let router = Router::new()
            .route("/blocks/tip/height", get(tip_height))
            .route("/blocks/tip/hash", get(tip_hash))
            .route("/tx/{txid}", get(tx))
            .route("/block/{hash}/status", get(block_status))
            .route("/address/{address}", get(address_stats))
            .route("/address/{address}/txs", get(address_txs))
            .route("/address/{address}/txs/chain/{last}", get(address_chain))
            .with_state(state.clone());
        let (task, url) = crate::json_api::serve(router, "Esplora").await;
        FakeEsplora { state, url, task }
    }

    /// The API base (`…/tx/:txid` below it).
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// A configuration's `[chains.bitcoin]` table for this API (`extra` keys after).
    pub fn config_table(&self, extra: &str) -> String {
        format!(
            "[chains.bitcoin]\nkind = \"bitcoin\"\nesplora_url = \"{}\"\n{extra}\n",
            self.url
        )
    }

    fn state(&self) -> MutexGuard<'_, EsploraState> {
        lock(&self.state)
    }

    /// A transaction (id: 64 hex digits) with these outputs, in `block` (`None`: mempool).
    pub fn add(&self, txid: &str, block: Option<u64>, outputs: Vec<Out>) {
        self.insert(txid, block, outputs, None, None);
    }

    /// A transaction spending from `from` (a merchant sweeping a deposit address): in that
    /// address's history, paying it nothing.
    pub fn add_spend(&self, txid: &str, block: Option<u64>, from: &str, outputs: Vec<Out>) {
        self.insert(txid, block, outputs, None, Some(from.to_string()));
    }

    /// As `add_spend`, its input worth `in_sats` (the fee is what the outputs leave).
    pub fn add_spend_of(
        &self,
        txid: &str,
        block: Option<u64>,
        from: &str,
        in_sats: u64,
        outputs: Vec<Out>,
    ) {
        self.insert(txid, block, outputs, None, Some(from.to_string()));
        if let Some(e) = self.state().txs.get_mut(&txid.to_lowercase()) {
            e.spent = in_sats;
        }
    }

    /// Keeps the transaction out of every address history while its outputs still count in
    /// the addresses' balances.
    pub fn unlist(&self, txid: &str) {
        if let Some(e) = self.state().txs.get_mut(&txid.to_lowercase()) {
            e.unlisted = true;
        }
    }

    fn insert(
        &self,
        txid: &str,
        block: Option<u64>,
        outputs: Vec<Out>,
        raw: Option<String>,
        spends: Option<String>,
    ) {
        let mut s = self.state();
        s.next_seq += 1;
        let e = Entry {
            outputs,
            block,
            seq: s.next_seq,
            cited: None,
            spends,
            spent: 5_000_000,
            unlisted: false,
            raw,
        };
        s.txs.insert(txid.to_lowercase(), e);
    }

    /// Serves `body` (status 200) for the transaction instead of its JSON.
    pub fn set_raw(&self, txid: &str, body: &str) {
        self.insert(txid, Some(0), Vec::new(), Some(body.to_string()), None);
    }

    /// Back to the mempool (its block left the best chain and nothing replaced it yet).
    pub fn unconfirm(&self, txid: &str) {
        if let Some(e) = self.state().txs.get_mut(&txid.to_lowercase()) {
            e.block = None;
        }
    }

    /// The transaction's status keeps citing the block hash it has now, whatever reorgs
    /// follow (a lagging index: `/block/:hash/status` then says `in_best_chain: false`).
    pub fn keep_citing(&self, txid: &str) {
        let mut s = self.state();
        let Some(block) = s.txs.get(&txid.to_lowercase()).and_then(|e| e.block) else {
            return;
        };
        let hash = block_hash(&s, block);
        if let Some(e) = s.txs.get_mut(&txid.to_lowercase()) {
            e.cited = Some(hash);
        }
    }

    /// Block `n`'s timestamp (seconds).
    pub fn block_time(&self, n: u64) -> u64 {
        self.state().genesis + n * BLOCK_SECONDS
    }

    /// Mines the transaction into `block` (from the mempool, or moved by a reorg).
    pub fn confirm(&self, txid: &str, block: u64) {
        if let Some(e) = self.state().txs.get_mut(&txid.to_lowercase()) {
            e.block = Some(block);
        }
    }

    /// The transaction is gone (404): dropped by a reorg or replaced by a fee bump.
    pub fn remove(&self, txid: &str) {
        self.state().txs.remove(&txid.to_lowercase());
    }

    /// Blocks from `height` on are replaced: their old hashes answer `in_best_chain: false`.
    pub fn reorg_from(&self, height: u64) {
        let mut s = self.state();
        let old: Vec<String> = (height..=s.tip).map(|n| block_hash(&s, n)).collect();
        s.stale.extend(old);
        let n = s.forks.len() as u64 + 1;
        s.forks.push((height, n));
    }

    pub fn mine(&self, n: u64) {
        self.state().tip += n;
    }

    pub fn tip(&self) -> u64 {
        self.state().tip
    }

    pub fn block_hash(&self, n: u64) -> String {
        block_hash(&self.state(), n)
    }

    /// The next `times` requests answer `status`.
    pub fn push_fault(&self, status: u16, times: usize) {
        self.state()
            .faults
            .extend(std::iter::repeat_n(status, times));
    }

    /// Faults still queued.
    pub fn faults_left(&self) -> usize {
        self.state().faults.len()
    }

    /// The next address-history request answers `status` with the HTML `body` (a proxy's
    /// page, another server's 404).
    pub fn push_history_answer(&self, status: u16, body: &str) {
        self.state()
            .raw_history
            .push_back((status, body.to_string()));
    }

    /// Paths requested, in order.
    pub fn requests(&self) -> Vec<String> {
        self.state().requests.clone()
    }
}
