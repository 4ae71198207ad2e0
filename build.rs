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
    let given = std::env::var("PAYRECON_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty());
    let (commit, source) = match given {
        Some(c) => (c, "env"),
        None => match git(&["rev-parse", "--short=12", "HEAD"]) {
            Some(c) => (c, "git"),
            None => ("unknown".to_string(), "none"),
        },
    };
    println!("cargo:rustc-env=PAYRECON_COMMIT={commit}");
    println!("cargo:rustc-env=PAYRECON_COMMIT_SOURCE={source}");
    // Rebuilt when HEAD moves: HEAD itself (per worktree), the branch it names and packed refs
    // (in the common git directory, shared by worktrees).
    if let (Some(dir), Some(common)) = (
        git(&["rev-parse", "--git-dir"]),
        git(&["rev-parse", "--git-common-dir"]),
    ) {
        let (dir, common) = (Path::new(&dir), Path::new(&common));
        let mut watch = vec![dir.join("HEAD"), common.join("packed-refs")];
        if let Ok(head) = std::fs::read_to_string(dir.join("HEAD")) {
            if let Some(r) = head.trim().strip_prefix("ref: ") {
                watch.push(common.join(r));
            }
        }
        for p in watch.iter().filter(|p| p.exists()) {
            println!("cargo:rerun-if-changed={}", p.display());
        }
    }
}
