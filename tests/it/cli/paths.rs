//! docs/configuration.md, "Configuration", and docs/reference.md, `[database]`: relative paths
//! in the config (the SQLite file, every `*_file`) are relative to the config file's folder,
//! not to the working directory; commands that only read (`check`, `run --dry-run`, `status`,
//! `export`) never create or migrate a database, and a missing SQLite file is an error naming
//! its path.

use payrecon_testkit::sandbox::SANDBOX_API_KEY;

use super::harness::{command, output, World};

/// The sandbox config with a relative SQLite file and the provider's key in a relative
/// `api_key_file`, in folder `conf/` of the world; returns (config path, its folder).
fn relative_config(w: &World, db: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let folder = w.dir.path().join("conf");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("cg_key"), format!("{SANDBOX_API_KEY}\n")).unwrap();
    let text = payrecon_testkit::sandbox::config_toml(
        &format!("sqlite://{db}"),
        &w.cg_url,
        &w.rpc_url,
        "",
    )
    .replace(
        &format!("api_key = \"{SANDBOX_API_KEY}\""),
        "api_key_file = \"cg_key\"",
    );
    let path = folder.join("config.toml");
    std::fs::write(&path, text).unwrap();
    (path, folder)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relative_paths_follow_the_config_file_not_the_working_directory() {
    let w = World::sqlite().await;
    let (config, folder) = relative_config(&w, "ledger.db");
    let elsewhere = payrecon_testkit::tmp::dir().unwrap();
    let run = |args: &'static [&'static str]| {
        let mut cmd = command(&config, args);
        cmd.current_dir(elsewhere.path());
        output(cmd)
    };
    run(&["migrate"]).await.assert_code(0);
    assert!(
        folder.join("ledger.db").exists(),
        "the ledger is beside the config"
    );
    let out = run(&["run", "--format", "json"]).await;
    out.assert_code(0);
    assert_eq!(out.json()["providers"][0]["status"], "ok", "{}", out.stdout);
    let left: Vec<_> = std::fs::read_dir(elsewhere.path()).unwrap().collect();
    assert!(
        left.is_empty(),
        "nothing in the working directory: {left:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_that_only_read_never_create_a_database() {
    let w = World::sqlite().await;
    let (config, folder) = relative_config(&w, "missing.db");
    let db = folder.join("missing.db");
    for args in [
        &["run", "--dry-run"][..],
        &["check"],
        &["status"],
        &["export"],
        &["exceptions"],
    ] {
        let out = output(command(&config, args)).await;
        out.assert_code(1);
        out.assert_no_panic();
        let said = format!("{}{}", out.stdout, out.stderr);
        assert!(
            said.contains("missing.db"),
            "{args:?} names no path:\n{said}"
        );
        assert!(!db.exists(), "{args:?} created {}", db.display());
    }
}
