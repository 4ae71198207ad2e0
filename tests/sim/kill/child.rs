//! The real `payrecon` binary as a child process: started, SIGKILLed after a delay (unless it
//! exits first), or run to completion. Its stderr goes to a file in the seed's directory.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use payrecon::store::Store;
use payrecon_testkit::inspect::Inspect;
use payrecon_testkit::sandbox::SANDBOX_API_KEY;
use tokio::process::Command;

pub const BIN: &str = env!("CARGO_BIN_EXE_payrecon");
/// How long a run to completion may take before the seed fails.
const RUN_TIMEOUT: Duration = Duration::from_secs(60);

/// When to kill.
pub enum When<'a> {
    /// After a fixed delay from the start.
    After(Duration),
    /// `jitter` after the audit table first grows past `audit` rows (polled every 3 ms), or
    /// after `cap` if it never does.
    FirstWrite {
        store: &'a Store,
        audit: i64,
        jitter: Duration,
        cap: Duration,
    },
}

/// Resolves once `when` says the child should die (never, if it never writes).
async fn kill_time(when: &When<'_>) {
    match when {
        When::After(d) => tokio::time::sleep(*d).await,
        When::FirstWrite {
            store,
            audit,
            jitter,
            cap,
        } => {
            let first_write = async {
                loop {
                    tokio::time::sleep(Duration::from_millis(3)).await;
                    if store.count("payrecon_transitions").await.unwrap_or(0) > *audit {
                        break;
                    }
                }
                tokio::time::sleep(*jitter).await;
            };
            let _ = tokio::time::timeout(*cap, first_write).await;
        }
    }
}

/// How one killed attempt ended.
pub struct Attempt {
    /// The exit code when the child exited before the kill (None: it was killed).
    pub exited: Option<i32>,
    /// How long it lived.
    pub lived: Duration,
}

fn command(config: &Path, args: &[&str], stderr: Stdio, stdout: Stdio) -> Command {
    let mut cmd = payrecon_testkit::process::payrecon(BIN, config, args);
    cmd.stdout(stdout).stderr(stderr);
    cmd
}

/// What a child wrote that it must not: a panic, or the API key.
pub fn check_output(what: &str, text: &str) -> Result<(), String> {
    if text.contains("panicked") || text.contains("stack backtrace") {
        return Err(format!("{what}: a panic:\n{text}"));
    }
    if text.contains(SANDBOX_API_KEY) {
        return Err(format!("{what}: the API key is in its output"));
    }
    Ok(())
}

/// Starts `payrecon <args>` and SIGKILLs it at `when` unless it exits first.
pub async fn kill_at(
    config: &Path,
    args: &[&str],
    when: When<'_>,
    log: &Path,
) -> Result<Attempt, String> {
    let file = std::fs::File::create(log).map_err(|e| format!("create {log:?}: {e}"))?;
    let mut child = command(config, args, Stdio::from(file), Stdio::null())
        .spawn()
        .map_err(|e| format!("spawn payrecon: {e}"))?;
    let t0 = Instant::now();
    let exited = tokio::select! {
        st = child.wait() => Some(st.map_err(|e| format!("wait: {e}"))?),
        () = kill_time(&when) => None,
    };
    let exited = match exited {
        Some(st) => Some(st.code().unwrap_or(-1)),
        None => {
            // `Child::start_kill` is SIGKILL on unix.
            child.start_kill().map_err(|e| format!("kill: {e}"))?;
            let st = child.wait().await.map_err(|e| format!("wait: {e}"))?;
            // It may have exited on its own between the timer and the signal.
            st.code()
        }
    };
    let lived = t0.elapsed();
    let text = std::fs::read_to_string(log).unwrap_or_default();
    check_output(&format!("payrecon {} (killed)", args.join(" ")), &text)?;
    Ok(Attempt { exited, lived })
}

/// `payrecon run` to completion: the report (exit 0 required), and how long it took.
pub async fn run_to_end(config: &Path) -> Result<(serde_json::Value, Duration), String> {
    let t0 = Instant::now();
    let args = ["run", "--since", "48h", "--format", "json"];
    let out = command(config, &args, Stdio::piped(), Stdio::piped()).output();
    let out = tokio::time::timeout(RUN_TIMEOUT, out)
        .await
        .map_err(|_| format!("payrecon run did not finish within {RUN_TIMEOUT:?}"))?
        .map_err(|e| format!("spawn payrecon: {e}"))?;
    let took = t0.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    check_output("payrecon run", &stdout)?;
    check_output("payrecon run", &stderr)?;
    if out.status.code() != Some(0) {
        return Err(format!(
            "a fault-free payrecon run exited {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
            out.status.code()
        ));
    }
    let report = serde_json::from_str(&stdout)
        .map_err(|e| format!("the report is not one JSON document ({e}):\n{stdout}"))?;
    Ok((report, took))
}
