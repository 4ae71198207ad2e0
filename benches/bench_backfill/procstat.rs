//! Process figures from /proc (Linux): CPU time (whole process and per thread name), resident
//! memory and its peak. No libc: /proc reports CPU in USER_HZ ticks, fixed at 100 by the ABI.

use std::time::Duration;

const TICKS_PER_SEC: u64 = 100;

/// utime + stime from a `stat` line (fields 14 and 15; the command name may hold spaces).
fn cpu_of_stat(stat: &str) -> Option<Duration> {
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state), so fields 14 and 15 are at 11 and 12.
    let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 1000 / TICKS_PER_SEC))
}

/// CPU time of the whole process (exited threads included).
pub fn process_cpu() -> Duration {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| cpu_of_stat(&s))
        .unwrap_or_default()
}

/// CPU time of the live threads whose name starts with `prefix`.
pub fn threads_cpu(prefix: &str) -> Duration {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return Duration::ZERO;
    };
    dir.flatten()
        .filter(|t| {
            std::fs::read_to_string(t.path().join("comm"))
                .is_ok_and(|c| c.trim_end().starts_with(prefix))
        })
        .filter_map(|t| std::fs::read_to_string(t.path().join("stat")).ok())
        .filter_map(|s| cpu_of_stat(&s))
        .sum()
}

/// A `VmXxx:  1234 kB` line of /proc/self/status, in MiB.
fn status_mib(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

pub fn rss_mib() -> f64 {
    status_mib("VmRSS")
}

pub fn peak_rss_mib() -> f64 {
    status_mib("VmHWM")
}

/// Resets the peak (VmHWM) to the current RSS (`echo 5 > /proc/self/clear_refs`, Linux 4.0+).
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}
