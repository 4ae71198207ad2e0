//! What differs between the backends' SQL, spelled once per backend: placeholders, how a timestamp
//! is bound and read, how a write transaction begins, the ledger row's columns. Each backend
//! implements `Dialect` in its own folder (`sqlite/`, `postgres/`, `mysql/`); `backend.rs`'s
//! `dispatch!` is the one place that matches the pool a `Store` holds.
//!
//! A statement whose text differs only in these spellings is written once, in the module of
//! its topic, with `D::p(n)`, `D::ts(n)` and the like; a statement that differs in shape (a
//! list bound as a JSON array on SQLite, as an array on PostgreSQL) is a method of the
//! backend, beside its other SQL.

/// The spellings of one backend's SQL. Implemented on sqlx's database types.
pub(crate) trait Dialect: sqlx::Database {
    /// `"sqlite"`, `"postgres"` or `"mysql"` (`payrecon check`, logs, metrics' `backend`).
    const NAME: &'static str;
    /// The statement that opens a write transaction. SQLite's `BEGIN IMMEDIATE` takes the
    /// write lock at once, so that two writers queue instead of failing on upgrade.
    const BEGIN_WRITE: &'static str;
    /// The columns every ledger read selects (`rows::RawRow`), on the alias `o`.
    const ROW_COLUMNS: &'static str;
    /// The `RETURNING` list of an UPDATE of `orders` (`outbox::EventOrder`).
    const RETURNING: &'static str;
    /// What follows a bound amount for it to be read as a number (`QueryBuilder` binds).
    const AMOUNT_CAST: &'static str;
    /// What follows a bound RFC 3339 time for it to be read as a time.
    const TS_CAST: &'static str;
    /// Bind parameter `n` (from 1).
    fn p(n: usize) -> String;
    /// Bind parameter `n` holding an RFC 3339 timestamp, as a value a time column compares to.
    fn ts(n: usize) -> String;
    /// A time column (or expression) in a form that compares in time order (SQLite reads
    /// the merchant's spellings of a time with `julianday`).
    fn cmp_time(col: &str) -> String;
    /// Bind parameter `n` holding an RFC 3339 timestamp, comparable with `cmp_time`.
    fn cmp_ts(n: usize) -> String;
    /// A time as a literal in a statement, comparable to a time column.
    fn ts_literal(t: jiff::Timestamp) -> String;
    /// A time as bound to a `ts` parameter at the backend's precision (SQLite stores
    /// milliseconds as text; PostgreSQL keeps microseconds).
    fn ts_bind(t: jiff::Timestamp) -> String;
    /// Bind parameter `n` holding an amount in base units (decimal text), as a number.
    fn amount(n: usize) -> String;
    /// `col` is one of the values of list parameter `n` (bound with `texts` or `ints`).
    fn any(col: &str, n: usize) -> String;
    /// How a list of strings is bound (SQLite: one JSON array; PostgreSQL: an array).
    type Texts: for<'q> sqlx::Encode<'q, Self> + sqlx::Type<Self> + Send;
    fn texts<S: AsRef<str>>(values: &[S]) -> Self::Texts;
    /// How a list of integers is bound.
    type Ints: for<'q> sqlx::Encode<'q, Self> + sqlx::Type<Self> + Send;
    fn ints(values: &[i64]) -> Self::Ints;
    /// A time column as RFC 3339 UTC text with milliseconds (how payrecon spells times).
    fn ts_text(col: &str) -> String;
    /// A time column as milliseconds since the epoch (`NULL` for NULL or never).
    fn ms(col: &str) -> String;
    /// An integer column read as a 64-bit integer (PostgreSQL's `integer` is 32 bits).
    fn int8(col: &str) -> String;

    /// Bind parameter `n` as text where the statement alone cannot tell its type (`IS NULL`).
    fn text(n: usize) -> String;
    /// A time column as RFC 3339 UTC text at the precision the backend stores.
    fn ts_text_exact(col: &str) -> String;
    /// A time as the backend stores it (SQLite milliseconds, PostgreSQL microseconds).
    fn stored_time(t: jiff::Timestamp) -> jiff::Timestamp;

