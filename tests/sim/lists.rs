//! List shapes (docs/configuration.md, "Long notification lists"), drawn from a third RNG of
//! the seed: a history of notifications older than the window in front of the seed's own, the
//! list served oldest or newest first, and whole reads forced per period or never. Checked:
//! every notified payment is applied (as for every seed), and a run that searched a list which
//! stood still read at most `failed pages + window pages + 1 + 2·log2(pages) + 4` pages.

use std::sync::atomic::{AtomicU64, Ordering};

use jiff::SignedDuration;
use payrecon::report::Report;
use payrecon_testkit::sandbox::chaingateway::notification;
use payrecon_testkit::sandbox::{SANDBOX_PROVIDER, SANDBOX_TOKEN};
use rand::rngs::StdRng;
use rand::Rng;

use crate::world::World;

pub const NAMES: [&str; 5] = [
    "history_records",
    "newest_first_seeds",
    "searching_seeds",
    "runs_bounded",
    "runs_read_whole",
];
pub static COUNTS: [AtomicU64; 5] = [const { AtomicU64::new(0) }; 5];

fn bump(i: usize, n: u64) {
    COUNTS[i].fetch_add(n, Ordering::Relaxed);
}

#[derive(Debug, Default, Clone, Copy)]
pub struct ListShape {
    /// Notifications 94 to 100 hours old listed before the seed's own (never in the window).
    pub history: usize,
    /// The list is served newest first (arrivals at the head of page 1).
    pub newest_first: bool,
    /// `full_scan_every = "0s"`: no whole read is forced, every run searches.
    pub searches: bool,
}

impl ListShape {
    pub fn choose(lr: &mut StdRng) -> ListShape {
        ListShape {
            history: if lr.gen_bool(0.6) {
                lr.gen_range(20..600)
            } else {
                0
            },
            newest_first: lr.gen_bool(0.3),
            searches: lr.gen_bool(0.5),
        }
    }

    /// Keys of the sandbox provider's table (the config's `extra` starts inside it).
    pub fn config_keys(&self) -> &'static str {
        if self.searches {
            "full_scan_every = \"0s\"\n"
        } else {
            ""
        }
    }

    /// Lists the history and sets the order, before any of the seed's notifications.
    pub fn apply(&self, w: &World) {
        w.cg.set_newest_first(self.newest_first);
        let start = jiff::Timestamp::now() - SignedDuration::from_hours(100);
        for k in 0..self.history {
            let at = start + SignedDuration::from_secs(k as i64 * 30);
            let to = format!("0x{:040x}", 0xdead_0000_0000u64 + k as u64);
            let tx = format!("0x{:064x}", 0xdead_beef_0000u64 + k as u64);
            let n = notification(&format!("old-{k}"), &tx, SANDBOX_TOKEN, &to, Some("1"), at);
            w.cg.add_notification("ethereum", n);
        }
        bump(0, self.history as u64);
        bump(1, u64::from(self.newest_first));
        bump(2, u64::from(self.searches));
    }
}

/// Lists read whole because of a contradiction, over both instances.
pub fn fallbacks(w: &World) -> u64 {
    let label = payrecon::metrics::ProviderL {
        provider: SANDBOX_PROVIDER.to_string(),
    };
    std::iter::once(&w.app)
        .chain(w.other.as_ref())
        .map(|a| a.engine.metrics.list_full_scans.get_or_create(&label).get())
        .sum()
}

/// The pages bound, for a run of a seed that searches, on a list that did not change and
/// was not read whole because of a contradiction (`still`).
pub fn check_pages(w: &World, r: &Report, still: bool) -> Result<(), String> {
    let Some(cg) = r.providers.iter().find(|p| p.provider == SANDBOX_PROVIDER) else {
        return Ok(());
    };
    if !w.list.searches || cg.failed() {
        return Ok(());
    }
    if !still {
        bump(4, 1);
        return Ok(());
    }
    let per = w.cg.per_page() as u64;
    let total = w.cg.notification_count("ethereum") as u64;
    let window = total.saturating_sub(w.list.history as u64);
    let failed = w.cg.failed_count("ethereum") as u64;
    let pages = total.div_ceil(per).max(1);
    let log2 = (pages.max(2) as f64).log2().ceil() as u64;
    let bound = failed.div_ceil(per).max(1) + window.div_ceil(per) + 1 + 2 * log2 + 4;
    if cg.pages_read > bound {
        return Err(format!(
            "a searching run read {} pages, more than {bound} (list of {total}, {window} in \
             the window, {failed} failed, {per} a page)\n{}",
            cg.pages_read,
            r.to_json()
        ));
    }
    bump(3, 1);
    Ok(())
}
