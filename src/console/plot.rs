//! The overview's plots over 30 days, drawn as SVG by plotters' SVG backend: gaps per day by
//! kind, and the time from a payment's block to the delivery of its event. The counts of the
//! closed days are read once a day (`Plots`), today's on each request. The SVG holds no text (plotters' text needs a font backend, and the browser draws
//! text better): the legend, the scale and the dates are HTML around it. Colours by kind
//! match the stylesheet's `.k0`…`.k7` (a strict CSP forbids inline styles).

use jiff::{SignedDuration, Timestamp};
use plotters::coord::types::RangedCoordi64;
use plotters::prelude::*;

use crate::store::{Store, StoreError, DELAY_BUCKETS, EXCEPTION_KINDS};

/// Days on the plot, today included.
pub const DAYS: usize = 30;
const DAY_MS: i64 = 86_400_000;

/// One colour per gap kind: the exception kinds in their order, then the rest.
pub const COLORS: [RGBColor; 8] = [
    RGBColor(0xd6, 0x45, 0x45),
    RGBColor(0xe0, 0x8a, 0x00),
    RGBColor(0x7b, 0x4f, 0xd6),
    RGBColor(0x1f, 0x7a, 0x8c),
    RGBColor(0xb0, 0x3a, 0x8e),
    RGBColor(0x4a, 0x7f, 0x2a),
    RGBColor(0x33, 0x66, 0xcc),
    RGBColor(0x77, 0x77, 0x77),
];

/// The plots' counts: the 29 closed days, read when the day changes, and today's, read again
/// when they are older than `FRESH` (closed days do not change: findings are written and
/// events delivered now). An overview reads none of them most of the time.
#[derive(Default)]
pub struct Plots {
    cached: tokio::sync::Mutex<Option<Cached>>,
}

/// How long today's counts are shown before they are read again.
pub const FRESH: std::time::Duration = std::time::Duration::from_secs(60);

#[derive(Clone)]
struct Cached {
    today: i64,
    gaps: Vec<(String, i64, i64)>,
    delays: Vec<(i64, i64, i64)>,
    today_gaps: Vec<(String, i64, i64)>,
    today_delays: Vec<(i64, i64, i64)>,
    read_at: Option<std::time::Instant>,
}

/// What the overview draws.
pub struct Counts {
    pub gaps: Vec<(String, Vec<i64>)>,
    pub delays: Delays,
}

fn at(ms: i64) -> Timestamp {
    Timestamp::from_millisecond(ms).unwrap_or(Timestamp::UNIX_EPOCH)
}

impl Plots {
    /// Reads the closed days' counts (at start, so that the first overview does not wait).
    pub async fn warm(&self, store: &Store, now: Timestamp) -> Result<(), StoreError> {
        let mut c = self.cached.lock().await;
        closed(&mut c, store, now).await.map(|_| ())
    }

    /// The counts of the `DAYS` days up to `now`'s.
    pub async fn read(&self, store: &Store, now: Timestamp) -> Result<Counts, StoreError> {
        let now_ms = now.as_millisecond();
        let mut c = self.cached.lock().await;
        let c = closed(&mut c, store, now).await?;
        let today = c.today;
        if c.read_at.is_none_or(|t| t.elapsed() >= FRESH) {
            let end = at(today) + SignedDuration::from_hours(48);
            c.today_gaps = store.gaps_per_day(at(today), end).await?;
            c.today_delays = store.delays_per_day(at(today), end).await?;
            c.read_at = Some(std::time::Instant::now());
        }
        let gaps: Vec<_> = c.gaps.iter().chain(&c.today_gaps).cloned().collect();
        let delays: Vec<_> = c.delays.iter().chain(&c.today_delays).copied().collect();
        Ok(Counts {
            gaps: series(&gaps, now_ms),
            delays: delay_series(&delays, now_ms),
        })
    }
}

