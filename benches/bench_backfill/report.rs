//! What the backfill benchmark prints: its figures, and the run's counts checked against the
//! seeded mix (every mismatch printed).

use payrecon::report::Report;

use super::{floor, seed, Args, Figures};

pub(super) fn print_figures(args: &Args, ds: &seed::Dataset, f: &Figures) {
    let t = &f.report.totals;
    let secs = f.wall.as_secs_f64();
    let engine_cpu = f.cpu_total.saturating_sub(f.cpu_sandbox);
    let gaps = |p: &payrecon::report::ProviderReport| {
        let g = &p.gaps;
        format!(
            "missing {} lagging {} failed_notification {} amount_mismatch {} unknown_payment {} reorged {}",
            g.missing, g.lagging, g.failed_notification, g.amount_mismatch, g.unknown_payment, g.reorged
        )
    };
    println!("--- {} ({} records) ---", f.db, ds.n);
    println!(
        "seeding (excluded): insert_orders {:.2?}, webhook-applied states {:.2?}",
        f.insert_orders, f.webhook_seed
    );
    println!(
        "wall            {:.2} s   ({:.0} records/s)",
        secs,
        ds.n as f64 / secs
    );
    println!(
        "floor A         {:.2} s   ({} pages, {:.1} MiB, {} requests; ratio wall/floor {:.2})",
        f.floor.wall.as_secs_f64(),
        f.floor.pages,
        f.floor.bytes as f64 / 1048576.0,
        f.floor_requests,
        secs / f.floor.wall.as_secs_f64()
    );
    if f.child {
        println!(
            "CPU             {:.2} s payrecon process ({:.0} µs/record)",
            engine_cpu.as_secs_f64(),
            engine_cpu.as_secs_f64() * 1e6 / ds.n as f64
        );
        println!(
            "memory          peak RSS {:.0} MiB (the payrecon process alone)",
            f.rss_peak
        );
    } else {
        println!(
            "CPU             {:.2} s process, of which {:.2} s sandbox servers, {:.2} s payrecon ({:.0} µs/record)",
            f.cpu_total.as_secs_f64(),
            f.cpu_sandbox.as_secs_f64(),
            engine_cpu.as_secs_f64(),
            engine_cpu.as_secs_f64() * 1e6 / ds.n as f64
        );
        println!(
            "memory          RSS {:.0} MiB before the run (sandbox data included), peak {:.0} MiB during it (+{:.0})",
            f.rss_before,
            f.rss_peak,
            f.rss_peak - f.rss_before
        );
    }
    let fb = f.floor_b.wall.as_secs_f64();
    println!(
        "floor B         {:.2} s   (bulk load {:.2} s + one join; {} behind, {} unmatched; ratio wall/floor B {:.2})",
        fb,
        f.floor_b.load.as_secs_f64(),
        f.floor_b.behind,
        f.floor_b.unmatched,
        secs / fb
    );
    let floor = f.floor.wall.as_secs_f64().max(fb);
    println!("wall / max(A, B) {:.2}", secs / floor);
    println!("provider HTTP   {} requests", f.provider_requests);
    println!(
        "JSON-RPC        {} HTTP requests, {} calls",
        f.rpc_requests, f.rpc_calls
    );
    println!(
        "SQL             {} statements (counted in the store)",
        f.statements
    );
    if let Some(n) = f.events_written {
        println!("events          {n} written with their transitions (events on)");
    }
    println!(
        "report          checked {} gaps {} applied {} resends {}",
        t.checked, t.gaps, t.applied, t.resends_requested
    );
    for p in &f.report.providers {
        println!(
            "  {:<8} {} checked {} applied {} refused_backwards {} rejected {}: {}",
            p.provider,
            p.status,
            p.checked,
            p.applied,
            p.refused_backwards,
            p.rejected,
            gaps(p)
        );
    }
    let result = serde_json::json!({
        "db": f.db, "records": ds.n, "process": if f.child { "child" } else { "in-process" }, "latency_ms": args.latency_ms,
        "rpc_latency_ms": args.rpc_latency_ms.unwrap_or(args.latency_ms),
        "per_page": args.per_page, "concurrency": args.concurrency,
        "wall_s": secs, "floor_a_s": f.floor.wall.as_secs_f64(),
        "ratio": secs / f.floor.wall.as_secs_f64(),
        "floor_b_s": fb, "floor_b_load_s": f.floor_b.load.as_secs_f64(),
        "ratio_max_floor": secs / floor,
        "records_per_s": ds.n as f64 / secs,
        "cpu_s": f.cpu_total.as_secs_f64(), "cpu_sandbox_s": f.cpu_sandbox.as_secs_f64(),
        "cpu_payrecon_s": engine_cpu.as_secs_f64(),
        "rss_before_mib": f.rss_before, "rss_peak_mib": f.rss_peak,
        "provider_requests": f.provider_requests, "rpc_requests": f.rpc_requests,
        "rpc_calls": f.rpc_calls, "sql_statements": f.statements,
        "checked": t.checked, "gaps": t.gaps, "applied": t.applied,
        "seed_insert_s": f.insert_orders.as_secs_f64(), "seed_webhook_s": f.webhook_seed.as_secs_f64(),
    });
    println!("RESULT {result}");
}

