//! `payrecon serve`: the HTTP listener and the schedule loop, until a shutdown signal; then
//! stop scheduling, give the current run `reconcile.shutdown_grace` to finish, return.
//! Under systemd (`Type=notify`) it reports `READY=1` once the listener is bound (the
//! database is migrated before `serve` is called), `STOPPING=1` at shutdown, each scheduled
//! run's outcome as `STATUS=`, and the schedule loop feeds the watchdog (`WatchdogSec=`).

pub mod listener;
pub mod schedule;
pub mod sdnotify;

use std::future::Future;
use std::sync::Arc;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::app::{App, AppError};
use crate::config::parse_cron;
use crate::engine::{RunOptions, Trigger};
use schedule::{run_loop_fed, SystemClock};
use sdnotify::{Notifier, Watchdog};

/// A scheduled run that has not finished after this long is considered stuck: the loop
/// stops feeding systemd's watchdog, which restarts payrecon.
pub const RUN_STUCK_AFTER: std::time::Duration = std::time::Duration::from_secs(3600);

/// Serves until `shutdown` resolves. `on_ready` is called once the listener is bound.
pub async fn serve(
    app: App,
    shutdown: impl Future<Output = ()>,
    on_ready: impl FnOnce(std::net::SocketAddr),
) -> Result<(), AppError> {
    // One `serve` per SQLite file (several instances share PostgreSQL through leases).
    let _exclusive = exclusive_sqlite(app.config.database.url.expose())?;
    let listener = tokio::net::TcpListener::bind(app.config.listen)
        .await
        .map_err(|e| AppError(format!("http.listen {}: {e}", app.config.listen)))?;
    let addr = listener.local_addr().map_err(|e| AppError(e.to_string()))?;
    let cron = parse_cron(&app.config.schedule.cron).map_err(|e| AppError(e.to_string()))?;
    let (stop_tx, stop_rx) = watch::channel(false);

    // The gauges of what the database holds, before anyone scrapes: a restart never shows 0
    // for held orders or open exceptions that are there.
    if let Err(e) = app.engine.refresh_gauges().await {
        tracing::error!(error = %app.engine.redact(&e), "Reading the held orders and open exceptions for the gauges failed; the first run sets them.");
    }
    let console = match app.config.console.enabled {
        true => Some(Arc::new(
            crate::console::Console::load(&app.config, app.engine.clone(), addr)
                .map_err(|e| AppError(e.0))?,
        )),
        false => None,
    };
    let (router, consumer) = listener::routes(&app, console);
    let http = spawn_http(listener, router, stop_rx.clone());
    // Events to the merchant: delivered continuously, woken by every committed batch.
    let deliverer = app
        .events
        .clone()
        .map(|d| spawn_deliverer(d, stop_rx.clone()));

    tracing::info!(listen = %addr, cron = %app.config.schedule.cron, "payrecon is serving.");
    on_ready(addr);
    let notifier = Arc::new(Notifier::from_env());
    notifier.ready(&format!("Serving on {addr}; no run yet."));

    let run_now = stale(&app, &cron).await;
    let balances = spawn_balance_checks(&app, stop_rx.clone())?;
    let scheduler = spawn_scheduler(&app, cron, stop_rx, &notifier, run_now);

    shutdown.await;
    notifier.stopping("Shutting down: waiting for the current run.");
    tracing::info!("Shutdown requested: no new runs; waiting for the current one.");
    let _ = stop_tx.send(true);
    let grace = app.config.reconcile.shutdown_grace;
    if tokio::time::timeout(grace, scheduler).await.is_err() {
        tracing::warn!(grace_seconds = grace.as_secs_f64(), "The current run did not finish within the grace period; exiting anyway (the next run completes its work).");
    }
    if let Some(balances) = balances {
        if tokio::time::timeout(grace, balances).await.is_err() {
            tracing::warn!(grace_seconds = grace.as_secs_f64(), "The current balance check did not finish within the grace period; exiting anyway (the next check reads from where the last one ended).");
        }
    }
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), http).await;
    // The route is gone, so the queue is closed: the consumer finishes what it holds (what it
    // cannot finish in time stays in the inbox for the next run).
    let _ = tokio::time::timeout(grace, consumer).await;
    // The attempts in flight finish (each bounded by events.timeout); the rest stays pending.
    if let Some(d) = deliverer {
        let _ = tokio::time::timeout(grace, d).await;
    }
    tracing::info!("payrecon stopped.");
    Ok(())
}