/// `c` with the closed days of `now`'s day, read when they are not.
async fn closed<'a>(
    c: &'a mut Option<Cached>,
    store: &Store,
    now: Timestamp,
) -> Result<&'a mut Cached, StoreError> {
    let now_ms = now.as_millisecond();
    let today = now_ms - now_ms.rem_euclid(DAY_MS);
    if c.as_ref().is_some_and(|c| c.today == today) {
        return Ok(c.as_mut().expect("checked just above"));
    }
    let from = at(today - (DAYS as i64 - 1) * DAY_MS);
    Ok(c.insert(Cached {
        today,
        gaps: store.gaps_per_day(from, at(today)).await?,
        delays: store.delays_per_day(from, at(today)).await?,
        today_gaps: Vec::new(),
        today_delays: Vec::new(),
        read_at: None,
    }))
}

/// Per day (oldest first), the delay bucket within which half and 95 in 100 of the day's
/// payment events were delivered (`None`: none delivered that day); and how many in all.
#[derive(Debug, Default)]
pub struct Delays {
    pub p50: Vec<Option<i64>>,
    pub p95: Vec<Option<i64>>,
    pub total: i64,
}

/// `Delays` of `rows` (`(day start in ms, bucket, count)`) over the `DAYS` days ending with
/// `today_ms`'s.
pub fn delay_series(rows: &[(i64, i64, i64)], today_ms: i64) -> Delays {
    let today = today_ms - today_ms.rem_euclid(DAY_MS);
    let first = today - (DAYS as i64 - 1) * DAY_MS;
    let mut days = vec![[0i64; DELAY_BUCKETS.len() + 1]; DAYS];
    for (day, bucket, n) in rows {
        if *day < first || *day > today {
            continue;
        }
        let b = (*bucket).clamp(0, DELAY_BUCKETS.len() as i64) as usize;
        days[((day - first) / DAY_MS) as usize][b] += n;
    }
    let quantile = |counts: &[i64], q: f64| {
        let total: i64 = counts.iter().sum();
        let rank = ((total as f64) * q).ceil().max(1.0) as i64;
        let mut seen = 0;
        counts.iter().position(|n| {
            seen += n;
            seen >= rank
        })
    };
    let mut d = Delays::default();
    for c in &days {
        let has = c.iter().sum::<i64>() > 0;
        d.total += c.iter().sum::<i64>();
        d.p50
            .push(quantile(c, 0.5).filter(|_| has).map(|b| b as i64));
        d.p95
            .push(quantile(c, 0.95).filter(|_| has).map(|b| b as i64));
    }
    d
}

/// Per kind, its count on each of the `DAYS` days ending with `today_ms`'s day (oldest first);
/// kinds with no gap are left out. `rows` are `(kind, day start in ms, count)`.
pub fn series(rows: &[(String, i64, i64)], today_ms: i64) -> Vec<(String, Vec<i64>)> {
    let today = today_ms - today_ms.rem_euclid(DAY_MS);
    let first = today - (DAYS as i64 - 1) * DAY_MS;
    let mut out: Vec<(String, Vec<i64>)> = Vec::new();
    for (kind, day, n) in rows {
        if *day < first || *day > today {
            continue;
        }
        let i = ((day - first) / DAY_MS) as usize;
        match out.iter_mut().find(|(k, _)| k == kind) {
            Some((_, v)) => v[i] += n,
            None => {
                let mut v = vec![0; DAYS];
                v[i] = *n;
                out.push((kind.clone(), v));
            }
        }
    }
    out.sort_by_key(|(k, _)| color_index(k));
    out
}

/// The colour (and stylesheet class `k<i>`) of a kind.
pub fn color_index(kind: &str) -> usize {
    let known = ["missing", "lagging", "failed_notification"];
    EXCEPTION_KINDS
        .iter()
        .position(|k| *k == kind)
        .or_else(|| known.iter().position(|k| *k == kind).map(|i| 6 + i.min(1)))
        .unwrap_or(7)
}

/// The chart both plots are drawn on: over the 30 days and `0..y_max`.
type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordi64, RangedCoordi64>>;

/// A 720×200 chart over the 30 days and `0..y_max`, a grid line at each of `grid`, with what
/// `draw` puts on it; its SVG from `<svg` on, `None` when nothing could be drawn.
fn chart(
    y_max: i64,
    grid: impl IntoIterator<Item = i64>,
    draw: impl FnOnce(&mut Chart<'_, '_>) -> Option<()>,
) -> Option<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (720, 200)).into_drawing_area();
        root.fill(&WHITE).ok()?;
        let mut chart = ChartBuilder::on(&root)
            .margin(8)
            .build_cartesian_2d(0i64..DAYS as i64 - 1, 0i64..y_max)
            .ok()?;
        let line = RGBColor(0xdd, 0xdd, 0xee);
        for y in grid {
            chart
                .draw_series(LineSeries::new([(0, y), (DAYS as i64 - 1, y)], line))
                .ok()?;
        }
        draw(&mut chart)?;
        root.present().ok()?;
    }
    let start = svg.find("<svg")?;
    Some(svg[start..].to_string())
}

