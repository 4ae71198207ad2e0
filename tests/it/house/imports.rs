//! Imports between the files and rooms of `src/`: read from the code (inline paths and `use`
//! trees, grouped or not), no cycle between two files or two rooms.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::{code_of, sources};

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

/// The paths a `use` tree names, its groups expanded: `super::{a, b::{c, self}}` →
/// `super::a`, `super::b::c`, `super::b` (whitespace already removed).
fn expand_use(tree: &str) -> Vec<String> {
    let Some(open) = tree.find('{') else {
        return vec![tree.split(" as ").next().unwrap_or(tree).to_string()];
    };
    let (prefix, rest) = (&tree[..open], &tree[open + 1..]);
    let inner = rest.strip_suffix('}').unwrap_or(rest);
    let (mut parts, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    let mut out = Vec::new();
    for part in parts.into_iter().filter(|p| !p.is_empty()) {
        if part == "self" {
            out.push(prefix.trim_end_matches(':').to_string());
        } else {
            out.extend(expand_use(part).into_iter().map(|p| format!("{prefix}{p}")));
        }
    }
    out
}

/// Every path a file's code names from `crate`, `super` or `self`: inline paths and each
/// leaf of its `use` trees (grouped or not, over several lines).
fn named_paths(text: &str) -> Vec<Vec<String>> {
    let code: Vec<String> = text.lines().map(code_of).collect();
    let joined = code.join("\n");
    let mut paths: Vec<String> = Vec::new();
    let mut rest = joined.as_str();
    while let Some(at) = rest.find("use ") {
        let starts_statement = rest[..at]
            .chars()
            .last()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        let tail = &rest[at + 4..];
        let end = tail.find(';').unwrap_or(tail.len());
        if starts_statement {
            let tree: String = tail[..end].split_whitespace().collect::<Vec<_>>().join(" ");
            let tree = tree
                .replace(" as ", "@")
                .replace(' ', "")
                .replace('@', " as ");
            paths.extend(expand_use(&tree));
        }
        rest = &tail[end.min(tail.len())..];
    }
    for line in &code {
        for (at, _) in line.match_indices("::") {
            let head_start = line[..at]
                .rfind(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$' || c == ':'))
                .map_or(0, |i| i + 1);
            let path = line[head_start..]
                .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':' || c == '$'))
                .next()
                .unwrap_or("");
            let first = path.split("::").next().unwrap_or("");
            if head_start + first.len() == at || line[head_start..].starts_with('$') {
                paths.push(path.to_string());
            }
        }
    }
    paths
        .iter()
        .map(|p| {
            p.split("::")
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect()
        })
        .collect()
}

/// Files each file names by path (`crate::a::b`, `super::x`, `self::x`, grouped `use`
/// trees too), to the longest module that is a file; a file's own submodules and its parent
/// are left out (a folder's `mod.rs` and its files are one room).
fn imports() -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let files = sources();
    let modules: BTreeSet<Vec<String>> = files.iter().map(|(p, _)| module_of(p)).collect();
    let mut edges = BTreeMap::new();
    for (p, text) in &files {
        let m = module_of(p);
        let mut to = BTreeSet::new();
        for path in named_paths(text) {
            let mut base: Vec<String> = match path.first().map(String::as_str) {
                Some("crate" | "$crate") => Vec::new(),
                Some("super") => m[..m.len().saturating_sub(1)].to_vec(),
                Some("self") => m.clone(),
                _ => continue,
            };
            for seg in path.iter().skip(1) {
                if seg == "super" {
                    base.pop();
                } else {
                    base.push(seg.clone());
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

/// The rooms (`src/<room>/`, `src/<room>.rs`) import one way: no two of them import each
/// other, directly or around a circle (a helper two rooms share lives below both).
#[test]
fn no_two_rooms_import_each_other() {
    let mut rooms: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (from, to) in imports() {
        let Some(room) = from.first() else { continue };
        let entry = rooms.entry(vec![room.clone()]).or_default();
        entry.extend(
            to.iter()
                .filter(|t| t[0] != *room)
                .map(|t| vec![t[0].clone()]),
        );
    }
    assert!(rooms.len() > 15, "rooms: {rooms:?}");
    let found = cycles(&rooms);
    assert!(
        found.is_empty(),
        "rooms that import each other:\n{found:#?}"
    );
}

#[test]
fn grouped_imports_are_read() {
    let text =
        "use super::{view::{self, Who}, query::PAGE};\nuse crate::a::{\n    b,\n    c as d,\n};\n";
    let paths: Vec<String> = named_paths(text).iter().map(|p| p.join("::")).collect();
    for want in [
        "super::view",
        "super::view::Who",
        "super::query::PAGE",
        "crate::a::b",
        "crate::a::c",
    ] {
        assert!(paths.iter().any(|p| p == want), "{want} not in {paths:?}");
    }
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
