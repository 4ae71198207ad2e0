//! The house rules of `src/` (ARCHITECTURE.md, "House rules"), read from the source itself:
//! no file over 450 lines, no function over 80, no import cycle between files or rooms
//! (`imports`), no more `Result<_, String>` than the ones left (each a plain reason shown to a
//! person), and no citation of a document the repository does not hold (`citations`). The
//! lengths and the string errors are the sandbox crate's rules too (`sandbox/src/`: the demo's
//! stand-ins, out of the product's `src/`), and the limit on a file's length holds for the
//! tests, the testkit and the benchmarks: a long test file is split by what its tests are
//! about, as a long source file is.

use std::path::{Path, PathBuf};

mod citations;
mod imports;

const MAX_FILE_LINES: usize = 450;
const MAX_FN_LINES: usize = 80;

/// Every `.rs` file under `src/`, with its text.
fn sources() -> Vec<(PathBuf, String)> {
    let out = sources_in("src");
    assert!(out.len() > 100, "src/ read: {} files", out.len());
    out
}

/// `src/` and the sandbox crate's `sandbox/src/`: what the lengths and string errors are
/// held to.
fn house_sources() -> Vec<(PathBuf, String)> {
    let sandbox = sources_in("sandbox/src");
    assert!(
        sandbox.len() > 5,
        "sandbox/src/ read: {} files",
        sandbox.len()
    );
    sources().into_iter().chain(sandbox).collect()
}

/// Every `.rs` file under `dir` (a folder of the repository), with its text.
fn sources_in(dir: &str) -> Vec<(PathBuf, String)> {
    fn walk(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&p).unwrap();
                out.push((p, text));
            }
        }
    }
    let mut out = Vec::new();
    walk(&Path::new(env!("CARGO_MANIFEST_DIR")).join(dir), &mut out);
    out
}

/// `path: n lines` of each file of `files` over the limit.
fn over_the_limit(files: &[(PathBuf, String)]) -> Vec<String> {
    files
        .iter()
        .map(|(p, t)| (rel(p), t.lines().count()))
        .filter(|(_, n)| *n > MAX_FILE_LINES)
        .map(|(p, n)| format!("{p}: {n} lines"))
        .collect()
}

fn rel(p: &Path) -> String {
    p.strip_prefix(env!("CARGO_MANIFEST_DIR"))
        .unwrap()
        .display()
        .to_string()
}

/// A line without its comment and the contents of its string and char literals (enough for
/// counting braces in this code base, whose multi-line strings hold no unbalanced brace).
fn code_of(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    let mut in_str = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' if in_str => {
                chars.next();
            }
            '"' => in_str = !in_str,
            '/' if !in_str && chars.peek() == Some(&'/') => break,
            '\'' if !in_str => {
                // A char literal ('{', '\'') or a lifetime ('a): skip a literal whole.
                let rest: String = chars.clone().take(3).collect();
                if rest.starts_with('\\') {
                    chars.nth(2);
                } else if rest.chars().nth(1) == Some('\'') {
                    chars.nth(1);
                }
            }
            _ if in_str => {}
            c => out.push(c),
        }
    }
    out
}

