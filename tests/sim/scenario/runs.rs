//! The scenario's runs apart from its writing steps: a dry run that may change nothing, a run on
//! its own, a run with the chain unreachable throughout, and `Engine::run` on its own task so
//! that a panic is a finding.

use payrecon::report::Report;

use crate::check;
use crate::world::{opts, World};
use payrecon_testkit::inspect::Inspect;

use super::stat;

/// A dry run alone: nothing it could write may change.
pub(super) async fn dry_run(w: &mut World) -> Result<(), String> {
    stat(2, 1);
    if let Some(h) = &w.hooks {
        h.settle().await?;
    }
    let before = check::snapshot(w).await;
    let report = run_one(w, true, true).await?;
    let after = check::snapshot(w).await;
    if before != after {
        return Err(format!(
            "--dry-run changed something\nbefore: {before}\nafter:  {after}\n{}",
            report.to_json()
        ));
    }
    Ok(())
}

pub(super) async fn run_one(w: &mut World, dry: bool, _alone: bool) -> Result<Report, String> {
    let before = (w.cg.changes_fired(), crate::lists::fallbacks(w));
    let r = run_engine(w.app.engine.clone(), dry).await?;
    check::report_clean(w, &r).await?;
    let still = before == (w.cg.changes_fired(), crate::lists::fallbacks(w));
    crate::lists::check_pages(w, &r, still)?;
    if !dry {
        w.run_ids.push(r.run_id.clone());
    }
    check::monotone(w).await?;
    Ok(r)
}

/// A run with the chain unreachable throughout: its sweep entry fails naming the chain, the
/// run counts as failed (`payrecon run` exits 1), and nothing is applied.
pub(super) async fn chain_down_run(w: &mut World) -> Result<(), String> {
    let before = w
        .store()
        .count("payrecon_transitions")
        .await
        .map_err(|e| e.to_string())?;
    w.chain.fail_next(u64::MAX / 2);
    let r = run_engine(w.app.engine.clone(), false).await;
    w.chain.fail_next(0);
    let r = r?;
    w.run_ids.push(r.run_id.clone());
    let sweep = r.providers.iter().find(|p| p.provider == "chain");
    let named = sweep.is_some_and(|p| {
        p.failed()
            && p.error
                .as_deref()
                .is_some_and(|e| e.contains("chain ethereum"))
    });
    if !named || !r.any_failed() {
        return Err(format!(
            "a run with the chain down did not fail by its name:\n{}",
            r.to_json()
        ));
    }
    let after = w
        .store()
        .count("payrecon_transitions")
        .await
        .map_err(|e| e.to_string())?;
    if after != before || r.totals.applied != 0 {
        return Err(format!(
            "a run with the chain down applied {} transition(s):\n{}",
            after - before,
            r.to_json()
        ));
    }
    check::monotone(w).await
}

pub(super) const RUN_ERROR: &str = "Engine::run returned an error";

/// `Engine::run` on its own task: a panic is a finding, not a crash of the simulator.
pub(super) async fn run_engine(
    engine: std::sync::Arc<payrecon::engine::Engine>,
    dry: bool,
) -> Result<Report, String> {
    use tracing::Instrument as _;
    // In the guard's span, when the caller is in it (the fault-free runs).
    let task = tokio::spawn(async move { engine.run(&opts(dry)).await }.in_current_span());
    match task.await {
        Ok(Ok(r)) => Ok(r),
        Ok(Err(e)) => Err(format!("{RUN_ERROR}: {e}")),
        Err(e) => Err(format!("Engine::run panicked: {e}")),
    }
}
