//! The real `payrecon` binary as a child process: one way to launch it for the integration
//! tests and the simulator (the binary's path comes from the caller's
//! `env!("CARGO_BIN_EXE_payrecon")`, which only a test target knows).

use std::path::Path;
use std::process::Stdio;

use tokio::process::Command;

/// `payrecon --config <config> <args>` at `bin` with a clean environment (nothing inherited
/// from the test's but `PAYRECON_LOG=info`), stdin closed, stdout and stderr piped, killed
/// when dropped. Callers add what they need (`env`, other `Stdio`) before spawning.
pub fn payrecon(bin: &str, config: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(bin);
    cmd.env_clear()
        .env("PAYRECON_LOG", "info")
        .arg("--config")
        .arg(config)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    cmd
}
