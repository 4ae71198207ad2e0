//! The process's own figures, for the benchmarks and the tests that count SQL statements:
//! feature `stats`, off in the product (the dev crate `payrecon-testkit` turns it on for the
//! tests, examples and benchmarks). Without it `store`'s statement markers compile to nothing
//! and `PAYRECON_RUN_STATS` is ignored.

use std::sync::atomic::{AtomicU64, Ordering};

/// SQL statements sent to either backend (BEGIN, COMMIT, SAVEPOINT and RELEASE included;
/// `ping` excluded, and the test kit's readers, which query the pools directly).
static STATEMENTS: AtomicU64 = AtomicU64::new(0);

/// One statement about to be sent (a relaxed atomic add).
pub(crate) fn count_statement() {
    STATEMENTS.fetch_add(1, Ordering::Relaxed);
}

/// SQL statements this process has sent so far.
pub fn statements_issued() -> u64 {
    STATEMENTS.load(Ordering::Relaxed)
}

/// `PAYRECON_RUN_STATS=<file>`: after a `run`, the process's own figures as one JSON object:
/// SQL statements issued, CPU seconds (user, system) and peak RSS, read from `/proc/self`
/// (Linux; absent fields elsewhere). Failing to write it is only a warning.
pub fn write_run_stats_if_asked() {
    let Some(path) = std::env::var_os("PAYRECON_RUN_STATS") else {
        return;
    };
    let path = std::path::Path::new(&path);
    let proc = |name: &str| std::fs::read_to_string(format!("/proc/self/{name}")).ok();
    // Fields 14 and 15 of /proc/self/stat (after the parenthesised name): utime, stime in
    // clock ticks, which Linux reports at USER_HZ = 100.
    let cpu = proc("stat").and_then(|s| {
        let rest = s.rsplit_once(')')?.1;
        let f: Vec<&str> = rest.split_whitespace().collect();
        let tick = |i: usize| f.get(i)?.parse::<f64>().ok().map(|t| t / 100.0);
        Some((tick(11)?, tick(12)?))
    });
    let hwm_kib = proc("status").and_then(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
    });
    let stats = serde_json::json!({
        "sql_statements": statements_issued(),
        "cpu_user_s": cpu.map(|c| c.0),
        "cpu_system_s": cpu.map(|c| c.1),
        "peak_rss_kib": hwm_kib,
    });
    if let Err(e) = std::fs::write(path, stats.to_string()) {
        eprintln!(
            "payrecon: cannot write PAYRECON_RUN_STATS ({}): {e}",
            path.display()
        );
    }
}
