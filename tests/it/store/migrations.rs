//! A migration that has landed is never edited: sqlx keeps each applied migration's checksum
//! and refuses to start on a database whose migration has changed since ("previously applied
//! but has been modified"), so an edit, even of a comment, stops every deployment that applied
//! it. A change goes into a new migration. Each landed migration's SHA-384 is pinned here (its
//! first 16 hex digits); a new migration is added to the list when it lands.

use std::fmt::Write;

/// `(backend directory, version, first 16 hex digits of the SHA-384 sqlx computes)`.
const LANDED: &[(&str, i64, &str)] = &[
    ("sqlite", 1, "40c3a57e91c1c374"),
    ("sqlite", 2, "51f1712715b9953f"),
    ("sqlite", 3, "2a66bd412523e587"),
    ("sqlite", 4, "dcd398c8a0477ec5"),
    ("sqlite", 5, "178e7a74060e0e08"),
    ("sqlite", 6, "555ab386af9ac3ab"),
    ("sqlite", 7, "d16a1f59d52f6133"),
    ("sqlite", 8, "76a1f0eeb699cb99"),
    ("sqlite", 9, "3e471474d6cb0472"),
    ("sqlite", 10, "153254f93e0b2ef7"),
    ("sqlite", 11, "59d1d9f2ca60d692"),
    ("sqlite", 12, "de30c179a25e5d9c"),
    ("sqlite", 13, "ef29bbadc8ec26e7"),
    ("sqlite", 14, "d270ce887aea1b49"),
    ("sqlite", 15, "284caec35bfed72e"),
    ("sqlite", 16, "854e7398a1257230"),
    ("sqlite", 17, "afd197698375205e"),
    ("postgres", 1, "1caff73826f9b85f"),
    ("postgres", 2, "51f1712715b9953f"),
    ("postgres", 3, "cd89ab917d7d6380"),
    ("postgres", 4, "dcd398c8a0477ec5"),
    ("postgres", 5, "e60915c62ffafba5"),
    ("postgres", 6, "9d10565acf075ab7"),
    ("postgres", 7, "38e11a87c90cc59a"),
    ("postgres", 8, "99a107fce618ce4c"),
    ("postgres", 9, "7d90fbf6ee87a96b"),
    ("postgres", 10, "34ea0887ab027ff6"),
    ("postgres", 11, "331f3522dfe2d033"),
    ("postgres", 12, "b0e907f48df8f01b"),
    ("postgres", 13, "4ec85c88c50252b5"),
    ("postgres", 14, "af6bc8a53013097d"),
    ("postgres", 15, "86da9ef05933fd82"),
    ("postgres", 16, "854e7398a1257230"),
    ("postgres", 17, "f2644af8ba32b8df"),
    ("mysql", 1, "b95207b2a7dc4642"),
    ("mysql", 2, "5b201db01a68f537"),
    ("mysql", 3, "7a12326961f388d7"),
    ("mysql", 4, "42c1a5b69cee6f37"),
    ("mysql", 5, "f115de509db4da3e"),
];

#[tokio::test]
async fn a_landed_migration_is_never_edited() {
    let mut found = Vec::new();
    for dir in ["sqlite", "postgres", "mysql"] {
        let path = std::path::PathBuf::from("migrations").join(dir);
        let migrator = sqlx::migrate::Migrator::new(path.as_path())
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for m in migrator.iter() {
            let hex = m.checksum.iter().fold(String::new(), |mut s, b| {
                let _ = write!(s, "{b:02x}");
                s
            });
            found.push((dir, m.version, hex[..16].to_string()));
        }
    }
    let mut problems = Vec::new();
    for (dir, version, pinned) in LANDED {
        match found.iter().find(|f| f.0 == *dir && f.1 == *version) {
            None => problems.push(format!("migrations/{dir} version {version} is gone")),
            Some(f) if f.2 != *pinned => problems.push(format!(
                "migrations/{dir} version {version} was edited after it landed \
                 (pinned {pinned}, now {}): put the change in a new migration",
                f.2
            )),
            Some(_) => {}
        }
    }
    for (dir, version, hex) in &found {
        if !LANDED.iter().any(|l| l.0 == *dir && l.1 == *version) {
            problems.push(format!(
                "migrations/{dir} version {version} is new: pin it in LANDED when it lands: \
                 (\"{dir}\", {version}, \"{hex}\"),"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
