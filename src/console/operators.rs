//! The operators file (`console.operators_file`; docs/reference.md, `operators`): one line per
//! operator, `name:hash`, the hash an argon2id PHC string. Written only by `payrecon operators
//! add|remove` (mode 0600, replaced whole through a temporary file); read by the console at
//! start. A malformed line names its line number; a hash that is not argon2id is refused; a
//! password is never kept, logged or shown.

use std::path::Path;

use argon2::password_hash::rand_core::OsRng;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;

/// The longest operator name (it is shown on decisions: `resolved_by`).
pub const MAX_NAME: usize = 64;

/// Why the operators file, or a change to it, cannot be used.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct OperatorsError(pub String);

fn fail(msg: impl Into<String>) -> OperatorsError {
    OperatorsError(msg.into())
}

/// The operators, in the file's order.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Operators {
    entries: Vec<(String, String)>,
}

/// An operator's name: 1 to 64 of letters, digits, `.`, `_`, `-` and `@` (an email reads).
pub fn check_name(name: &str) -> Result<(), OperatorsError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '@'));
    match ok {
        true => Ok(()),
        false => Err(fail(format!(
            "operator name {name:?}: 1 to {MAX_NAME} letters, digits, '.', '_', '-' or '@'"
        ))),
    }
}

impl Operators {
    /// Parses the file's text; `what` names it in errors (the key and path).
    pub fn parse(text: &str, what: &str) -> Result<Operators, OperatorsError> {
        let mut out = Operators::default();
        for (i, line) in text.lines().enumerate() {
            let n = i + 1;
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((name, hash)) = line.split_once(':') else {
                return Err(fail(format!(
                    "{what}: line {n}: not \"name:argon2id-hash\""
                )));
            };
            check_name(name).map_err(|e| fail(format!("{what}: line {n}: {e}")))?;
            let parsed = PasswordHash::new(hash)
                .map_err(|_| fail(format!("{what}: line {n}: the hash is not a PHC string")))?;
            if parsed.algorithm.as_str() != "argon2id" {
                return Err(fail(format!(
                    "{what}: line {n}: the hash is {}, not argon2id",
                    parsed.algorithm
                )));
            }
            if out.get(name).is_some() {
                return Err(fail(format!("{what}: line {n}: operator {name} twice")));
            }
            out.entries.push((name.to_string(), hash.to_string()));
        }
        Ok(out)
    }

    /// Reads the file at `path`; a missing file is an error naming `key` and the path.
    pub fn load(path: &Path, key: &str) -> Result<Operators, OperatorsError> {
        let what = format!("{key} ({})", path.display());
        let text = std::fs::read_to_string(path)
            .map_err(|e| fail(format!("{what}: cannot be read: {e}")))?;
        Operators::parse(&text, &what)
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, h)| h.as_str())
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(n, _)| n.as_str())
    }

    /// Whether `password` is `name`'s. An unknown name costs a hash too (no timing tells
    /// which names exist).
    pub fn verify(&self, name: &str, password: &str) -> bool {
        const DUMMY: &str = "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$\
                             0Jzt0p8Yx3n1nSdGqO6WkoEoBTmCT0bWbLDjlQpRJ7M";
        let hash = self.get(name).unwrap_or(DUMMY);
        let Ok(parsed) = PasswordHash::new(hash) else {
            return false;
        };
        let ok = Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok();
        ok && self.get(name).is_some()
    }

    /// Adds `name` with `password` hashed (argon2id, a fresh salt), or replaces its hash.
    pub fn set(&mut self, name: &str, password: &str) -> Result<(), OperatorsError> {
        check_name(name)?;
        if password.is_empty() {
            return Err(fail("the password is empty"));
        }
        let salt = SaltString::generate(&mut OsRng);
        let hash = Argon2::default()
            .hash_password(password.as_bytes(), &salt)
            .map_err(|e| fail(format!("hashing the password: {e}")))?
            .to_string();
        match self.entries.iter_mut().find(|(n, _)| n == name) {
            Some(entry) => entry.1 = hash,
            None => self.entries.push((name.to_string(), hash)),
        }
        Ok(())
    }

    /// Removes `name`; whether it was there.
    pub fn remove(&mut self, name: &str) -> bool {
        let before = self.entries.len();
        self.entries.retain(|(n, _)| n != name);
        self.entries.len() != before
    }

    /// The file's text.
    pub fn render(&self) -> String {
        self.entries
            .iter()
            .map(|(n, h)| format!("{n}:{h}\n"))
            .collect()
    }

    /// Writes the file at `path` whole: a temporary file beside it (mode 0600), then renamed.
    pub fn save(&self, path: &Path) -> Result<(), OperatorsError> {
        let shown = path.display();
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let tmp = dir.join(format!(
            ".{}.tmp",
            path.file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("operators")
        ));
        write_private(&tmp, self.render().as_bytes())
            .map_err(|e| fail(format!("{shown}: cannot be written: {e}")))?;
        std::fs::rename(&tmp, path).map_err(|e| fail(format!("{shown}: cannot be replaced: {e}")))
    }
}

#[cfg(unix)]
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

#[cfg(not(unix))]
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::write(path, bytes)
}

#[cfg(test)]
mod tests;
