use super::*;

/// A hash made by `set`, checked by `verify`; a wrong password, an unknown name and a removed
/// operator are refused; the text written parses back the same.
#[test]
fn a_set_password_verifies_and_the_file_parses_back() {
    let mut ops = Operators::default();
    ops.set("ana@shop.example", "correct horse").unwrap();
    ops.set("bo", "battery staple").unwrap();
    assert!(ops.verify("ana@shop.example", "correct horse"));
    assert!(!ops.verify("ana@shop.example", "correct hors"));
    assert!(!ops.verify("nobody", "correct horse"));
    let text = ops.render();
    assert!(
        text.starts_with("ana@shop.example:$argon2id$v=19$"),
        "{text}"
    );
    assert!(!text.contains("correct horse"));
    let back = Operators::parse(&text, "console.operators_file").unwrap();
    assert_eq!(back, ops);
    ops.set("bo", "another").unwrap();
    assert!(ops.verify("bo", "another") && !ops.verify("bo", "battery staple"));
    assert!(ops.remove("bo"));
    assert!(!ops.remove("bo"));
    assert_eq!(ops.names().collect::<Vec<_>>(), ["ana@shop.example"]);
    assert!(ops.set("a b", "x").is_err());
    assert!(ops.set("ok", "").is_err());
}

/// What the file may not hold, each error naming the key and the line.
#[test]
fn a_malformed_line_or_another_hash_is_refused_by_line_number() {
    let good = "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$\
                0Jzt0p8Yx3n1nSdGqO6WkoEoBTmCT0bWbLDjlQpRJ7M";
    let cases = [
        (
            "# operators\n\nana\n".to_string(),
            "line 3: not \"name:argon2id-hash\"",
        ),
        (
            format!("ana:{good}\nbo:secret\n"),
            "line 2: the hash is not a PHC string",
        ),
        (
            format!("ana:{}\n", good.replace("argon2id", "argon2i")),
            "line 1: the hash is argon2i, not argon2id",
        ),
        (
            format!("ana:{good}\nana:{good}\n"),
            "line 2: operator ana twice",
        ),
        (format!("a b:{good}\n"), "line 1: operator name \"a b\""),
    ];
    for (text, want) in cases {
        let e = Operators::parse(&text, "console.operators_file").unwrap_err();
        assert!(e.0.starts_with("console.operators_file: "), "{e}");
        assert!(e.0.contains(want), "{text:?}: {e}");
    }
    let missing = Operators::load(
        Path::new("/nonexistent/operators"),
        "console.operators_file",
    );
    let e = missing.unwrap_err();
    assert!(
        e.0.contains("console.operators_file (/nonexistent/operators): cannot be read"),
        "{e}"
    );
}

/// `save` writes mode 0600 and replaces the file whole.
#[cfg(unix)]
#[test]
fn the_file_is_written_private_and_whole() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("operators");
    let mut ops = Operators::default();
    ops.set("ana", "pw").unwrap();
    ops.save(&path).unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert_eq!(Operators::load(&path, "k").unwrap(), ops);
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "no temporary file left"
    );
}
