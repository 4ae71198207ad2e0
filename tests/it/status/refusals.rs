//! Refusals: an unreachable PostgreSQL, a SQLite file that does not exist (not created), a
//! database without the schema, a configuration error: exit 1, one line, no secret.

use payrecon_testkit::sandbox::SANDBOX_API_KEY;

use crate::cli::harness::{payrecon, Out, World};

/// Exactly one non-empty line on stderr, without `secret`.
fn one_line(out: &Out, secret: &str) {
    out.assert_code(1);
    out.assert_no_panic();
    let lines: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| !l.trim().is_empty())
        .collect();
    assert_eq!(lines.len(), 1, "stderr:\n{}", out.stderr);
    assert!(lines[0].starts_with("payrecon: "), "{}", lines[0]);
    assert!(
        !out.stderr.contains(secret) && !out.stdout.contains(secret),
        "{}",
        out.stderr
    );
    assert!(out.stdout.is_empty(), "{}", out.stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_refuses_an_unreachable_or_missing_database_in_one_line() {
    let w = World::sqlite().await;
    let pg = "postgres://payrecon:pw_s3cr3t_7781@127.0.0.1:1/ledger";
    let toml = payrecon_testkit::sandbox::config_toml(pg, &w.cg_url, &w.rpc_url, "");
    let out = payrecon(&w.write("pg.toml", &toml), &["status", "--format", "json"]).await;
    one_line(&out, "pw_s3cr3t_7781");

    // A SQLite file that does not exist is not created (status never creates a database).
    let missing = w.dir.path().join("nope.db");
    let url = format!("sqlite://{}", missing.display());
    let toml = payrecon_testkit::sandbox::config_toml(&url, &w.cg_url, &w.rpc_url, "");
    let out = payrecon(&w.write("missing.toml", &toml), &["status"]).await;
    one_line(&out, SANDBOX_API_KEY);
    assert!(out.stderr.contains("payrecon migrate"), "{}", out.stderr);
    assert!(!missing.exists(), "status created {}", missing.display());

    // A database without the schema: the same, naming the fix.
    let empty = w.dir.path().join("empty.db");
    std::fs::File::create(&empty).unwrap();
    let url = format!("sqlite://{}", empty.display());
    let toml = payrecon_testkit::sandbox::config_toml(&url, &w.cg_url, &w.rpc_url, "");
    let out = payrecon(&w.write("empty.toml", &toml), &["status"]).await;
    one_line(&out, SANDBOX_API_KEY);
    assert!(out.stderr.contains("payrecon migrate"), "{}", out.stderr);
    assert_eq!(
        std::fs::metadata(&empty).unwrap().len(),
        0,
        "status wrote to an empty file"
    );

    // A configuration error is exit 1 too, naming the key.
    let out = payrecon(&w.write("bad.toml", "[database]\nurl = 5\n"), &["status"]).await;
    one_line(&out, SANDBOX_API_KEY);
    assert!(out.stderr.contains("url"), "{}", out.stderr);
}