    /// The position of `needle` in `haystack`, from 1 (0: not in it).
    fn instr(haystack: &str, needle: &str) -> String;
    /// A `FROM` source `alias(name, n)`: the strings of list parameter `idx` (bound with
    /// `texts`) with their positions, in order.
    fn numbered_texts(idx: usize, alias: &str) -> String;

    /// Whether a table named by the text expression `name` exists.
    fn table_exists(name: &str) -> String;

    /// `a` equals `b`, NULL equal to NULL.
    fn same(a: &str, b: &str) -> String;
    /// An amount column (decimal text on SQLite) holds more than zero.
    fn amount_positive(col: &str) -> String;
    /// An amount column as decimal text.
    fn amount_text(col: &str) -> String;
    /// A time column as a keyset position: text that orders and compares exactly as the
    /// stored value (SQLite: the stored text; PostgreSQL: microseconds since the epoch).
    fn position(col: &str) -> String;
    /// Bind parameter `n` holding a `position`, as a value the column compares to.
    fn position_param(n: usize) -> String;
    /// Whether `pos` could be a `position` of this backend (a cursor of another is refused).
    fn position_ok(pos: &str) -> bool;

    /// The current time in a statement, as a time column stores it.
    const NOW: &'static str;
    /// The rows a statement changed (sqlx's results have no common trait for it).
    fn affected(done: &<Self as sqlx::Database>::QueryResult) -> u64;
    /// Rows per multi-row INSERT (far below the backend's limit on bound values).
    const INSERT_ROWS: usize;

    // Statements whose shape differs by backend.

    /// The largest amount in base units the amount columns keep, where it is less than U256's
    /// (MariaDB/MySQL's `DECIMAL(65,0)`: 10^65 − 1).
    fn max_amount() -> Option<crate::domain::U256> {
        None
    }

    /// A text column compared exactly (`_bin` on MariaDB/MySQL, which sqlx reads only as
    /// bytes there) in a form that reads as text.
    fn exact_text(col: &str) -> String {
        col.to_string()
    }
    /// A value cast to a 64-bit integer, whatever the column's type.
    fn bigint(col: &str) -> String {
        format!("CAST({col} AS BIGINT)")
    }
    /// An identifier the SQL standard reserves (`trigger`, `since`, `until`), quoted.
    fn ident(name: &str) -> String {
        format!("\"{name}\"")
    }
    /// A subquery of an UPDATE that reads the table the UPDATE writes (`select`: one column,
    /// `id`). MySQL refuses that (error 1093) unless the rows are read into a derived table
    /// first and it is materialized rather than merged; `DISTINCT` keeps it from being
    /// merged (docs/design/backends.md, "MariaDB/MySQL").
    fn own_table(select: &str) -> String {
        select.to_string()
    }
    /// The guard of an UPDATE of `orders` that writes a payment key: no other order holds the
    /// key bound at placeholders `first` (chain), `first + 1` (tx hash) and `first + 2` (log
    /// index); `first + 3` is the order's own id. Read through [`Dialect::own_table`].
    fn key_free(first: usize) -> String {
        let p = Self::p;
        let other = Self::own_table(&format!(
            "SELECT o2.id FROM orders o2 WHERE o2.chain = {} AND o2.tx_hash = {} \
             AND o2.log_index = {} AND o2.id <> {}",
            p(first),
            p(first + 1),
            p(first + 2),
            p(first + 3)
        ));
        format!("NOT EXISTS ({other})")
    }
    /// The tail of an INSERT that updates the row `target` (a conflict target, with its
    /// `WHERE` for a partial index) names when it exists: `set`, with `excluded.x` the value
    /// the INSERT carried.
    fn upsert(target: &str, set: &str) -> String {
        format!("ON CONFLICT {target} DO UPDATE SET {set}")
    }
    /// The tail of an INSERT into `table` that writes nothing when the row `target` names
    /// exists.
    fn do_nothing(_table: &str, target: &str) -> String {
        format!("ON CONFLICT {target} DO NOTHING")
    }
    /// Claims due events (`due`: the `WHERE` on alias `e`): 1 now, 2 holder, 3 claimed
    /// until, 4 limit; returns `id, order_id, body, attempts`.
    fn claim_events_sql(due: &str) -> String;
}
