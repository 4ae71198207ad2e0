//! The test environment: what is installed here, and what a missing piece means. A test that
//! needs PostgreSQL, anvil or another tool skips with a printed reason where it is missing,
//! and fails under `PAYRECON_TEST_STRICT=1` (which CI sets).

/// `PAYRECON_TEST_STRICT=1`: a missing service fails the test instead of skipping it.
pub fn strict() -> bool {
    std::env::var("PAYRECON_TEST_STRICT").is_ok_and(|v| v == "1")
}

/// Whether the tests run their arms on `backend` (`sqlite`, `postgres` or `mysql`):
/// `PAYRECON_TEST_BACKENDS`, a comma list, names the ones to run; unset, every one. An arm
/// left out so is chosen, not missing: no skip, no failure under strict mode. CI's second
/// pass runs the MySQL arms only (`PAYRECON_TEST_BACKENDS=mysql`), the others having run in
/// its first pass.
pub fn backend_selected(backend: &str) -> bool {
    match std::env::var("PAYRECON_TEST_BACKENDS") {
        Ok(list) if !list.trim().is_empty() => list.split(',').any(|b| b.trim() == backend),
        _ => true,
    }
}

/// Prints why a test is skipped, or panics under strict mode.
pub fn skip(reason: &str) {
    if strict() {
        panic!("PAYRECON_TEST_STRICT=1 and {reason}");
    }
    eprintln!("SKIPPED: {reason}");
}

/// A service or tool some tests need, found on this machine or not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Need {
    /// What it is.
    pub what: &'static str,
    /// What does not run without it.
    pub skipped: &'static str,
    /// What to set or install to run it.
    pub how: &'static str,
    pub found: bool,
}

fn var_set(var: &str) -> bool {
    std::env::var_os(var).is_some_and(|v| !v.is_empty())
}

/// `name` as the tests look for it: the file `var` names, else on `PATH` (or in `also`).
fn tool(var: Option<&str>, name: &str, also: &[&str]) -> bool {
    if let Some(p) = var.and_then(std::env::var_os).filter(|v| !v.is_empty()) {
        return std::path::Path::new(&p).is_file();
    }
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .chain(also.iter().map(std::path::PathBuf::from))
        .any(|d| d.join(name).is_file())
}

fn python_has(module: &str) -> bool {
    std::process::Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// PostgreSQL's server binaries, for the tests that start a private cluster.
fn pg_server_binaries() -> bool {
    std::fs::read_dir("/usr/lib/postgresql").is_ok_and(|dirs| {
        dirs.filter_map(Result::ok).any(|d| {
            let bin = d.path().join("bin");
            bin.join("initdb").is_file() && bin.join("pg_ctl").is_file()
        })
    })
}

/// Every service and tool the tests look for, probed the way the tests probe it (docs/testing.md,
/// "Running the tests"). A test whose need is missing returns early with `SKIPPED: …` in its
/// captured output; this list says so once, at the end of the run
/// (`tests/it/environment.rs`).
pub fn needs() -> Vec<Need> {
    let need = |what, skipped, how, found| Need {
        what,
        skipped,
        how,
        found,
    };
    vec![
        need(
            "PostgreSQL",
            "the PostgreSQL arm of every test that runs on more than SQLite, and the simulator on PostgreSQL",
            "PAYRECON_TEST_PG_URL=postgres://postgres@127.0.0.1:5432/postgres",
            var_set("PAYRECON_TEST_PG_URL"),
        ),
        need(
            "MariaDB or MySQL",
            "the MariaDB/MySQL arm of the same tests, and the simulator on MariaDB/MySQL",
            "PAYRECON_TEST_MYSQL_URL=mysql://root@127.0.0.1:3306/test",
            var_set("PAYRECON_TEST_MYSQL_URL"),
        ),
        need(
            "anvil (a real EVM node)",
            "the chain, reorg and end-to-end tests on anvil, and the simulator's anvil slice",
            "ANVIL_BIN=<path> (npm @foundry-rs/anvil-linux-amd64@1.7.1)",
            var_set("ANVIL_BIN"),
        ),
        need(
            "surfpool and Solana's libraries",
            "the Solana tests on a real local cluster",
            "SOLANA_NODE_MODULES=<node_modules with surfpool-sdk-linux-x64-gnu@1.2.0, @solana/web3.js@1.99.0, @solana/spl-token@0.4.15>",
            var_set("SOLANA_NODE_MODULES"),
        ),
        need(
            "Prism",
            "the Chaingateway OpenAPI contract test",
            "PRISM_BIN=<path> (npm @stoplight/prism-cli@5)",
            var_set("PRISM_BIN"),
        ),
        need(
            "promtool and prometheus",
            "the alert rules' unit tests and the dashboard's queries against a real scrape",
            "apt-get install prometheus (or PROMTOOL_BIN, PROMETHEUS_BIN)",
            tool(Some("PROMTOOL_BIN"), "promtool", &[]) && tool(Some("PROMETHEUS_BIN"), "prometheus", &[]),
        ),
        need(
            "systemd-analyze",
            "the units' verify and security score",
            "apt-get install systemd",
            tool(None, "systemd-analyze", &["/usr/bin", "/bin"]),
        ),
        need(
            "Chromium and chromedriver",
            "the console in a real browser",
            "apt-get install chromium chromium-driver (or CHROMIUM_BIN, CHROMEDRIVER_BIN)",
            tool(Some("CHROMIUM_BIN"), "chromium", &["/usr/bin"])
                && tool(Some("CHROMEDRIVER_BIN"), "chromedriver", &["/usr/bin"]),
        ),
        need(
            "python3 with standardwebhooks",
            "the events' signatures checked by the official library, and the reference receiver",
            "pip install -r examples/events_receiver/requirements.txt",
            python_has("standardwebhooks"),
        ),
        need(
            "python3 with openapi-spec-validator",
            "the API's OpenAPI document checked by a real validator",
            "pip install 'openapi-spec-validator>=0.7,<1'",
            python_has("openapi_spec_validator"),
        ),
        need(
            "curl",
            "the shop walk-through",
            "apt-get install curl",
            tool(None, "curl", &[]),
        ),
        need(
            "PostgreSQL's server binaries",
            "the dependency-fault tests on a private cluster",
            "apt-get install postgresql (initdb and pg_ctl under /usr/lib/postgresql/*/bin)",
            pg_server_binaries(),
        ),
    ]
}
