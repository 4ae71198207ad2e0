//! The operator console (SPEC §19). Built so far: the operators file (`operators.rs`), which
//! `payrecon operators add|remove` writes; the pages are not built yet, and `[console] enabled
//! = true` is refused at start rather than serving nothing.

pub mod operators;
