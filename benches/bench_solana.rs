//! Solana resolution throughput (docs/configuration.md, "Solana"): signatures resolved through
//! `ChainClient::lookup` as a run resolves provider records (`getSignatureStatuses` 256 a call,
//! then `getTransaction` in JSON-RPC batches), on the sandbox node (loopback, batches taken)
//! and on a real local cluster (surfpool through `testkit::surfnet`, which refuses batches:
//! single calls, 4 in flight). Prints records/s and requests per record.
//!
//!     cargo bench --profile release --bench bench_solana -- [--sandbox 20000] [--surfnet 500] [--batch 50]
//!
//! The surfnet part needs `SOLANA_NODE_MODULES` (docs/testing.md); without it, it is skipped
//! with the reason.

use std::time::{Duration, Instant};

use clap::Parser;
use payrecon::chain::{ChainClient, ChainSettings, Finality, Lookup, TransferQuery};
use payrecon::domain::{Asset, ChainKind, SolanaKey};
use payrecon_testkit::sandbox::solana::{base58, SandboxSolana};
use payrecon_testkit::surfnet::Surfnet;

#[derive(Parser)]
struct Args {
    /// SOL transfers on the sandbox node.
    #[arg(long, default_value_t = 20_000)]
    sandbox: u64,
    /// SOL transfers on the local cluster (made one by one, about 7 ms each).
    #[arg(long, default_value_t = 500)]
    surfnet: u64,
    /// getTransaction calls per batch request.
    #[arg(long, default_value_t = 50)]
    batch: usize,
}

fn settings(url: &str, batch: usize) -> ChainSettings {
    ChainSettings {
        name: "solana".into(),
        kind: ChainKind::Solana,
        api_url: None,
        api_key: None,
        rpc_urls: vec![url.to_string()],
        chain_id: None,
        max_requests_per_second: None,
        confirmations: 1,
        finality: Finality::Finalized,
        final_depth: 1,
        batch_size: batch,
        timeout: Duration::from_secs(10),
        max_retries: 2,
        recheck_final: Duration::ZERO,
        scan_unpaid: false,
        log_range: 1,
        max_amount: None,
    }
}

fn key(i: u64) -> String {
    let mut b = [0x33; 32];
    b[..8].copy_from_slice(&i.to_be_bytes());
    SolanaKey::from_bytes(b).to_string()
}

fn query(sig: &str, to: &str) -> anyhow::Result<TransferQuery> {
    Ok(TransferQuery {
        tx_hash: ChainKind::Solana.tx_hash(sig)?,
        asset: Some(Asset::Native),
        to: Some(ChainKind::Solana.address("to", to)?),
        log_index: None,
    })
}

/// Resolves `queries`; prints the rate and what `requests` (HTTP requests so far) counted.
async fn measure(
    what: &str,
    chain: &ChainClient,
    queries: &[TransferQuery],
    requests: impl Fn() -> Option<u64>,
) -> anyhow::Result<()> {
    let head = chain.head().await?;
    let before = requests();
    let t0 = Instant::now();
    let found = chain.lookup(&head, queries).await?;
    let secs = t0.elapsed().as_secs_f64();
    let ok = found
        .iter()
        .filter(|l| matches!(l, Lookup::Found(_)))
        .count();
    anyhow::ensure!(
        ok == queries.len(),
        "{what}: {ok} of {} resolved",
        queries.len()
    );
    let per = match (before, requests()) {
        (Some(a), Some(b)) => format!(
            "; {} HTTP requests ({:.3} per record)",
            b - a,
            (b - a) as f64 / queries.len() as f64
        ),
        _ => String::new(),
    };
    println!(
        "{what}: {} records in {secs:.3} s = {:.0} records/s{per}",
        queries.len(),
        queries.len() as f64 / secs
    );
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse_from(payrecon_testkit::bench::argv());
    if args.sandbox > 0 {
        let node = SandboxSolana::start().await?;
        let payer = key(u64::MAX);
        let mut queries = Vec::new();
        for i in 0..args.sandbox {
            let mut b = [0x44; 64];
            b[..8].copy_from_slice(&i.to_be_bytes());
            let (sig, to) = (base58(&b), key(i));
            node.pay_sol(&sig, 900 + i % 50, &payer, &to, 1_000_000 + i);
            queries.push(query(&sig, &to)?);
        }
        let chain = ChainClient::new(settings(&node.url, args.batch))?;
        let what = format!("sandbox node (batches of {})", args.batch);
        measure(&what, &chain, &queries, || Some(node.requests().0)).await?;
    }
    if args.surfnet > 0 {
        let Some(net) = Surfnet::start().await else {
            return Ok(());
        };
        net.wallet("payer").await;
        let t0 = Instant::now();
        let mut queries = Vec::new();
        for _ in 0..args.surfnet {
            let to = net.key().await;
            let sig = net.pay_sol("payer", &to, 1_000_000, false).await;
            queries.push(query(&sig, &to)?);
        }
        println!(
            "surfnet: {} transfers made in {:.1} s",
            args.surfnet,
            t0.elapsed().as_secs_f64()
        );
        let chain = ChainClient::new(settings(&net.url, args.batch))?;
        measure(
            "surfpool 1.2.0 (refuses batches: single calls, 4 in flight)",
            &chain,
            &queries,
            || None,
        )
        .await?;
    }
    Ok(())
}