/// `(line, name, length)` of every function with a body.
fn functions(text: &str) -> Vec<(usize, String, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let code = code_of(line);
        let Some(at) = code.find("fn ") else { continue };
        let before = code[..at].trim();
        let words = ["", "pub", "async", "const", "unsafe", "extern"];
        let is_item = before
            .split(|c: char| c.is_whitespace())
            .all(|w| words.contains(&w) || w.starts_with("pub("));
        if !is_item {
            continue;
        }
        let name: String = code[at + 3..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let (mut depth, mut opened) = (0i64, false);
        for (j, l) in lines.iter().enumerate().skip(i) {
            let c = code_of(l);
            if !opened && depth == 0 && c.trim_end().ends_with(';') {
                break; // a declaration without a body
            }
            for ch in c.chars() {
                match ch {
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            if opened && depth == 0 {
                out.push((i + 1, name.clone(), j - i + 1));
                break;
            }
        }
    }
    out
}

#[test]
fn no_file_is_over_450_lines() {
    let long = over_the_limit(&house_sources());
    assert!(
        long.is_empty(),
        "over {MAX_FILE_LINES} lines:\n{}",
        long.join("\n")
    );
}

/// The same limit for the tests, the testkit and the benchmarks, each folder read whole (the
/// counts make sure none was missed: 215 files when this test was written).
#[test]
fn no_test_testkit_or_bench_file_is_over_450_lines() {
    let mut files = Vec::new();
    for (dir, least) in [("tests", 150), ("testkit", 20), ("benches", 10)] {
        let found = sources_in(dir);
        assert!(found.len() >= least, "{dir}/ read: {} files", found.len());
        files.extend(found);
    }
    let long = over_the_limit(&files);
    assert!(
        long.is_empty(),
        "over {MAX_FILE_LINES} lines:\n{}",
        long.join("\n")
    );
}

#[test]
fn no_function_is_over_80_lines() {
    let mut long = Vec::new();
    let mut seen = 0;
    for (p, text) in house_sources() {
        for (line, name, n) in functions(&text) {
            seen += 1;
            if n > MAX_FN_LINES {
                long.push(format!("{}:{line} {name}: {n} lines", rel(&p)));
            }
        }
    }
    assert!(seen > 1000, "functions found: {seen}");
    assert!(
        long.is_empty(),
        "over {MAX_FN_LINES} lines:\n{}",
        long.join("\n")
    );
}

#[test]
fn the_counter_of_long_functions_sees_one() {
    let body = "    let x = 1;\n".repeat(MAX_FN_LINES);
    let text = format!("pub(crate) async fn long() {{\n{body}}}\nfn short() {{ '{{'; }}\n");
    let found = functions(&text);
    assert_eq!(
        found,
        vec![
            (1, "long".into(), MAX_FN_LINES + 2),
            (MAX_FN_LINES + 3, "short".into(), 1)
        ]
    );
}

/// `Result<_, String>` left in `src/` (tests aside): each a reason for a person, with no
/// caller that tells one from another. The count may only fall.
const STRING_ERRORS_LEFT: usize = 4;

/// Whether the `Result<` whose arguments `args` starts has `String` as its error type.
fn error_is_string(args: &str) -> bool {
    let (mut depth, mut last) = (0usize, 0usize);
    for (i, c) in args.char_indices() {
        match c {
            '<' | '(' | '[' => depth += 1,
            ',' if depth == 0 => last = i + 1,
            '>' if depth == 0 => return last > 0 && args[last..i].trim() == "String",
            '>' | ')' | ']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

#[test]
fn string_errors_do_not_grow() {
    assert!(error_is_string("u64, String>"));
    assert!(!error_is_string(
        "Query<HashMap<String, String>>, QueryRejection>"
    ));
    let mut found = Vec::new();
    for (p, text) in house_sources() {
        let path = rel(&p);
        if path.ends_with("/tests.rs") || path.contains("/tests/") {
            continue;
        }
        for (i, line) in text.lines().enumerate() {
            let code = code_of(line);
            let n = code
                .match_indices("Result<")
                .filter(|(at, _)| error_is_string(&code[at + 7..]))
                .count();
            found.extend((0..n).map(|_| format!("{path}:{}", i + 1)));
        }
    }
    assert!(
        found.len() <= STRING_ERRORS_LEFT,
        "{} Result<_, String> (at most {STRING_ERRORS_LEFT}):\n{}",
        found.len(),
        found.join("\n")
    );
}

/// Exit codes are decided in one place (`cli::Exit`): no other file makes an `ExitCode` from
/// a number.
#[test]
fn exit_codes_are_decided_in_one_place() {
    let files = sources();
    let makers: Vec<String> = files
        .iter()
        .filter(|(_, text)| text.lines().any(|l| code_of(l).contains("ExitCode::from(")))
        .map(|(p, _)| rel(p))
        .collect();
    assert_eq!(
        makers,
        ["src/cli/mod.rs"],
        "files that make exit codes: {makers:?}"
    );
}
