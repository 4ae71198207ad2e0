//! The man pages (`docs/man/`, clap_mangen: one page per command) and the shell completions
//! (`completions/`, clap_complete: bash, zsh, fish) are rendered from the clap definitions in
//! `src/cli.rs` and must equal the checked-in files, so that they never drift from the CLI.
//! `PAYRECON_BLESS=1 cargo nextest run --cargo-profile bench --test it cli_docs` rewrites them after a CLI change.
//! And `payrecon --version` names the version and the commit.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap_complete::Shell;

use crate::cli::harness::BIN;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The command tree as documented: the version without the commit (a page must not change
/// with every commit).
fn command() -> clap::Command {
    payrecon::cli::command().version(env!("CARGO_PKG_VERSION"))
}

/// Every file the CLI renders, by path relative to the repository.
fn rendered() -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut cmd = command().disable_help_subcommand(true);
    cmd.build();
    man_pages(cmd, &mut out);
    for (shell, file) in [
        (Shell::Bash, "payrecon.bash"),
        (Shell::Zsh, "_payrecon"),
        (Shell::Fish, "payrecon.fish"),
    ] {
        let mut buf = Vec::new();
        clap_complete::generate(shell, &mut command(), "payrecon", &mut buf);
        out.insert(format!("completions/{file}"), buf);
    }
    out
}

/// A page per command (clap_mangen, as its `generate_to` names them), with EXIT STATUS,
/// ENVIRONMENT, FILES and EXAMPLES from `payrecon::cli::man_extra` before VERSION.
fn man_pages(cmd: clap::Command, out: &mut BTreeMap<String, Vec<u8>>) {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned() {
        man_pages(sub, out);
    }
    let man = clap_mangen::Man::new(cmd);
    let name = man.get_filename();
    let mut page = Vec::new();
    man.render(&mut page).expect("render a man page");
    let page = String::from_utf8(page).unwrap();
    let extra = payrecon::cli::man_extra(name.trim_end_matches(".1"));
    let mut sections = String::new();
    let items = |title: &str, rows: &[(&str, &str)], s: &mut String| {
        s.push_str(&format!(".SH {title}\n"));
        for (k, v) in rows {
            s.push_str(&format!(".TP\n\\fB{}\\fR\n{}\n", roff(k), roff(v)));
        }
    };
    items("\"EXIT STATUS\"", extra.exit_status, &mut sections);
    items("ENVIRONMENT", payrecon::cli::MAN_ENVIRONMENT, &mut sections);
    items("FILES", payrecon::cli::MAN_FILES, &mut sections);
    items("EXAMPLES", extra.examples, &mut sections);
    let page = match page.find(".SH VERSION") {
        Some(at) => format!("{}{sections}{}", &page[..at], &page[at..]),
        None => format!("{page}{sections}"),
    };
    out.insert(format!("docs/man/{name}"), page.into_bytes());
}

/// Text as a roff line: backslashes and hyphens escaped, a leading dot or quote guarded.
fn roff(text: &str) -> String {
    let t = text.replace('\\', "\\e").replace('-', "\\-");
    if t.starts_with('.') || t.starts_with('\'') {
        format!("\\&{t}")
    } else {
        t
    }
}

fn checked_in(dir: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(Path::new(ROOT).join(dir)) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .map(|e| format!("{dir}/{}", e.unwrap().file_name().to_string_lossy()))
        .collect();
    names.sort();
    names
}

#[test]
fn man_pages_and_completions_match_the_cli() {
    let want = rendered();
    assert!(
        want.contains_key("docs/man/payrecon.1") && want.contains_key("docs/man/payrecon-run.1"),
        "{:?}",
        want.keys().collect::<Vec<_>>()
    );
    if std::env::var("PAYRECON_BLESS").is_ok_and(|v| v == "1") {
        for dir in ["docs/man", "completions"] {
            for stale in checked_in(dir) {
                std::fs::remove_file(Path::new(ROOT).join(stale)).unwrap();
            }
            std::fs::create_dir_all(Path::new(ROOT).join(dir)).unwrap();
        }
        for (path, bytes) in &want {
            std::fs::write(PathBuf::from(ROOT).join(path), bytes).unwrap();
        }
        return;
    }
    let mut have: Vec<String> = checked_in("docs/man");
    have.extend(checked_in("completions"));
    have.sort();
    let names: Vec<String> = want.keys().cloned().collect();
    assert_eq!(
        have, names,
        "the checked-in man pages and completions are not the CLI's; \
         rewrite them with PAYRECON_BLESS=1 cargo nextest run --cargo-profile bench --test it cli_docs"
    );
    for (path, bytes) in &want {
        let on_disk = std::fs::read(Path::new(ROOT).join(path)).unwrap();
        assert!(
            on_disk == *bytes,
            "{path} differs from what the CLI renders; rewrite it with \
             PAYRECON_BLESS=1 cargo nextest run --cargo-profile bench --test it cli_docs"
        );
    }
}

