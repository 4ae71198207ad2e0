//! `payrecon operators add|remove` (docs/reference.md, `operators`) as a child process: the
//! password from stdin, written as an argon2id hash (verified here with the `argon2` crate) to
//! `console.operators_file` with mode 0600, never echoed; a new password replaces the hash;
//! what is refused (a bad name, an empty password, removing a stranger, a malformed file by
//! line number), and `check`'s console line naming a malformed line.

use std::process::Stdio;

use argon2::password_hash::{PasswordHash, PasswordVerifier};
use tokio::io::AsyncWriteExt;

use super::harness::{command, payrecon, Out};

async fn with_stdin(config: &std::path::Path, args: &[&str], input: &str) -> Out {
    let mut cmd = command(config, args);
    cmd.stdin(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn payrecon");
    let mut stdin = child.stdin.take().expect("piped stdin");
    stdin.write_all(input.as_bytes()).await.unwrap();
    drop(stdin);
    let out = child.wait_with_output().await.expect("payrecon finished");
    Out {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn verifies(file: &str, name: &str, password: &str) -> bool {
    let line = file
        .lines()
        .find(|l| l.starts_with(&format!("{name}:")))
        .unwrap_or_else(|| panic!("no {name} in {file}"));
    let hash = PasswordHash::new(&line[name.len() + 1..]).expect("a PHC string");
    assert_eq!(hash.algorithm.as_str(), "argon2id");
    argon2::Argon2::default()
        .verify_password(password.as_bytes(), &hash)
        .is_ok()
}

#[tokio::test]
async fn operators_are_added_with_argon2id_hashes_and_removed() {
    let (dir, url) = crate::support::sqlite_url();
    let ops = dir.path().join("operators");
    let config = dir.path().join("config.toml");
    let base = payrecon_testkit::sandbox::config_toml(
        &url,
        "http://127.0.0.1:1/api/v2",
        "http://127.0.0.1:1",
        "",
    );
    let toml = format!(
        "{base}\n[console]\noperators_file = \"{}\"\n",
        ops.display()
    );
    std::fs::write(&config, &toml).unwrap();

    let secret = "tr0ub4dor&3-horse";
    let out = with_stdin(
        &config,
        &["operators", "add", "ana@shop.example"],
        &format!("{secret}\n"),
    )
    .await;
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        out.stderr.contains("operator ana@shop.example added"),
        "{out:?}"
    );
    let out2 = with_stdin(&config, &["operators", "add", "bo"], "battery\n").await;
    assert_eq!(out2.code, Some(0), "{out2:?}");
    let file = std::fs::read_to_string(&ops).unwrap();
    assert!(verifies(&file, "ana@shop.example", secret), "{file}");
    assert!(!verifies(&file, "ana@shop.example", "battery"), "{file}");
    assert!(verifies(&file, "bo", "battery"), "{file}");
    for o in [&out, &out2] {
        assert!(
            !o.stdout.contains(secret) && !o.stderr.contains(secret),
            "{o:?}"
        );
    }
    assert!(!file.contains(secret));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&ops).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    // A new password replaces the hash; the old one no longer verifies.
    let out = with_stdin(&config, &["operators", "add", "bo"], "staple\n").await;
    assert!(out.stderr.contains("given a new password"), "{out:?}");
    let file = std::fs::read_to_string(&ops).unwrap();
    assert!(verifies(&file, "bo", "staple") && !verifies(&file, "bo", "battery"));

    // Refusals: exit 2, the file unchanged.
    for (args, input, says) in [
        (
            vec!["operators", "add", "a b"],
            "x\n",
            "operator name \"a b\"",
        ),
        (
            vec!["operators", "add", "cy"],
            "\n",
            "the password is empty",
        ),
        (
            vec!["operators", "remove", "nobody"],
            "",
            "no operator nobody",
        ),
    ] {
        let out = with_stdin(&config, &args, input).await;
        assert_eq!(out.code, Some(2), "{args:?}: {out:?}");
        assert!(out.stderr.contains(says), "{args:?}: {out:?}");
    }
    assert_eq!(std::fs::read_to_string(&ops).unwrap(), file);

    let out = payrecon(&config, &["operators", "remove", "bo"]).await;
    assert_eq!(out.code, Some(0), "{out:?}");
    let file = std::fs::read_to_string(&ops).unwrap();
    assert!(
        !file.contains("bo:") && file.contains("ana@shop.example:"),
        "{file}"
    );

    // A malformed file: exit 1, the line named, nothing written.
    std::fs::write(&ops, format!("{file}mallory\n")).unwrap();
    let out = with_stdin(&config, &["operators", "add", "dee"], "pw\n").await;
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr.contains("console.operators_file") && out.stderr.contains("line 2"),
        "{out:?}"
    );

    // With the console on, `check` names the malformed line as serve would refuse it.
    std::fs::write(&config, format!("{toml}enabled = true\n")).unwrap();
    let out = payrecon(&config, &["check"]).await;
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stdout
            .contains("FAILED console: console.operators_file")
            && out.stdout.contains("line 2"),
        "{out:?}"
    );
}
