//! The house rules of `src/` (ARCHITECTURE.md, "House rules"), read from the source itself:
//! no file over 450 lines, no function over 80, no import cycle between files, and no more
//! `Result<_, String>` than the ones left (each a plain reason shown to a person).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const MAX_FILE_LINES: usize = 450;
const MAX_FN_LINES: usize = 80;

/// Every `.rs` file under `src/`, with its text.
fn sources() -> Vec<(PathBuf, String)> {
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
    walk(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut out);
    assert!(out.len() > 100, "src/ read: {} files", out.len());
    out
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
    let long: Vec<String> = sources()
        .iter()
        .map(|(p, t)| (rel(p), t.lines().count()))
        .filter(|(_, n)| *n > MAX_FILE_LINES)
        .map(|(p, n)| format!("{p}: {n} lines"))
        .collect();
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
    for (p, text) in sources() {
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

/// The module path of a file (`src/store/apply.rs` → `store::apply`; `mod.rs` and `lib.rs`
/// name their folder).
fn module_of(p: &Path) -> Vec<String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut parts: Vec<String> = p
        .strip_prefix(&src)
        .unwrap()
        .with_extension("")
        .iter()
        .map(|s| s.to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// Files each file names by path (`crate::a::b`, `super::x`, `self::x`), to the longest
/// module that is a file; a file's own submodules and its parent are left out (a folder's
/// `mod.rs` and its files are one room).
fn imports() -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let files = sources();
    let modules: BTreeSet<Vec<String>> = files.iter().map(|(p, _)| module_of(p)).collect();
    let mut edges = BTreeMap::new();
    for (p, text) in &files {
        let m = module_of(p);
        let mut to = BTreeSet::new();
        for line in text.lines() {
            let code = code_of(line);
            for (at, _) in code.match_indices("::") {
                let head_start = code[..at]
                    .rfind(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$' || c == ':'))
                    .map_or(0, |i| i + 1);
                let path: Vec<&str> = code[head_start..]
                    .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':' || c == '$'))
                    .next()
                    .unwrap_or("")
                    .split("::")
                    .filter(|s| !s.is_empty())
                    .collect();
                if head_start + path.first().map_or(0, |s| s.len()) != at
                    && !code[head_start..].starts_with('$')
                {
                    continue; // not the path's first segment
                }
                let mut base: Vec<String> = match path.first().copied() {
                    Some("crate" | "$crate") => Vec::new(),
                    Some("super") => m[..m.len().saturating_sub(1)].to_vec(),
                    Some("self") => m.clone(),
                    _ => continue,
                };
                for seg in path.iter().skip(1) {
                    if *seg == "super" {
                        base.pop();
                    } else {
                        base.push(seg.to_string());
                    }
                }
                while !base.is_empty() && !modules.contains(&base) {
                    base.pop();
                }
                let family = base.starts_with(&m) || m.starts_with(&base);
                if !base.is_empty() && !family {
                    to.insert(base);
                }
            }
        }
        edges.insert(m, to);
    }
    edges
}

/// The strongly connected components of more than one file (Tarjan).
fn cycles(edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<Vec<String>> {
    struct T<'a> {
        edges: &'a BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<&'a Vec<String>, (usize, usize)>,
        stack: Vec<&'a Vec<String>>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a Vec<String>) {
        t.index.insert(v, (t.next, t.next));
        t.next += 1;
        t.stack.push(v);
        for w in t.edges.get(v).into_iter().flatten() {
            let Some((w, _)) = t.edges.get_key_value(w) else {
                continue;
            };
            if !t.index.contains_key(w) {
                visit(t, w);
                let low = t.index[v].1.min(t.index[w].1);
                t.index.get_mut(v).unwrap().1 = low;
            } else if t.stack.contains(&w) {
                let low = t.index[v].1.min(t.index[w].0);
                t.index.get_mut(v).unwrap().1 = low;
            }
        }
        if t.index[v].0 == t.index[v].1 {
            let mut c = Vec::new();
            while let Some(w) = t.stack.pop() {
                c.push(w.join("::"));
                if w == v {
                    break;
                }
            }
            if c.len() > 1 {
                c.sort();
                t.out.push(c);
            }
        }
    }
    let mut t = T {
        edges,
        index: BTreeMap::new(),
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !t.index.contains_key(v) {
            visit(&mut t, v);
        }
    }
    t.out
}

#[test]
fn no_two_files_import_each_other() {
    let edges = imports();
    let named: usize = edges.values().map(BTreeSet::len).sum();
    assert!(named > 300, "imports found: {named}");
    let found = cycles(&edges);
    assert!(found.is_empty(), "import cycles:\n{found:#?}");
}

#[test]
fn the_cycle_finder_sees_one() {
    let m = |s: &str| s.split("::").map(String::from).collect::<Vec<_>>();
    let edges = BTreeMap::from([
        (m("a"), BTreeSet::from([m("b")])),
        (m("b"), BTreeSet::from([m("c")])),
        (m("c"), BTreeSet::from([m("a")])),
        (m("d"), BTreeSet::from([m("a")])),
    ]);
    assert_eq!(cycles(&edges), vec![vec!["a", "b", "c"]]);
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
    for (p, text) in sources() {
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

/// The repository stands alone: nothing in it cites a document it does not hold (the
/// contract is docs/reference.md and the docs beside it). The migrations keep their first
/// comments (a landed migration's text is fixed by its checksum) and the fuzz corpus is data.
#[test]
fn no_file_cites_a_document_outside_the_repository() {
    fn walk(dir: &Path, found: &mut Vec<String>, read: &mut usize) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for p in entries {
            let r = rel(&p);
            let skip = ["target", ".git", "migrations", "fuzz/corpus", "fuzz/target"];
            if skip.contains(&r.as_str()) || r.ends_with("node_modules") {
                continue;
            }
            if p.is_dir() {
                walk(&p, found, read);
            } else if let Ok(text) = std::fs::read_to_string(&p) {
                *read += 1;
                let needles = [concat!("SPEC", " §"), concat!("SPEC", ".md")];
                for (i, line) in text.lines().enumerate() {
                    if needles.iter().any(|n| line.contains(n)) {
                        found.push(format!("{r}:{}: {line}", i + 1));
                    }
                }
            }
        }
    }
    let (mut found, mut read) = (Vec::new(), 0);
    walk(Path::new(env!("CARGO_MANIFEST_DIR")), &mut found, &mut read);
    assert!(read > 300, "the repository read: {read} files");
    assert!(
        found.is_empty(),
        "citations of a document the repository does not hold:\n{}",
        found.join("\n")
    );
}
