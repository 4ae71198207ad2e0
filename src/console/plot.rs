//! The overview's plot of gaps per day by kind over 30 days, drawn as SVG by plotters' SVG
//! backend. The SVG holds no text (plotters' text needs a font backend, and the browser draws
//! text better): the legend, the scale and the dates are HTML around it. Colours by kind
//! match the stylesheet's `.k0`…`.k5` (a strict CSP forbids inline styles).

use plotters::prelude::*;

use crate::store::EXCEPTION_KINDS;

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

/// The SVG of `series` (a line per kind), scaled to the largest day; `None` when nothing
/// could be drawn.
pub fn gaps_svg(series: &[(String, Vec<i64>)]) -> Option<String> {
    let max = series
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .max()
        .unwrap_or(0)
        .max(1);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (720, 200)).into_drawing_area();
        root.fill(&WHITE).ok()?;
        let mut chart = ChartBuilder::on(&root)
            .margin(8)
            .build_cartesian_2d(0i64..DAYS as i64 - 1, 0i64..max)
            .ok()?;
        let grid = RGBColor(0xdd, 0xdd, 0xee);
        for y in [0, max / 2, max] {
            chart
                .draw_series(LineSeries::new([(0, y), (DAYS as i64 - 1, y)], grid))
                .ok()?;
        }
        for (kind, v) in series {
            let color = COLORS[color_index(kind)];
            let points = v.iter().enumerate().map(|(i, n)| (i as i64, *n));
            chart
                .draw_series(LineSeries::new(points, color.stroke_width(2)))
                .ok()?;
        }
        root.present().ok()?;
    }
    let start = svg.find("<svg")?;
    Some(svg[start..].to_string())
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
}