/// Spawns the HTTP listener, which shuts down gracefully once `stop` turns true.
fn spawn_http(
    listener: tokio::net::TcpListener,
    router: axum::Router,
    mut stop: watch::Receiver<bool>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let graceful = async move {
            let _ = stop.wait_for(|s| *s).await;
        };
        // The peer's address reaches the routes: the console believes a trusted header only
        // from `[console] trusted_proxies`.
        let service = router.into_make_service_with_connect_info::<std::net::SocketAddr>();
        if let Err(e) = axum::serve(listener, service)
            .with_graceful_shutdown(graceful)
            .await
        {
            tracing::error!(error = %e, "The HTTP listener failed.");
        }
    })
}

/// Spawns the event deliverer, which runs until `stop` turns true.
fn spawn_deliverer(
    d: Arc<crate::events::Deliverer>,
    mut stop: watch::Receiver<bool>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        d.run(async move {
            let _ = stop.wait_for(|s| *s).await;
        })
        .await
    })
}

/// Whether `serve` runs at once: runs are on record (a ledger payrecon has reconciled
/// before) and none has succeeded within one schedule interval (two consecutive cron times
/// apart), as after a stop longer than the schedule. A fresh ledger waits for the first tick,
/// which `serve` logs.
async fn stale(app: &App, cron: &croner::Cron) -> bool {
    let now = chrono::Utc::now();
    let interval = cron
        .find_next_occurrence(&now, false)
        .and_then(|a| cron.find_next_occurrence(&a, false).map(|b| b - a));
    let Ok(interval) = interval else {
        return false;
    };
    match app.engine.store.last_ok_run_finished().await {
        Ok((false, _)) => false,
        Ok((true, None)) => true,
        Ok((true, Some(t))) => {
            let since = std::time::Duration::from_millis(
                (jiff::Timestamp::now().as_millisecond() - t.as_millisecond()).max(0) as u64,
            );
            interval.to_std().is_ok_and(|i| since > i)
        }
        Err(e) => {
            tracing::error!(error = %app.engine.redact(&e), "Reading the last successful run failed; the schedule decides the first run.");
            false
        }
    }
}

/// Spawns the schedule loop: a run at each cron time until `stop`, feeding the watchdog.
fn spawn_scheduler(
    app: &App,
    cron: croner::Cron,
    stop: watch::Receiver<bool>,
    notifier: &Arc<Notifier>,
    run_now: bool,
) -> JoinHandle<u64> {
    let engine = app.engine.clone();
    let lookback = app.config.schedule.lookback;
    let watchdog = Watchdog::systemd(notifier.clone(), RUN_STUCK_AFTER);
    let status = notifier.clone();
    tokio::spawn(async move {
        run_loop_fed(
            &cron,
            &SystemClock,
            stop,
            watchdog.as_ref(),
            run_now,
            || scheduled_run(engine.clone(), lookback, status.clone()),
        )
        .await
    })
}

/// Spawns the balance checks on `[balances] cron` (docs/reference.md §2) until `stop`; `None`
/// when the cron is `""` (off).
fn spawn_balance_checks(
    app: &App,
    stop: watch::Receiver<bool>,
) -> Result<Option<JoinHandle<u64>>, AppError> {
    let b = &app.config.balances;
    if b.cron.is_empty() {
        tracing::info!(
            "balances.cron is \"\": serve does not check balances (payrecon balances check does)."
        );
        return Ok(None);
    }
    let cron = crate::config::parse_cron_at("balances.cron", &b.cron)
        .map_err(|e| AppError(e.to_string()))?;
    let engine = app.engine.clone();
    let (lookback, treasury) = (b.lookback, b.treasury.clone());
    Ok(Some(tokio::spawn(async move {
        schedule::run_loop(&cron, &SystemClock, stop, || {
            let (engine, treasury) = (engine.clone(), treasury.clone());
            async move {
                match engine
                    .check_balances(lookback, &treasury, None, Trigger::Schedule)
                    .await
                {
                    Ok(r) if r.any_failed() => {
                        tracing::error!(run_id = %r.run_id, "Scheduled balance check failed on a chain (its report says which).")
                    }
                    Ok(r) => {
                        tracing::info!(run_id = %r.run_id, gaps = r.totals.gaps, applied = r.totals.applied, "Scheduled balance check finished.")
                    }
                    Err(e) => {
                        tracing::error!(error = %engine.redact(&e), "Scheduled balance check could not start.");
                        let l = crate::metrics::RunL {
                            provider: crate::engine::BALANCES.to_string(),
                            outcome: crate::metrics::RunOutcome::failed,
                        };
                        engine.metrics.runs.get_or_create(&l).inc();
                    }
                }
            }
        })
        .await
    })))
}