/// The run's counts against the seeded mix; prints every mismatch. True when all match.
pub(super) fn verify(mix: &seed::Mix, report: &Report, floor_b: &floor::FloorB) -> bool {
    let mut g = payrecon::report::Gaps::default();
    let mut failed = Vec::new();
    for p in &report.providers {
        for (kind, n) in [
            (payrecon::domain::GapKind::Missing, p.gaps.missing),
            (payrecon::domain::GapKind::Lagging, p.gaps.lagging),
            (
                payrecon::domain::GapKind::FailedNotification,
                p.gaps.failed_notification,
            ),
            (
                payrecon::domain::GapKind::AmountMismatch,
                p.gaps.amount_mismatch,
            ),
            (
                payrecon::domain::GapKind::UnknownPayment,
                p.gaps.unknown_payment,
            ),
            (payrecon::domain::GapKind::Reorged, p.gaps.reorged),
        ] {
            g.add(kind, n);
        }
        if p.failed() {
            failed.push(format!(
                "{}: {}",
                p.provider,
                p.error.as_deref().unwrap_or("?")
            ));
        }
    }
    let expected = [
        (
            "applied",
            report.totals.applied,
            mix.missing + mix.lagging + mix.failed,
        ),
        (
            "checked",
            report.totals.checked,
            mix.done + mix.missing + mix.lagging + mix.failed + mix.stray,
        ),
        // A failed notification for an unpaid order is also a missing payment.
        ("missing", g.missing, mix.missing + mix.failed),
        ("lagging", g.lagging, mix.lagging),
        ("failed_notification", g.failed_notification, mix.failed),
        ("unknown_payment", g.unknown_payment, mix.stray),
        ("amount_mismatch", g.amount_mismatch, 0),
        ("reorged", g.reorged, 0),
        // Floor B did the same diff: what is behind, and what matches no order.
        (
            "floor B behind",
            floor_b.behind,
            mix.missing + mix.lagging + mix.failed,
        ),
        ("floor B unmatched", floor_b.unmatched, mix.stray),
        (
            "resends_requested",
            report.totals.resends_requested,
            mix.failed,
        ),
    ];
    let mut ok = failed.is_empty();
    for f in &failed {
        eprintln!("!!! MISMATCH: provider failed: {f}");
    }
    for (what, got, want) in expected {
        if got != want {
            eprintln!("!!! MISMATCH: {what} = {got}, expected {want}");
            ok = false;
        }
    }
    if ok {
        println!("verified        applied = missing + lagging + failed notifications; gaps match the mix");
    }
    ok
}
