//! `from_row!`: the store's row structs read by column name.

/// `sqlx::FromRow` for a struct of columns read by name, as `#[derive(sqlx::FromRow)]` writes
/// it, without sqlx's proc-macro crate (which builds sqlx's three database drivers a second
/// time, for the compiler: ARCHITECTURE.md, "Choices"). Declared first in `store/mod.rs`
/// with `#[macro_use]`, it is in scope in every store module. A field written
/// `name: T => "column"` reads the column of that name.
macro_rules! from_row {
    (
        $(#[$m:meta])*
        $v:vis struct $name:ident {
            $( $(#[$fm:meta])* $fv:vis $f:ident : $t:ty $(=> $col:literal)? ),* $(,)?
        }
    ) => {
        $(#[$m])*
        $v struct $name {
            $( $(#[$fm])* $fv $f: $t, )*
        }

        impl<'r, R: ::sqlx::Row> ::sqlx::FromRow<'r, R> for $name
        where
            &'r str: ::sqlx::ColumnIndex<R>,
            $( $t: ::sqlx::Decode<'r, R::Database> + ::sqlx::Type<R::Database>, )*
        {
            fn from_row(row: &'r R) -> Result<Self, ::sqlx::Error> {
                Ok($name {
                    $( $f: row.try_get(from_row!(@column $f $($col)?))?, )*
                })
            }
        }
    };
    (@column $f:ident) => { stringify!($f) };
    (@column $f:ident $col:literal) => { $col };
}
