//! `payrecon demo`: built in the sandbox step (not yet).

use std::path::PathBuf;

pub async fn run_demo(_dir: Option<PathBuf>) -> Result<(), crate::app::AppError> {
    Err(crate::app::AppError("the demo is not built yet".into()))
}
