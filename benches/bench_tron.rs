//! Tron resolution throughput (docs/configuration.md, "Tron"): N TRC-20 USDT transfers and M
//! TRX transfers on the fake Tron node (`payrecon_testkit::tron`, loopback, no latency unless
//! asked), resolved through `ChainClient::lookup` as a run resolves provider records (receipts
//! in JSON-RPC batches; TRX through three HTTP API calls each). Prints records/s and requests
//! per record.
//!
//!     cargo bench --profile release --bench bench_tron -- [--trc20 5000] [--trx 500] [--batch 50]

use std::time::{Duration, Instant};

use clap::Parser;
use payrecon::chain::{ChainClient, ChainSettings, Finality, TransferQuery};
use payrecon::domain::{Asset, ChainKind, TronAddress};
use payrecon_testkit::tron::{FakeTron, TronTx, USDT_HEX};

#[derive(Parser)]
struct Args {
    /// TRC-20 transfers to resolve.
    #[arg(long, default_value_t = 5_000)]
    trc20: u64,
    /// TRX transfers to resolve.
    #[arg(long, default_value_t = 500)]
    trx: u64,
    /// JSON-RPC calls per batch request.
    #[arg(long, default_value_t = 50)]
    batch: usize,
}

fn settings(node: &FakeTron, batch: usize) -> ChainSettings {
    ChainSettings {
        name: "tron".into(),
        kind: ChainKind::Tron,
        api_url: Some(node.api_url()),
        api_key: None,
        rpc_urls: vec![node.rpc_url()],
        chain_id: None,
        max_requests_per_second: None,
        confirmations: 19,
        finality: Finality::Finalized,
        final_depth: 20,
        batch_size: batch,
        timeout: Duration::from_secs(10),
        max_retries: 2,
        recheck_final: Duration::ZERO,
        scan_unpaid: false,
        log_range: 5_000,
        max_amount: None,
    }
}

fn payee(i: u64) -> TronAddress {
    let mut b = [0u8; 20];
    b[0] = 0x5e;
    b[12..].copy_from_slice(&i.to_be_bytes());
    TronAddress::from_bytes(b)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse_from(payrecon_testkit::bench::argv());
    let head = 68_000_000;
    let node = FakeTron::start(head, 19).await;
    let usdt = payrecon::domain::ChainKind::Tron.asset(&format!("41{USDT_HEX}"))?;
    let mut trc20 = Vec::new();
    let mut trx = Vec::new();
    for i in 0..args.trc20 + args.trx {
        let id = format!("{i:064x}");
        let to = payee(i);
        let native = i >= args.trc20;
        let tx = if native {
            TronTx::Trx {
                from: "5c".repeat(20),
                to: to.evm_hex()[2..].to_string(),
                amount: 1_000_000 + i,
                contract_ret: "SUCCESS".into(),
            }
        } else {
            TronTx::Trc20 {
                contract: USDT_HEX.into(),
                from: "5c".repeat(20),
                to: to.evm_hex()[2..].to_string(),
                amount: u128::from(1_000_000 + i),
                log_index: i % 50,
                success: true,
            }
        };
        node.add(&id, head - 100 - i % 1000, tx);
        let q = TransferQuery {
            tx_hash: ChainKind::Tron.tx_hash(&id)?,
            asset: Some(if native { Asset::Native } else { usdt.clone() }),
            to: Some(ChainKind::Tron.address("to", to.as_str())?),
            log_index: None,
        };
        if native {
            trx.push(q)
        } else {
            trc20.push(q)
        }
    }
    let chain = ChainClient::new(settings(&node, args.batch))?;
    let head = chain.head().await?;
    for (what, queries) in [
        ("TRC-20 (JSON-RPC receipts)", &trc20),
        ("TRX (HTTP API)", &trx),
    ] {
        if queries.is_empty() {
            continue;
        }
        let before = node.requests().len();
        let t0 = Instant::now();
        let found = chain.lookup(&head, queries).await?;
        let secs = t0.elapsed().as_secs_f64();
        let ok = found
            .iter()
            .filter(|l| matches!(l, payrecon::chain::Lookup::Found(_)))
            .count();
        anyhow::ensure!(
            ok == queries.len(),
            "{what}: {ok} of {} resolved",
            queries.len()
        );
        let calls = node.requests().len() - before;
        println!(
            "{what}: {} records in {:.3} s = {:.0} records/s; {} node calls ({:.2} per record)",
            queries.len(),
            secs,
            queries.len() as f64 / secs,
            calls,
            calls as f64 / queries.len() as f64
        );
    }
    Ok(())
}
