//! Build-time inputs: `sqlx::migrate!` embeds `migrations/` (without the rerun line an
//! incremental build does not see a new migration file), and `payrecon --version` names the
//! commit (`PAYRECON_COMMIT`: from the environment when set, else `git rev-parse`, else
//! "unknown").

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim();
    (out.status.success() && !text.is_empty()).then(|| text.to_string())
}

fn main() {
    println!("cargo:rerun-if-changed=migrations");
    println!("cargo:rerun-if-env-changed=PAYRECON_COMMIT");
    let commit = std::env::var("PAYRECON_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(|| git(&["rev-parse", "--short=12", "HEAD"]))
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=PAYRECON_COMMIT={commit}");
    // Rebuilt when HEAD moves: HEAD itself, the branch it names, and packed refs.
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        let dir = Path::new(&dir);
        let mut watch = vec![dir.join("HEAD"), dir.join("packed-refs")];
        if let Ok(head) = std::fs::read_to_string(dir.join("HEAD")) {
            if let Some(r) = head.trim().strip_prefix("ref: ") {
                watch.push(dir.join(r));
            }
        }
        for p in watch.iter().filter(|p| p.exists()) {
            println!("cargo:rerun-if-changed={}", p.display());
        }
    }
}
