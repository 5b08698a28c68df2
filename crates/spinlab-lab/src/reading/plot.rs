//! The report's chart kinds, drawn with plotters into SVG strings.
//!
//! Every chart uses one coordinate type: plain `f64` on both axes with key points chosen here.
//! A logarithmic axis is drawn by plotting `log10(value)` and labelling the ticks with the
//! value; a categorical axis puts category `i` at `i + 0.5`. That keeps one drawing path for
//! every kind of axis. Text is left to the browser (`<text>` elements, no font files), so the
//! SVG needs nothing from the network or the system's fonts.

use crate::results::format::number;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::prelude::*;
use std::error::Error;
use std::ops::Range;

/// Width of a full-width chart, in pixels.
pub const WIDTH: u32 = 900;

type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<Coord, Coord>>;
type Drawn = Result<(), Box<dyn Error>>;

/// How an axis maps values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// Evenly spaced values.
    Linear,
    /// Evenly spaced powers of ten.
    Log,
}

/// One axis: its description (with the unit), its range and its ticks.
#[derive(Clone, Debug)]
pub struct Axis {
    /// The description under or beside the axis, with the unit: `throughput (Mops/s)`.
    pub label: String,
    scale: Scale,
    /// Range in plotted (possibly log10) space.
    lo: f64,
    hi: f64,
    /// Ticks in plotted space.
    ticks: Vec<f64>,
    categories: Option<Vec<String>>,
}

impl Axis {
    /// A numeric axis covering `values` (with a margin), linear or logarithmic; `zero` makes a
    /// linear axis start at 0.
    pub fn numeric(label: &str, scale: Scale, values: impl IntoIterator<Item = f64>, zero: bool) -> Axis {
        let values: Vec<f64> =
            values.into_iter().filter(|v| v.is_finite() && (scale == Scale::Linear || *v > 0.0)).collect();
        let (mut lo, mut hi) =
            values.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| (a.min(v), b.max(v)));
        if !lo.is_finite() {
            (lo, hi) = if scale == Scale::Log { (1.0, 10.0) } else { (0.0, 1.0) };
        }
        match scale {
            Scale::Linear => {
                if zero {
                    lo = lo.min(0.0);
                    hi = hi.max(0.0);
                }
                if hi - lo <= f64::EPSILON * hi.abs().max(1.0) {
                    hi = lo + lo.abs().max(1.0);
                }
                let pad = (hi - lo) * 0.08;
                if !(zero && lo == 0.0) {
                    lo -= pad;
                }
                hi += pad;
                let ticks = nice_ticks(lo, hi);
                Axis { label: label.to_string(), scale, lo, hi, ticks, categories: None }
            }
            Scale::Log => {
                let (l, h) = (lo.log10(), hi.log10());
                let span = (h - l).max(0.3);
                let (l, h) = (l - span * 0.08, h + span * 0.08 + if h - l < 0.3 { 0.3 } else { 0.0 });
                let ticks = log_ticks(l, h);
                Axis { label: label.to_string(), scale, lo: l, hi: h, ticks, categories: None }
            }
        }
    }

    /// A logarithmic axis whose ticks are exactly `values` (thread counts).
    pub fn log_at(label: &str, values: &[f64]) -> Axis {
        let mut axis = Axis::numeric(label, Scale::Log, values.iter().copied(), false);
        let mut ticks: Vec<f64> = values.iter().filter(|v| **v > 0.0).map(|v| v.log10()).collect();
        ticks.sort_by(f64::total_cmp);
        ticks.dedup();
        axis.ticks = ticks;
        axis
    }

    /// A categorical axis: one slot per name.
    pub fn categories(label: &str, names: &[String]) -> Axis {
        Axis {
            label: label.to_string(),
            scale: Scale::Linear,
            lo: 0.0,
            hi: names.len().max(1) as f64,
            ticks: (0..names.len()).map(|i| i as f64 + 0.5).collect(),
            categories: Some(names.to_vec()),
        }
    }

    /// Widens the range to include `value`.
    pub fn include(&mut self, value: f64) {
        let v = self.map(value);
        if v.is_finite() {
            self.lo = self.lo.min(v);
            self.hi = self.hi.max(v);
        }
    }

    /// A value in plotted space.
    pub fn map(&self, value: f64) -> f64 {
        match self.scale {
            Scale::Linear => value,
            Scale::Log if value > 0.0 => value.log10(),
            Scale::Log => f64::NAN,
        }
    }

    fn tick_label(&self, plotted: f64) -> String {
        if let Some(names) = &self.categories {
            return names.get(plotted.floor().max(0.0) as usize).cloned().unwrap_or_default();
        }
        match self.scale {
            Scale::Linear => number(plotted),
            Scale::Log => number(10f64.powf(plotted)),
        }
    }

    fn coord(&self) -> Coord {
        Coord { lo: self.lo, hi: self.hi, ticks: self.ticks.clone() }
    }
}

