//! Build-time inputs: the migrations under `migrations/<backend>/`, listed into
//! `$OUT_DIR/migrations.rs` for `src/store/migrate.rs` to embed (without the rerun line an
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

/// `migrations/<dir>` as the Rust constant `name`: `(version, description, SQL)` per
/// `<version>_<description>.sql` file, in version order, read the way sqlx reads a migrations
/// folder (the description is the rest of the name with `_` as spaces). A reversible pair
/// (`.up.sql`, `.down.sql`) is refused: payrecon's migrations only go forward.
fn migrations(dir: &str, name: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("migrations")
        .join(dir);
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&root).unwrap_or_else(|e| panic!("{}: {e}", root.display())) {
        let path = entry.expect("a migrations entry").path();
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        let Some((version, rest)) = file.split_once('_') else {
            continue;
        };
        let Some(description) = rest.strip_suffix(".sql") else {
            continue;
        };
        assert!(
            !description.ends_with(".up") && !description.ends_with(".down"),
            "{file}: reversible migrations are not supported"
        );
        let version: i64 = version
            .parse()
            .unwrap_or_else(|_| panic!("{file}: the name must start with a version number"));
        found.push((version, description.replace('_', " "), path));
    }
    found.sort_by_key(|m| m.0);
    let mut out =
        format!("/// `migrations/{dir}`.\npub(crate) const {name}: Embedded = Embedded(&[\n");
    for (version, description, path) in found {
        out += &format!(
            "    ({version}, {description:?}, include_str!({:?})),\n",
            path.display().to_string()
        );
    }
    out + "]);\n"
}

fn main() {
    println!("cargo:rerun-if-changed=migrations");
    let out = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("migrations.rs");
    let code = ["sqlite", "postgres", "mysql"]
        .map(|d| migrations(d, &d.to_uppercase()))
        .join("\n");
    std::fs::write(&out, code).expect("writing migrations.rs");
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
