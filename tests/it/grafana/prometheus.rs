//! A real Prometheus (`PROMETHEUS_BIN`, else `prometheus` on PATH) on a free loopback port,
//! scraping one target every second as job `payrecon`, with the alerting rules loaded;
//! killed on drop. Its own port and tempdir: a system Prometheus on :9090 does not matter.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::support::{free_port, wait_until};

pub(crate) struct Prometheus {
    child: Child,
    dir: tempfile::TempDir,
    pub base: String,
    http: reqwest::Client,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Prometheus {
    /// Starts `bin` scraping `target` (`host:port`) and waits until it is ready.
    pub async fn start(bin: &Path, target: &str, rules: &Path) -> Prometheus {
        let dir = payrecon_testkit::tmp::dir().expect("temp dir");
        let config = format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
             rule_files:\n  - {rules}\n\
             scrape_configs:\n  - job_name: payrecon\n    static_configs:\n      - targets: ['{target}']\n",
            rules = rules.display()
        );
        let config_path = dir.path().join("prometheus.yml");
        std::fs::write(&config_path, config).unwrap();
        let port = free_port();
        let log = std::fs::File::create(dir.path().join("prometheus.log")).unwrap();
        let child = Command::new(bin)
            .arg(format!("--config.file={}", config_path.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {}: {e}", bin.display()));
        let prom = Prometheus {
            child,
            dir,
            base: format!("http://127.0.0.1:{port}"),
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(10))
                .build()
                .unwrap(),
        };
        let ready = format!("{}/-/ready", prom.base);
        let http = prom.http.clone();
        let log = prom.dir.path().join("prometheus.log");
        wait_until("Prometheus to be ready", Duration::from_secs(30), || {
            let (http, ready, log) = (http.clone(), ready.clone(), log.clone());
            async move {
                match http.get(&ready).send().await {
                    Ok(r) => r.status().is_success(),
                    Err(_) => {
                        let text = std::fs::read_to_string(&log).unwrap_or_default();
                        assert!(!text.contains("level=error"), "Prometheus failed:\n{text}");
                        false
                    }
                }
            }
        })
        .await;
        prom
    }

    /// Prometheus's own log so far (for failure messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("prometheus.log")).unwrap_or_default()
    }

    /// `GET /api/v1/{path}` with `params`: the whole JSON answer (status and all).
    pub async fn api(&self, path: &str, params: &[(&str, &str)]) -> Value {
        let resp = self
            .http
            .get(format!("{}/api/v1/{path}", self.base))
            .query(params)
            .send()
            .await
            .unwrap_or_else(|e| panic!("GET /api/v1/{path}: {e}"));
        resp.json()
            .await
            .unwrap_or_else(|e| panic!("/api/v1/{path}: not JSON: {e}"))
    }

    /// An instant query's `data.result` when it succeeded, else the error answer.
    pub async fn query(&self, expr: &str) -> Result<Vec<Value>, Value> {
        let v = self.api("query", &[("query", expr)]).await;
        match (v["status"].as_str(), v["data"]["result"].as_array()) {
            (Some("success"), Some(result)) => Ok(result.clone()),
            _ => Err(v),
        }
    }

    /// Waits until `expr` returns at least one series.
    pub async fn wait_for(&self, expr: &str, timeout: Duration) {
        wait_until(expr, timeout, || async {
            self.query(expr).await.is_ok_and(|r| !r.is_empty())
        })
        .await;
    }
}