/// A plotted-space axis with the ticks chosen here (labels come from [`Axis::tick_label`]).
#[derive(Clone)]
struct Coord {
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
}

impl Ranged for Coord {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let t = (value - self.lo) / (self.hi - self.lo);
        limit.0 + (f64::from(limit.1 - limit.0) * t).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, _hint: Hint) -> Vec<f64> {
        self.ticks.clone()
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
}

/// Ticks at 1, 2 or 5 times a power of ten, about six of them.
fn nice_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let raw = (hi - lo) / 6.0;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * magnitude).find(|s| *s >= raw).unwrap_or(magnitude * 10.0);
    let mut ticks = Vec::new();
    let mut t = (lo / step).ceil() * step;
    while t <= hi + step * 1e-9 {
        ticks.push(if t.abs() < step * 1e-9 { 0.0 } else { t });
        t += step;
    }
    ticks
}

/// Ticks at powers of ten (and 2x, 5x when the range spans few decades), in log10 space.
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let decades = hi - lo;
    let multiples: &[f64] = if decades < 1.5 {
        &[1.0, 2.0, 3.0, 5.0, 7.0]
    } else if decades < 4.0 {
        &[1.0, 2.0, 5.0]
    } else {
        &[1.0]
    };
    let stride = if decades > 8.0 { 2 } else { 1 };
    let mut ticks = Vec::new();
    let mut e = lo.floor() as i32;
    while f64::from(e) <= hi {
        if (e - lo.floor() as i32) % stride == 0 {
            for m in multiples {
                let t = (m * 10f64.powi(e)).log10();
                if t >= lo && t <= hi {
                    ticks.push(t);
                }
            }
        }
        e += 1;
    }
    ticks
}

/// The series colours (Tableau 10, then darker variants).
pub fn color(i: usize) -> RGBColor {
    const BASE: [(u8, u8, u8); 10] = [
        (31, 119, 180),
        (255, 127, 14),
        (44, 160, 44),
        (214, 39, 40),
        (148, 103, 189),
        (140, 86, 75),
        (227, 119, 194),
        (127, 127, 127),
        (188, 189, 34),
        (23, 190, 207),
    ];
    let (r, g, b) = BASE[i % BASE.len()];
    let shade = (i / BASE.len()) as u32;
    let dim = |c: u8| (u32::from(c) * 3 / (3 + shade)) as u8;
    RGBColor(dim(r), dim(g), dim(b))
}

fn text_style(size: u32) -> TextStyle<'static> {
    ("sans-serif", size).into_font().color(&BLACK)
}

