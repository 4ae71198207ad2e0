//! The store's errors, by what a caller can do about them (retry, stop writing, fix the
//! configuration), and the database error codes that decide it.

/// What went wrong with the database, by what a caller can do about it.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A fenced write batch found its lease taken over: nothing of the batch was written,
    /// and this instance must stop writing for the provider.
    #[error(
        "database: the lease on {provider} was lost (another instance took over): nothing applied"
    )]
    LeaseLost { provider: String },
    /// A statement failed (`what` payrecon was doing).
    #[error("database: {what}: {source}")]
    Query {
        what: String,
        #[source]
        source: sqlx::Error,
    },
    /// A statement named a payrecon table the database does not have: the schema was never
    /// migrated (or is older than this binary). Told by the database's error code
    /// (`missing_table`), never by the caller reading the text.
    #[error("database: {what}: {source}; run `payrecon migrate` first")]
    NoSchema {
        what: String,
        #[source]
        source: sqlx::Error,
    },
    /// The database could not be reached or opened (the URL without its password).
    #[error("database: connect to {url}: {reason}")]
    Connect { url: String, reason: String },
    /// The schema could not be brought up to date.
    #[error("database: migrate the {backend} schema: {reason}")]
    Migrate {
        backend: &'static str,
        reason: String,
    },
    /// A request payrecon refuses, or data it cannot use (no such table or run, a value that
    /// does not parse).
    #[error("database: {0}")]
    Invalid(String),
    /// An operator's decision lost its exception to another (it was resolved meanwhile):
    /// nothing of the decision was written.
    #[error("database: exception {id} is no longer open: nothing applied")]
    ExceptionTaken { id: i64 },
    /// An operator's decision would change nothing now: the order or the payment changed
    /// since it was read. Nothing of the decision was written.
    #[error(
        "database: the order or the payment changed since it was read (another writer got \
         there first): nothing applied"
    )]
    Unchanged,
}

/// Why a write batch of the apply path (`store::apply`) ended without committing. The outcomes
/// a caller acts on are variants, never texts to compare.
#[derive(Debug)]
pub(crate) enum WriteError {
    /// The batch's lease is no longer this instance's (fenced): `StoreError::LeaseLost`.
    Fenced,
    /// The operator's exception is no longer open: `StoreError::ExceptionTaken`.
    Taken,
    /// The operator's decision changed nothing (the order moved, or the payment was credited,
    /// meanwhile): `StoreError::Unchanged`.
    Unchanged,
    /// A statement failed; tried again when `is_retryable`.
    Db(sqlx::Error),
    /// A statement wrote another number of rows than the rows it was given, which the batch's
    /// locks rule out: the batch is undone rather than committed half-right.
    Miscounted {
        what: &'static str,
        expected: u64,
        written: u64,
    },
}

impl From<sqlx::Error> for WriteError {
    fn from(e: sqlx::Error) -> WriteError {
        WriteError::Db(e)
    }
}

impl StoreError {
    /// Worth trying again later as it is: the database was busy, a connection broke, or a
    /// transaction lost a conflict. The lease lost, a bad request or schema never is.
    pub fn is_retryable(&self) -> bool {
        match self {
            StoreError::Query { source, .. } => {
                is_retryable(source)
                    || matches!(
                        source,
                        sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed
                    )
            }
            StoreError::Connect { .. } => true,
            StoreError::LeaseLost { .. }
            | StoreError::NoSchema { .. }
            | StoreError::Migrate { .. }
            | StoreError::Invalid(_)
            | StoreError::ExceptionTaken { .. }
            | StoreError::Unchanged => false,
        }
    }
}

/// Whether `e` says a payrecon table does not exist: PostgreSQL's `42P01` (undefined table),
/// MariaDB/MySQL's 1146 (no such table); SQLite has no code of its own for it (its generic
/// error, 1), so there its message names it (`no such table: payrecon_…`).
pub(super) fn missing_table(e: &sqlx::Error) -> bool {
    let Some(d) = e.as_database_error() else {
        return false;
    };
    let ours = d.message().contains("payrecon_");
    let by_code = match d.code().as_deref() {
        Some("42P01") => true,
        Some("1") => d.message().starts_with("no such table"),
        _ => d
            .try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>()
            .is_some_and(|m| m.number() == 1146),
    };
    ours && by_code
}

pub(super) fn is_unique_violation(e: &sqlx::Error) -> bool {
    e.as_database_error()
        .is_some_and(|d| d.is_unique_violation())
}

/// Deadlock, serialization failure (PostgreSQL, MariaDB/MySQL), lock wait timeout
/// (MariaDB/MySQL) or a busy database (SQLite): try again.
pub(super) fn is_retryable(e: &sqlx::Error) -> bool {
    let by_code = e
        .as_database_error()
        .and_then(|d| d.code())
        .is_some_and(|c| matches!(c.as_ref(), "40P01" | "40001" | "5" | "261" | "517" | "773"));
    by_code || is_lock_wait_timeout(e)
}

/// MariaDB/MySQL's lock wait timeout (1205) is SQLSTATE `HY000`, a code many errors share: it
/// is told by its number. (A deadlock, 1213, is `40001`.)
fn is_lock_wait_timeout(e: &sqlx::Error) -> bool {
    e.as_database_error()
        .and_then(|d| d.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>())
        .is_some_and(|d| d.number() == 1205)
}
