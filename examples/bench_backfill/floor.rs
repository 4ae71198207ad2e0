//! Floor A: the pages the engine reads (failed list, then the full list), fetched with the
//! same concurrency by a minimal reqwest loop that only reads the bodies: page 1 first (for
//! `last_page`), then pages 2..=last with `buffer_unordered(concurrency)`.

use std::time::{Duration, Instant};

use futures::StreamExt;

pub struct Floor {
    pub wall: Duration,
    pub pages: u64,
    pub bytes: u64,
}

pub async fn floor_a(
    base_url: &str,
    api_key: &str,
    chain: &str,
    concurrency: usize,
) -> anyhow::Result<Floor> {
    let http = reqwest::Client::new();
    let t0 = Instant::now();
    let (mut pages, mut bytes) = (0u64, 0u64);
    for list in ["failed", ""] {
        let path = format!("{base_url}/{chain}/webhooks/notifications");
        let path = if list.is_empty() {
            path
        } else {
            format!("{path}/{list}")
        };
        let get = |n: u64| {
            let req = http
                .get(format!("{path}?page={n}"))
                .bearer_auth(api_key)
                .header("X-Network", "mainnet")
                .header("Accept", "application/json");
            async move { anyhow::Ok(req.send().await?.error_for_status()?.bytes().await?) }
        };
        let first = get(1).await?;
        let last = serde_json::from_slice::<serde_json::Value>(&first)?["last_page"]
            .as_u64()
            .unwrap_or(1);
        pages += 1;
        bytes += first.len() as u64;
        let mut rest = futures::stream::iter(2..=last)
            .map(get)
            .buffer_unordered(concurrency.max(1));
        while let Some(body) = rest.next().await {
            pages += 1;
            bytes += body?.len() as u64;
        }
    }
    Ok(Floor {
        wall: t0.elapsed(),
        pages,
        bytes,
    })
}
