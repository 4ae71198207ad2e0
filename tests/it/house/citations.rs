//! The repository stands alone: no citation of a document it does not hold.

use std::path::Path;

use super::rel;

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