/// Every command has its page (`payrecon-events-replay.1` for `events replay`), listed in
/// its parent's SUBCOMMANDS as `name(1)`, and every long flag of a command is in its page
/// (the checked-in pages: the test above holds them equal to the rendered ones).
#[test]
fn the_man_pages_name_every_command_and_flag() {
    fn walk(cmd: &clap::Command, page: &str, parent: Option<&str>, pages: &mut Vec<String>) {
        let path = Path::new(ROOT).join(format!("docs/man/{page}.1"));
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for arg in cmd.get_arguments().filter_map(|a| a.get_long()) {
            if arg == "help" || arg == "version" {
                continue;
            }
            // roff escapes the hyphens of a flag.
            let flag = format!("\\-\\-{}", arg.replace('-', "\\-"));
            assert!(text.contains(&flag), "{page}.1 lacks --{arg}");
        }
        if let Some(parent) = parent {
            let listed = format!("{}(1)", page.replace('-', "\\-"));
            assert!(
                parent.contains(&listed),
                "{page} is not listed in its parent's page"
            );
        }
        pages.push(page.to_string());
        for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
            walk(
                sub,
                &format!("{page}-{}", sub.get_name()),
                Some(&text),
                pages,
            );
        }
    }
    let mut pages = Vec::new();
    walk(&command(), "payrecon", None, &mut pages);
    for want in ["payrecon-run", "payrecon-serve", "payrecon-events-replay"] {
        assert!(pages.iter().any(|p| p == want), "{pages:?}");
    }
}

/// `payrecon --version`: `payrecon <version> (commit <id>)`, the id the build stamped
/// (`build.rs`), which is the checkout's HEAD unless `PAYRECON_COMMIT` overrode it.
#[test]
fn version_names_the_version_and_the_commit() {
    let out = std::process::Command::new(BIN)
        .arg("--version")
        .output()
        .expect("run payrecon --version");
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let stamped = env!("PAYRECON_COMMIT");
    assert_eq!(
        text.trim(),
        format!("payrecon {} (commit {stamped})", env!("CARGO_PKG_VERSION"))
    );
    // Stamped from git (not from PAYRECON_COMMIT, not "unknown"): it is this checkout's HEAD.
    if env!("PAYRECON_COMMIT_SOURCE") == "git" {
        let g = std::process::Command::new("git")
            .args(["rev-parse", "--short=12", "HEAD"])
            .current_dir(ROOT)
            .output()
            .expect("git ran for build.rs, so it runs here");
        let head = String::from_utf8_lossy(&g.stdout).trim().to_string();
        assert_eq!(stamped, head, "{text}");
    }
}

/// Every page says how the command exits, what it reads from the environment and the files,
/// and shows an example (`payrecon::cli::man_extra`); `run`'s names its four codes.
#[test]
fn every_man_page_has_exit_status_environment_files_and_examples() {
    let pages = rendered();
    for (path, bytes) in pages.iter().filter(|(p, _)| p.starts_with("docs/man/")) {
        let page = String::from_utf8_lossy(bytes);
        for section in [
            ".SH \"EXIT STATUS\"",
            ".SH ENVIRONMENT",
            ".SH FILES",
            ".SH EXAMPLES",
        ] {
            assert!(page.contains(section), "{path} has no {section}");
        }
        assert!(page.contains("PAYRECON_CONFIG"), "{path}");
    }
    let run = String::from_utf8_lossy(&pages["docs/man/payrecon-run.1"]).into_owned();
    let exit = &run[run.find("EXIT STATUS").unwrap()..run.find(".SH ENVIRONMENT").unwrap()];
    for code in ["\\fB0\\fR", "\\fB1\\fR", "\\fB2\\fR", "\\fB3\\fR"] {
        assert!(
            exit.contains(code),
            "run's EXIT STATUS lacks {code}:\n{exit}"
        );
    }
}
