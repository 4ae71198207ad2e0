//! The time to repair: under `payrecon serve` with the default schedule, a payment whose
//! notification was lost appears in the list; how long until its order is applied and its event
//! delivered.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use alloy::primitives::U256 as EvmU256;
use jiff::{SignedDuration, Timestamp};
use payrecon::domain::{Address, State, U256};
use payrecon::store::{NewOrder, Store};
use payrecon_testkit::sandbox::chain::SandboxChain;
use payrecon_testkit::sandbox::chaingateway::{notification, FakeChaingateway};
use payrecon_testkit::sandbox::merchant::SandboxMerchant;
use payrecon_testkit::sandbox::SANDBOX_TOKEN;

use payrecon_testkit::inspect::Inspect;

use super::{address, toml_db_url, CHAIN};

/// `payrecon serve` with the default schedule; a payment whose notification was lost appears
/// in the list; how long until its order is applied and its event delivered.
#[allow(clippy::too_many_arguments)]
pub(super) async fn repair(
    bin: &std::path::Path,
    toml: &str,
    env: &[(String, String)],
    chain: &SandboxChain,
    cg: &FakeChaingateway,
    merchant: &SandboxMerchant,
    port: u16,
    w: usize,
) -> anyhow::Result<bool> {
    let dir = tempfile::Builder::new()
        .prefix("payrecon-steady-serve-")
        .tempdir()?;
    let config = dir.path().join("serve.toml");
    std::fs::write(&config, toml)?;
    let mut serve = Command::new(bin)
        .arg("--config")
        .arg(&config)
        .arg("serve")
        .env("PAYRECON_LOG", "warn")
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()?;
    let result = async {
        let http = reqwest::Client::new();
        let ready = format!("http://127.0.0.1:{port}/readyz");
        let t0 = Instant::now();
        while !http
            .get(&ready)
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            anyhow::ensure!(
                t0.elapsed() < Duration::from_secs(30),
                "serve never became ready"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        // The lost payment: on chain (final), an order for it, listed by the provider; no
        // webhook ever reaches the merchant.
        let i = w;
        let to = address(0x1_0000_0000 + i as u64);
        let added = chain.add_token_transfers(
            &Address::parse(SANDBOX_TOKEN)?,
            &address(0xfe),
            &[(to.clone(), EvmU256::from(1_000_000u64))],
        );
        chain.mine_block();
        chain.mine(70);
        let store = Store::connect(&toml_db_url(toml)?, 1).await?;
        let order_ref = format!("S-{i:07}");
        store
            .insert_orders(&[NewOrder {
                order_ref: order_ref.clone(),
                chain: CHAIN.into(),
                pay_to: to.to_string(),
                asset: SANDBOX_TOKEN.into(),
                amount_due: U256::from(1_000_000u64),
            }])
            .await?;
        let listed = Instant::now();
        let listed_at = Timestamp::now();
        cg.add_notification(
            CHAIN,
            notification(
                "lost-1",
                added[0].0.as_str(),
                SANDBOX_TOKEN,
                to.as_str(),
                Some("1"),
                listed_at,
            ),
        );
        let (mut applied, mut delivered) = (None, None);
        while delivered.is_none() {
            anyhow::ensure!(
                listed.elapsed() < Duration::from_secs(420),
                "not repaired in 7 minutes"
            );
            if applied.is_none() {
                let o = store.order_by_ref(&order_ref).await?;
                if o.is_some_and(|o| o.state == State::Final) {
                    applied = Some(listed.elapsed());
                }
            }
            if merchant.received().iter().any(|e| e.order_ref == order_ref) {
                delivered = Some(listed.elapsed());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let next_tick = {
            // The default schedule: every 5 minutes on the minute.
            let s = listed_at.as_second();
            SignedDuration::from_secs(300 - s.rem_euclid(300))
        };
        let applied = applied.unwrap_or_default();
        let delivered = delivered.unwrap_or_default();
        println!(
            "  time to repair under serve (schedule every 5 min): listed -> applied {applied:.1?}, \
             -> event delivered {delivered:.1?}; of which waiting for the next tick {:.0}s, the \
             run and delivery {:.1?}",
            next_tick.as_secs_f64(),
            delivered.saturating_sub(Duration::from_secs_f64(next_tick.as_secs_f64()))
        );
        Ok(true)
    }
    .await;
    let _ = serve.kill();
    let _ = serve.wait();
    result
}