/// On SQLite, an exclusive lock on `<database file>.serve.lock`, held while the returned file
/// lives (the kernel drops it when the process dies): a second `serve` on the same file is
/// refused. A manual `run` takes no such lock and stays allowed beside `serve`
/// (docs/reference.md §1, `run`).
pub fn exclusive_sqlite(url: &str) -> Result<Option<std::fs::File>, AppError> {
    let Some(db) = crate::store::sqlite_file(url) else {
        return Ok(None);
    };
    let mut name = db.file_name().unwrap_or_default().to_os_string();
    name.push(".serve.lock");
    let path = db.with_file_name(name);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| {
            AppError(format!(
                "database: cannot open the lock file {}: {e}",
                path.display()
            ))
        })?;
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(std::fs::TryLockError::WouldBlock) => Err(AppError(format!(
            "another payrecon serve is already using the SQLite database {} (lock {}); run one \
             serve per SQLite file, or use PostgreSQL for several instances",
            db.display(),
            path.display()
        ))),
        Err(std::fs::TryLockError::Error(e)) => Err(AppError(format!(
            "database: cannot lock {}: {e}",
            path.display()
        ))),
    }
}

/// Deliveries queued for the consumer; beyond that they wait in the inbox for the next run.
const DELIVERY_QUEUE: usize = 1024;
/// Deliveries applied together (one chain lookup, one ledger transaction).
const DELIVERY_BATCH: usize = 200;

/// Applies stored deliveries as they come, in batches of what has queued up meanwhile.
async fn apply_deliveries(
    engine: Arc<crate::engine::Engine>,
    mut deliveries: tokio::sync::mpsc::Receiver<crate::store::StoredDelivery>,
) {
    while let Some(first) = deliveries.recv().await {
        let mut batch = vec![first];
        while batch.len() < DELIVERY_BATCH {
            match deliveries.try_recv() {
                Ok(e) => batch.push(e),
                Err(_) => break,
            }
        }
        let tally = engine.process_webhook_deliveries(batch).await;
        // What a delivery credited may hold an order, or open an exception.
        if tally.applied > 0 || tally.processed > 0 {
            if let Err(e) = engine.refresh_gauges().await {
                tracing::error!(error = %engine.redact(&e), "Reading the gauges after webhook deliveries failed.");
            }
        }
        tracing::debug!(
            processed = tally.processed,
            rejected = tally.rejected,
            deferred = tally.deferred,
            applied = tally.applied,
            "Webhook deliveries applied."
        );
    }
}

async fn scheduled_run(
    engine: Arc<crate::engine::Engine>,
    lookback: std::time::Duration,
    notifier: Arc<Notifier>,
) {
    let until = jiff::Timestamp::now();
    let since = jiff::SignedDuration::try_from(lookback)
        .ok()
        .and_then(|d| until.checked_sub(d).ok())
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    let opts = RunOptions {
        since,
        until,
        providers: Vec::new(),
        dry_run: false,
        no_resend: false,
        trigger: Trigger::Schedule,
        progress: false,
        backfill: false,
    };
    notifier.status(&format!("Run started at {until}."));
    match engine.run(&opts).await {
        Ok(report) if report.any_failed() => {
            notifier.status(&format!(
                "Last run {} at {until}: failed (a provider or chain failed).",
                report.run_id
            ));
            tracing::warn!(run_id = %report.run_id, "Scheduled run finished with a failed provider.")
        }
        Ok(report) => {
            notifier.status(&format!(
                "Last run {} at {until}: ok, {} checked, {} gaps, {} applied.",
                report.run_id, report.totals.checked, report.totals.gaps, report.totals.applied
            ));
            tracing::info!(run_id = %report.run_id, gaps = report.totals.gaps, applied = report.totals.applied, "Scheduled run finished.")
        }
        Err(e) => {
            notifier.status(&format!("Last run at {until}: could not start."));
            tracing::error!(error = %engine.redact(&e), "Scheduled run could not start.");
            for p in &engine.providers {
                engine
                    .metrics
                    .runs
                    .get_or_create(&crate::metrics::RunL {
                        provider: p.provider.name().to_string(),
                        outcome: crate::metrics::RunOutcome::failed,
                    })
                    .inc();
            }
        }
    }
}

/// Resolves at the first SIGTERM or SIGINT. The handlers are installed when this is called,
/// not when the future is first polled: a signal that arrives while serve starts up (after the
/// listener answers, before the schedule loop waits) is a graceful shutdown, never the
/// default action that kills the process.
pub fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let term = signal(SignalKind::terminate());
        let int = signal(SignalKind::interrupt());
        async move {
            match (term, int) {
                (Ok(mut term), Ok(mut int)) => {
                    tokio::select! {
                        _ = term.recv() => {}
                        _ = int.recv() => {}
                    }
                }
                (Err(e), _) | (_, Err(e)) => {
                    tracing::error!(error = %e, "Cannot install the signal handlers; stopping.");
                }
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
