//! `sqlx::migrate!` embeds `migrations/` at compile time; without this, an incremental build
//! does not see a new migration file.
fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