/// Draws the frame (title, axes, labels) and then `body` inside it.
fn frame(
    title: &str,
    size: (u32, u32),
    x: &Axis,
    y: &Axis,
    y_label_width: u32,
    body: impl FnOnce(&mut Chart<'_, '_>) -> Result<Option<SeriesLabelPosition>, Box<dyn Error>>,
) -> Result<String, String> {
    let mut svg = String::new();
    let result = (|| -> Drawn {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, text_style(16))
            .margin(12)
            .margin_right(24)
            .x_label_area_size(if x.categories.is_some() { 56 } else { 44 })
            .y_label_area_size(y_label_width)
            .build_cartesian_2d(x.coord(), y.coord())?;
        let x_format = |v: &f64| x.tick_label(*v);
        let y_format = |v: &f64| y.tick_label(*v);
        let mut mesh = chart.configure_mesh();
        mesh.x_desc(x.label.as_str())
            .y_desc(y.label.as_str())
            .x_label_formatter(&x_format)
            .y_label_formatter(&y_format)
            .label_style(text_style(12))
            .axis_desc_style(text_style(13))
            .light_line_style(WHITE)
            .bold_line_style(RGBColor(225, 225, 225));
        if x.categories.is_some() {
            mesh.disable_x_mesh();
        }
        if y.categories.is_some() {
            mesh.disable_y_mesh();
        }
        mesh.draw()?;
        if let Some(position) = body(&mut chart)? {
            chart
                .configure_series_labels()
                .position(position)
                .label_font(text_style(12))
                .background_style(WHITE.mix(0.85))
                .border_style(RGBColor(180, 180, 180))
                .draw()?;
        }
        root.present()?;
        Ok(())
    })();
    result.map_err(|e| format!("drawing \"{title}\": {e}"))?;
    Ok(svg)
}

/// One line of a line chart.
pub struct Series {
    /// Legend entry.
    pub name: String,
    /// Points in data space (x ascending).
    pub points: Vec<(f64, f64)>,
    /// Colour index.
    pub color: usize,
}

/// A shaded band of the x axis with a label (the oversubscribed region).
pub struct Band {
    /// Where the band starts (data space); it runs to the axis' end.
    pub from: f64,
    /// What it means.
    pub label: String,
}

/// Lines with markers.
pub fn lines(title: &str, x: &Axis, y: &Axis, series: &[Series], band: Option<&Band>) -> Result<String, String> {
    frame(title, (WIDTH, 440), x, y, 78, |chart| {
        if let Some(band) = band {
            let from = x.map(band.from);
            if from.is_finite() && from < x.hi {
                let shade = RGBColor(120, 120, 120).mix(0.12).filled();
                chart.draw_series(std::iter::once(Rectangle::new([(from, y.lo), (x.hi, y.hi)], shade)))?;
                let edge = RGBColor(90, 90, 90).stroke_width(1);
                chart.draw_series(std::iter::once(PathElement::new(vec![(from, y.lo), (from, y.hi)], edge)))?;
                let top = y.hi - (y.hi - y.lo) * 0.03;
                chart.draw_series(std::iter::once(Text::new(
                    band.label.clone(),
                    (from + (x.hi - x.lo) * 0.01, top),
                    text_style(12).color(&RGBColor(70, 70, 70)),
                )))?;
            }
        }
        for s in series {
            let c = color(s.color);
            let pts: Vec<(f64, f64)> = s
                .points
                .iter()
                .map(|&(a, b)| (x.map(a), y.map(b)))
                .filter(|(a, b)| a.is_finite() && b.is_finite())
                .collect();
            chart
                .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))?
                .label(s.name.clone())
                .legend(move |(lx, ly)| PathElement::new(vec![(lx, ly), (lx + 18, ly)], c.stroke_width(3)));
            chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, c.filled())))?;
        }
        Ok(Some(SeriesLabelPosition::UpperRight))
    })
}

/// One horizontal bar.
pub struct Bar {
    /// Its category label.
    pub label: String,
    /// Its length in data space.
    pub value: f64,
    /// Colour index.
    pub color: usize,
}