/// The SVG of `series` (a line per kind), scaled to the largest day; `None` when nothing
/// could be drawn.
pub fn gaps_svg(series: &[(String, Vec<i64>)]) -> Option<String> {
    let max = series
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .max()
        .unwrap_or(0)
        .max(1);
    chart(max, [0, max / 2, max], |chart| {
        for (kind, v) in series {
            let color = COLORS[color_index(kind)];
            let points = v.iter().enumerate().map(|(i, n)| (i as i64, *n));
            chart
                .draw_series(LineSeries::new(points, color.stroke_width(2)))
                .ok()?;
        }
        Some(())
    })
}

/// The SVG of `d`: the p50 (colour 6) and p95 (colour 1) lines on the delay buckets' scale,
/// a grid line per bucket; a day with no delivery breaks the line.
pub fn delays_svg(d: &Delays) -> Option<String> {
    let top = DELAY_BUCKETS.len() as i64;
    chart(top, 0..=top, |chart| {
        for (line, color) in [(&d.p50, COLORS[6]), (&d.p95, COLORS[1])] {
            let mut run: Vec<(i64, i64)> = Vec::new();
            for (i, v) in line.iter().enumerate().chain([(DAYS, &None)]) {
                match v {
                    Some(b) => run.push((i as i64, *b)),
                    None if run.is_empty() => {}
                    None => {
                        let points = std::mem::take(&mut run);
                        if points.len() == 1 {
                            let p = points[0];
                            chart
                                .draw_series([Circle::new(p, 3, color.filled())])
                                .ok()?;
                        } else {
                            chart
                                .draw_series(LineSeries::new(points, color.stroke_width(2)))
                                .ok()?;
                        }
                    }
                }
            }
        }
        Some(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_are_bucketed_and_drawn_without_text() {
        let today = 1_780_000_000_000i64;
        let day = today - today.rem_euclid(DAY_MS);
        let rows = vec![
            ("amount_mismatch".to_string(), day, 3),
            ("amount_mismatch".to_string(), day - 29 * DAY_MS, 1),
            ("missing".to_string(), day - DAY_MS, 5),
            ("missing".to_string(), day - 30 * DAY_MS, 9),
        ];
        let s = series(&rows, today);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].0, "amount_mismatch");
        assert_eq!((s[0].1[0], s[0].1[29]), (1, 3));
        assert_eq!(s[1].1[28], 5);
        assert_eq!(
            s[1].1.iter().sum::<i64>(),
            5,
            "a day before the window is left out"
        );
        let svg = gaps_svg(&s).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("polyline"), "{svg}");
        assert!(!svg.contains("<text") && !svg.contains("style="), "{svg}");
    }

    #[test]
    fn delays_give_the_buckets_of_half_and_95_in_100() {
        let today = 1_780_000_000_000i64;
        let day = today - today.rem_euclid(DAY_MS);
        let rows = vec![
            // Today: 90 within a minute, 4 within an hour, 6 later than a day.
            (day, 0, 90),
            (day, 3, 4),
            (day, 6, 6),
            // Two days ago: one, within 5 minutes (a lone point).
            (day - 2 * DAY_MS, 1, 1),
            // Before the window: left out.
            (day - 30 * DAY_MS, 6, 50),
        ];
        let d = delay_series(&rows, today);
        assert_eq!((d.p50[29], d.p95[29]), (Some(0), Some(6)));
        assert_eq!((d.p50[27], d.p95[27]), (Some(1), Some(1)));
        assert_eq!(d.p50[28], None);
        assert_eq!((d.p50[0], d.total), (None, 101));
        let svg = delays_svg(&d).unwrap();
        assert!(svg.contains("polyline") && svg.contains("<circle"), "{svg}");
        assert!(!svg.contains("<text") && !svg.contains("style="), "{svg}");
    }
}
