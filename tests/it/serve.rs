//! `payrecon serve` as a child process: endpoints and metrics, scheduled runs, readiness
//! when the database goes away, graceful SIGTERM/SIGINT, single-flight, a `run` beside it.

mod endpoints;
mod lifecycle;

use std::path::Path;
use std::time::Duration;

use crate::cli::harness::{command, Running, World};
use crate::support::free_port;

/// A running `payrecon serve` on a free loopback port.
pub(crate) struct Served {
    pub proc: Running,
    pub base: String,
}

impl Served {
    /// Starts serve with `config`, listening on a free port (set from the environment, drawn
    /// below the kernel's ephemeral range: `free_port`), and waits until `/healthz` answers.
    /// An exit before that, or no answer within 30 s, fails with serve's log.
    pub async fn start(config: &Path) -> Served {
        let port = free_port();
        let mut cmd = command(config, &["serve"]);
        cmd.env("PAYRECON_HTTP__LISTEN", format!("127.0.0.1:{port}"));
        let mut served = Served {
            proc: Running::spawn(cmd),
            base: format!("http://127.0.0.1:{port}"),
        };
        let url = format!("{}/healthz", served.base);
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            if matches!(get(&url).await, Some((200, _))) {
                return served;
            }
            if let Ok(Some(status)) = served.proc.child.try_wait() {
                let (_, _) = served.proc.wait(Duration::from_secs(5)).await;
                panic!(
                    "serve exited ({status}) before answering /healthz:\n{}",
                    served.proc.stderr()
                );
            }
            assert!(
                std::time::Instant::now() < deadline,
                "timed out waiting for serve to answer /healthz:\n{}",
                served.proc.stderr()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub async fn get(&self, path: &str) -> (u16, String) {
        get(&format!("{}{path}", self.base))
            .await
            .unwrap_or_else(|| panic!("GET {path} failed:\n{}", self.proc.stderr()))
    }

    pub async fn metrics(&self) -> String {
        let (status, body) = self.get("/metrics").await;
        assert_eq!(status, 200);
        body
    }

    /// SIGTERM (or another signal), then the exit code and how long the exit took.
    pub async fn stop(&mut self, sig: &str, within: Duration) -> (Option<i32>, Duration) {
        self.proc.signal(sig).await;
        self.proc.wait(within).await
    }
}

async fn get(url: &str) -> Option<(u16, String)> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .ok()?;
    let resp = client.get(url).send().await.ok()?;
    let status = resp.status().as_u16();
    Some((status, resp.text().await.ok()?))
}

/// The value of the series `name{labels…}` (labels in any order, all of them given).
pub(crate) fn series(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    text.lines().find_map(|l| {
        let (head, value) = l.rsplit_once(' ')?;
        let (n, rest) = head.split_once('{').unwrap_or((head, "}"));
        if n != name {
            return None;
        }
        let got: Vec<(&str, &str)> = rest
            .trim_end_matches('}')
            .split(',')
            .filter(|s| !s.is_empty())
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k, v.trim_matches('"')))
            .collect();
        let mut want = labels.to_vec();
        want.sort_unstable();
        let mut got_sorted = got.clone();
        got_sorted.sort_unstable();
        (want == got_sorted).then(|| value.parse().ok())?
    })
}

/// A world whose provider lists `n` missing payments, and a config with `extra`.
pub(crate) async fn world_with_payments(n: u32, extra: &str) -> (World, std::path::PathBuf) {
    let w = World::sqlite().await;
    if n > 0 {
        w.missing_payments(1, n).await;
    }
    let config = w.config(extra);
    (w, config)
}

/// Never fires while a test runs.
pub(crate) const NEVER: &str = "[schedule]\ncron = \"0 0 0 1 1 *\"\n";
/// Every second.
pub(crate) const EVERY_SECOND: &str = "[schedule]\ncron = \"* * * * * *\"\n";