/// Horizontal bars, one per category, with the value written at the end of each; `legend`
/// names the colours.
pub fn hbars(title: &str, x: &Axis, bars: &[Bar], legend_entries: &[(String, usize)]) -> Result<String, String> {
    let names: Vec<String> = bars.iter().map(|b| b.label.clone()).collect();
    let y = Axis::categories("", &names);
    let height = 90 + 22 * bars.len().max(1) as u32;
    let longest = names.iter().map(|n| n.len()).max().unwrap_or(4) as u32;
    frame(title, (WIDTH, height), x, &y, (longest * 7 + 14).clamp(60, 300), |chart| {
        for (i, b) in bars.iter().enumerate() {
            let v = x.map(b.value);
            if !v.is_finite() {
                continue;
            }
            let (y0, y1) = (i as f64 + 0.15, i as f64 + 0.85);
            chart.draw_series(std::iter::once(Rectangle::new([(x.lo, y0), (v, y1)], color(b.color).filled())))?;
            chart.draw_series(std::iter::once(Text::new(
                number(b.value),
                (v + (x.hi - x.lo) * 0.005, i as f64 + 0.75),
                text_style(11),
            )))?;
        }
        for (name, c) in legend_entries {
            let c = color(*c);
            chart
                .draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())?
                .label(name.clone())
                .legend(move |(lx, ly)| Rectangle::new([(lx, ly - 5), (lx + 12, ly + 5)], c.filled()));
        }
        if legend_entries.is_empty() {
            Ok(None)
        } else {
            Ok(Some(SeriesLabelPosition::LowerRight))
        }
    })
}

/// Grouped vertical bars: for each category on x, one bar per group; `reference` draws a
/// dashed horizontal line (1.0 for ratios).
pub fn grouped_bars(
    title: &str,
    categories: &[String],
    x_label: &str,
    y: &Axis,
    groups: &[(String, Vec<Option<f64>>)],
    reference: Option<(f64, &str)>,
) -> Result<String, String> {
    let x = Axis::categories(x_label, categories);
    let n = groups.len().max(1) as f64;
    frame(title, (WIDTH, 420), &x, y, 70, |chart| {
        if let Some((value, label)) = reference {
            let v = y.map(value);
            if v.is_finite() {
                let style = RGBColor(60, 60, 60).stroke_width(1);
                let path = DashedLineSeries::new(vec![(x.lo, v), (x.hi, v)], 6, 4, style);
                chart.draw_series(path)?;
                chart.draw_series(std::iter::once(Text::new(label.to_string(), (x.lo + 0.02, v), text_style(11))))?;
            }
        }
        for (g, (name, values)) in groups.iter().enumerate() {
            let c = color(g);
            let bars = values.iter().enumerate().filter_map(|(i, v)| {
                let v = y.map((*v)?);
                if !v.is_finite() {
                    return None;
                }
                let left = i as f64 + 0.1 + 0.8 * g as f64 / n;
                let right = left + 0.8 / n * 0.9;
                Some(Rectangle::new([(left, y.lo.max(y.map_floor())), (right, v)], c.filled()))
            });
            chart
                .draw_series(bars)?
                .label(name.clone())
                .legend(move |(lx, ly)| Rectangle::new([(lx, ly - 5), (lx + 12, ly + 5)], c.filled()));
        }
        Ok(Some(SeriesLabelPosition::UpperRight))
    })
}

impl Axis {
    /// Where bars start: 0 on a linear axis, the bottom on a log axis.
    fn map_floor(&self) -> f64 {
        match self.scale {
            Scale::Linear => 0.0,
            Scale::Log => self.lo,
        }
    }
}

