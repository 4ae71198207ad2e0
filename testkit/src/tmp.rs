//! Temporary directories for the tests: on the machine's tmpfs (`/dev/shm`) where it has one,
//! so that a test's SQLite ledger, config files and logs cost no flush to disk. What the tests
//! check is what payrecon writes, not whether it survives a power cut; the product's own
//! durability settings are unchanged. `PAYRECON_TEST_TMPDIR` names another place.

use std::path::PathBuf;

/// A fresh directory, removed when the guard drops: under `PAYRECON_TEST_TMPDIR`, else
/// `/dev/shm`, else the system's temporary directory (where neither can be written).
pub fn dir() -> std::io::Result<tempfile::TempDir> {
    let base = std::env::var_os("PAYRECON_TEST_TMPDIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/dev/shm"));
    match tempfile::Builder::new()
        .prefix("payrecon-test-")
        .tempdir_in(&base)
    {
        Ok(d) => Ok(d),
        Err(_) if std::env::var_os("PAYRECON_TEST_TMPDIR").is_none() => tempfile::tempdir(),
        Err(e) => Err(std::io::Error::new(
            e.kind(),
            format!("PAYRECON_TEST_TMPDIR {}: {e}", base.display()),
        )),
    }
}