/// A heat map: `values[row][column]`, coloured from white (0) to red (`max`); blue for
/// negative values; grey with a dash where there is no value. The value is written in each
/// cell with `unit`.
pub fn heatmap(
    title: &str,
    columns: &[String],
    rows: &[String],
    values: &[Vec<Option<f64>>],
    max: f64,
    size: (u32, u32),
) -> Result<String, String> {
    let x = Axis::categories("placement of the waiters", columns);
    let y = Axis::categories("", rows);
    let longest = rows.iter().map(|n| n.len()).max().unwrap_or(4) as u32;
    frame(title, size, &x, &y, (longest * 7 + 14).clamp(50, 200), |chart| {
        for (r, row) in values.iter().enumerate() {
            for (c, v) in row.iter().enumerate() {
                let (x0, y0) = (c as f64 + 0.03, r as f64 + 0.05);
                let (x1, y1) = (c as f64 + 0.97, r as f64 + 0.95);
                let (fill, label) = match v {
                    Some(v) if v.is_finite() => (heat(*v, max), format!("{v:.1}")),
                    _ => (RGBColor(230, 230, 230), "-".to_string()),
                };
                chart.draw_series(std::iter::once(Rectangle::new([(x0, y0), (x1, y1)], fill.filled())))?;
                let dark = v.is_some_and(|v| v / max.max(1e-9) > 0.6);
                let ink = if dark { WHITE } else { BLACK };
                chart.draw_series(std::iter::once(Text::new(
                    label,
                    (c as f64 + 0.38, r as f64 + 0.72),
                    text_style(11).color(&ink),
                )))?;
            }
        }
        Ok(None)
    })
}

fn heat(v: f64, max: f64) -> RGBColor {
    let t = (v.abs() / max.max(1e-9)).clamp(0.0, 1.0);
    let lerp = |a: f64, b: f64| (a + (b - a) * t).round() as u8;
    if v >= 0.0 {
        RGBColor(lerp(255.0, 178.0), lerp(255.0, 24.0), lerp(255.0, 43.0))
    } else {
        RGBColor(lerp(255.0, 33.0), lerp(255.0, 102.0), lerp(255.0, 172.0))
    }
}

/// One labelled point of a scatter plot.
pub struct Point {
    /// Written next to the point and in the legend.
    pub label: String,
    /// Data-space position.
    pub x: f64,
    /// Data-space position.
    pub y: f64,
}

/// Labelled points, one colour each.
pub fn scatter(title: &str, x: &Axis, y: &Axis, points: &[Point]) -> Result<String, String> {
    frame(title, (WIDTH, 460), x, y, 78, |chart| {
        for (i, p) in points.iter().enumerate() {
            let (px, py) = (x.map(p.x), y.map(p.y));
            if !(px.is_finite() && py.is_finite()) {
                continue;
            }
            let c = color(i);
            chart
                .draw_series(std::iter::once(Circle::new((px, py), 6, c.filled())))?
                .label(p.label.clone())
                .legend(move |(lx, ly)| Circle::new((lx + 6, ly), 5, c.filled()));
            chart.draw_series(std::iter::once(Text::new(
                p.label.clone(),
                (px + (x.hi - x.lo) * 0.012, py),
                text_style(11),
            )))?;
        }
        Ok(Some(SeriesLabelPosition::UpperRight))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_axes_tick_at_decades_and_a_line_chart_is_svg() {
        let axis = Axis::numeric("latency (ns)", Scale::Log, [10.0, 100_000.0], false);
        let labels: Vec<String> = axis.ticks.iter().map(|t| axis.tick_label(*t)).collect();
        assert!(labels.contains(&"100".to_string()) && labels.contains(&"10k".to_string()), "{labels:?}");
        let x = Axis::log_at("threads", &[1.0, 2.0, 4.0]);
        let series = [Series { name: "ttas:spin".into(), points: vec![(1.0, 1e6), (2.0, 5e5), (4.0, 2e5)], color: 0 }];
        let y = Axis::numeric("throughput (ops/s)", Scale::Linear, [1e6, 2e5], true);
        let svg = lines("t", &x, &y, &series, Some(&Band { from: 2.0, label: "over".into() })).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("ttas:spin") && svg.contains("threads"), "{svg}");
    }
}
