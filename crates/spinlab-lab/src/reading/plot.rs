//! The report's chart kinds, drawn with plotters into SVG strings.
//!
//! Every chart uses one coordinate type: plain `f64` on both axes with key points chosen here.
//! A logarithmic axis is drawn by plotting `log10(value)` and labelling the ticks with the
//! value; a categorical axis puts category `i` at `i + 0.5`. That keeps one drawing path for
//! every kind of axis. Text is left to the browser (`<text>` elements, no font files), so the
//! SVG needs nothing from the network or the system's fonts.
//!
//! A legend is drawn under the plotting area, never inside it, so it covers no data; the chart
//! grows by the legend's rows. Each series is an SVG group `<g class="series"
//! data-series="NAME">` and the legend `<g class="legend">`, so that a reader of the page (the
//! report's browser test) can find them and measure one against the other.

use crate::results::format::number;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
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

/// How a legend entry shows its series.
#[derive(Clone, Copy, Debug)]
enum Swatch {
    /// A short line (a line chart's series).
    Line,
    /// A filled square (bars).
    Block,
    /// A dot (a scatter plot's point).
    Dot,
}

/// One legend entry.
struct Entry {
    name: String,
    color: RGBColor,
    swatch: Swatch,
}

/// Height of one legend row, in pixels.
const LEGEND_ROW: u32 = 18;
/// An estimate of one character's width in the legend's 12-pixel sans-serif, a little
/// generous so that columns never run into each other.
const CHAR_PX: u32 = 7;
/// Where the swatch ends and the name begins, from an entry's left edge.
const SWATCH_PX: u32 = 24;

/// Where the legend goes: columns of entries under the chart, starting at the plot's left
/// edge, in reading order row by row.
struct LegendLayout {
    left: u32,
    columns: u32,
    column_px: u32,
    height: u32,
}

fn legend_layout(entries: &[Entry], width: u32, left: u32) -> LegendLayout {
    if entries.is_empty() {
        return LegendLayout { left, columns: 1, column_px: 0, height: 0 };
    }
    let longest = entries.iter().map(|e| e.name.chars().count() as u32).max().unwrap_or(0);
    let room = width.saturating_sub(left + 12).max(1);
    let column_px = (SWATCH_PX + longest * CHAR_PX + 16).min(room);
    let columns = (room / column_px.max(1)).max(1);
    let rows = (entries.len() as u32).div_ceil(columns);
    LegendLayout { left, columns, column_px, height: rows * LEGEND_ROW + 12 }
}

/// What a page's reader looks for in a chart: each series (`<g class="series"
/// data-series="…">`) and the legend (`<g class="legend">`). plotters writes no groups, so
/// a marker text is drawn where a group opens or closes and replaced by the tag afterwards.
#[derive(Default)]
struct Groups {
    tags: Vec<String>,
}

/// The text of a group marker (unlike any label a chart writes).
const GROUP_MARK: &str = "@@spinlab-group-";

impl Groups {
    /// Opens a group of `class` named `name` on `area`: what is drawn next belongs to it.
    fn open(&mut self, area: &DrawingArea<SVGBackend<'_>, Shift>, class: &str, name: &str) -> Drawn {
        let tag = if name.is_empty() {
            format!("<g class=\"{class}\">\n")
        } else {
            format!("<g class=\"{class}\" data-series=\"{}\">\n", attribute(name))
        };
        self.tags.push(tag);
        area.draw(&Text::new(format!("{GROUP_MARK}{}", self.tags.len() - 1), (0, 0), text_style(1)))?;
        Ok(())
    }

    /// Closes the group opened last.
    fn close(&self, area: &DrawingArea<SVGBackend<'_>, Shift>) -> Drawn {
        area.draw(&Text::new(format!("{GROUP_MARK}end"), (0, 0), text_style(1)))?;
        Ok(())
    }

    /// `svg` with each marker text replaced by its group's tag.
    fn apply(&self, svg: &str) -> String {
        let mut out = String::with_capacity(svg.len() + 64 * self.tags.len());
        let mut rest = svg;
        while let Some(at) = rest.find(GROUP_MARK) {
            let (Some(start), Some(len)) = (rest[..at].rfind("<text"), rest[at..].find("</text>\n")) else { break };
            out.push_str(&rest[..start]);
            let id: String = rest[at + GROUP_MARK.len()..].chars().take_while(char::is_ascii_alphanumeric).collect();
            match id.parse::<usize>().ok().and_then(|i| self.tags.get(i)) {
                Some(tag) => out.push_str(tag),
                None => out.push_str("</g>\n"),
            }
            rest = &rest[at + len + "</text>\n".len()..];
        }
        out.push_str(rest);
        out
    }
}

/// `text` safe inside an attribute value.
fn attribute(text: &str) -> String {
    text.replace('&', "&amp;").replace('"', "&quot;").replace('<', "&lt;").replace('>', "&gt;")
}

/// The plotting area of `chart` in pixels, for drawing group markers.
fn pixels<'b>(chart: &Chart<'_, 'b>) -> DrawingArea<SVGBackend<'b>, Shift> {
    chart.plotting_area().strip_coord_spec()
}

/// Draws the frame (title, axes, labels), then `body` inside it, then the legend under the
/// chart, outside the plotting area, so that it covers none of the data.
fn frame(
    title: &str,
    size: (u32, u32),
    x: &Axis,
    y: &Axis,
    y_label_width: u32,
    legend: &[Entry],
    body: impl FnOnce(&mut Chart<'_, '_>, &mut Groups) -> Drawn,
) -> Result<String, String> {
    let mut svg = String::new();
    let mut groups = Groups::default();
    let layout = legend_layout(legend, size.0, 12 + y_label_width);
    let result = (|| -> Drawn {
        let root = SVGBackend::with_string(&mut svg, (size.0, size.1 + layout.height)).into_drawing_area();
        root.fill(&WHITE)?;
        let (plot, below) = root.split_vertically(size.1);
        let mut chart = ChartBuilder::on(&plot)
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
        body(&mut chart, &mut groups)?;
        if !legend.is_empty() {
            draw_legend(&below, legend, &layout, &mut groups)?;
        }
        root.present()?;
        Ok(())
    })();
    result.map_err(|e| format!("drawing \"{title}\": {e}"))?;
    Ok(groups.apply(&svg))
}

fn draw_legend(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    entries: &[Entry],
    layout: &LegendLayout,
    groups: &mut Groups,
) -> Drawn {
    groups.open(area, "legend", "")?;
    for (i, entry) in entries.iter().enumerate() {
        let i = i as u32;
        let left = (layout.left + (i % layout.columns) * layout.column_px) as i32;
        let middle = (6 + (i / layout.columns) * LEGEND_ROW + LEGEND_ROW / 2) as i32;
        let c = entry.color;
        match entry.swatch {
            Swatch::Line => {
                area.draw(&PathElement::new(vec![(left, middle), (left + 18, middle)], c.stroke_width(3)))?
            }
            Swatch::Block => {
                area.draw(&Rectangle::new([(left + 3, middle - 6), (left + 15, middle + 6)], c.filled()))?
            }
            Swatch::Dot => area.draw(&Circle::new((left + 9, middle), 5, c.filled()))?,
        }
        let style = text_style(12).pos(Pos::new(HPos::Left, VPos::Center));
        area.draw(&Text::new(entry.name.clone(), (left + SWATCH_PX as i32, middle), style))?;
    }
    groups.close(area)
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
    let legend: Vec<Entry> =
        series.iter().map(|s| Entry { name: s.name.clone(), color: color(s.color), swatch: Swatch::Line }).collect();
    frame(title, (WIDTH, 440), x, y, 78, &legend, |chart, groups| {
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
            groups.open(&pixels(chart), "series", &s.name)?;
            chart.draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))?;
            chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, c.filled())))?;
            groups.close(&pixels(chart))?;
        }
        Ok(())
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
    let legend: Vec<Entry> = legend_entries
        .iter()
        .map(|(name, c)| Entry { name: name.clone(), color: color(*c), swatch: Swatch::Block })
        .collect();
    frame(title, (WIDTH, height), x, &y, (longest * 7 + 14).clamp(60, 300), &legend, |chart, groups| {
        for (i, b) in bars.iter().enumerate() {
            let v = x.map(b.value);
            if !v.is_finite() {
                continue;
            }
            let (y0, y1) = (i as f64 + 0.15, i as f64 + 0.85);
            groups.open(&pixels(chart), "series", &b.label)?;
            chart.draw_series(std::iter::once(Rectangle::new([(x.lo, y0), (v, y1)], color(b.color).filled())))?;
            chart.draw_series(std::iter::once(Text::new(
                number(b.value),
                (v + (x.hi - x.lo) * 0.005, i as f64 + 0.75),
                text_style(11),
            )))?;
            groups.close(&pixels(chart))?;
        }
        Ok(())
    })
}

/// Grouped vertical bars: for each category on x, one bar per group; `reference` draws a
/// dashed horizontal line (1.0 for ratios). [`grouped_bars_within`] without intervals.
pub fn grouped_bars(
    title: &str,
    categories: &[String],
    x_label: &str,
    y: &Axis,
    groups: &[(String, Vec<Option<f64>>)],
    reference: Option<(f64, &str)>,
) -> Result<String, String> {
    grouped_bars_within(title, categories, x_label, y, groups, &[], reference)
}

/// [`grouped_bars`] with a whisker over each bar from `intervals[group][category]`'s low end
/// to its high end, where there is one.
pub fn grouped_bars_within(
    title: &str,
    categories: &[String],
    x_label: &str,
    y: &Axis,
    groups: &[(String, Vec<Option<f64>>)],
    intervals: &[Vec<Option<(f64, f64)>>],
    reference: Option<(f64, &str)>,
) -> Result<String, String> {
    let x = Axis::categories(x_label, categories);
    let n = groups.len().max(1) as f64;
    let legend: Vec<Entry> = groups
        .iter()
        .enumerate()
        .map(|(g, (name, _))| Entry { name: name.clone(), color: color(g), swatch: Swatch::Block })
        .collect();
    frame(title, (WIDTH, 420), &x, y, 70, &legend, |chart, marks| {
        if let Some((value, label)) = reference {
            let v = y.map(value);
            if v.is_finite() {
                let style = RGBColor(60, 60, 60).stroke_width(1);
                let path = DashedLineSeries::new(vec![(x.lo, v), (x.hi, v)], 6, 4, style);
                chart.draw_series(path)?;
                chart.draw_series(std::iter::once(Text::new(label.to_string(), (x.lo + 0.02, v), text_style(11))))?;
            }
        }
        // A log axis has no zero: its bars grow from the reference, up or down, where there
        // is one.
        let base = match (y.scale, reference.map(|(value, _)| y.map(value))) {
            (Scale::Log, Some(r)) if r.is_finite() => r,
            _ => y.lo.max(y.map_floor()),
        };
        for (g, (name, values)) in groups.iter().enumerate() {
            let c = color(g);
            let bars = values.iter().enumerate().filter_map(|(i, v)| {
                let v = y.map((*v)?);
                if !v.is_finite() {
                    return None;
                }
                let left = i as f64 + 0.1 + 0.8 * g as f64 / n;
                let right = left + 0.8 / n * 0.9;
                Some(Rectangle::new([(left, base), (right, v)], c.filled()))
            });
            marks.open(&pixels(chart), "series", name)?;
            chart.draw_series(bars)?;
            let whiskers = intervals.get(g).into_iter().flatten().enumerate().filter_map(|(i, ends)| {
                let (low, high) = (*ends)?;
                let (low, high) = (y.map(low.max(f64::MIN_POSITIVE)).max(y.lo), y.map(high).min(y.hi));
                if !low.is_finite() || !high.is_finite() {
                    return None;
                }
                let middle = i as f64 + 0.1 + 0.8 * (g as f64 + 0.45) / n;
                Some(PathElement::new(vec![(middle, low), (middle, high)], RGBColor(40, 40, 40).stroke_width(1)))
            });
            chart.draw_series(whiskers)?;
            marks.close(&pixels(chart))?;
        }
        Ok(())
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
    frame(title, size, &x, &y, (longest * 7 + 14).clamp(50, 200), &[], |chart, groups| {
        for (r, row) in values.iter().enumerate() {
            groups.open(&pixels(chart), "series", rows.get(r).map_or("", String::as_str))?;
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
            groups.close(&pixels(chart))?;
        }
        Ok(())
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
    let drawn = |p: &Point| x.map(p.x).is_finite() && y.map(p.y).is_finite();
    let legend: Vec<Entry> = points
        .iter()
        .enumerate()
        .filter(|(_, p)| drawn(p))
        .map(|(i, p)| Entry { name: p.label.clone(), color: color(i), swatch: Swatch::Dot })
        .collect();
    frame(title, (WIDTH, 460), x, y, 78, &legend, |chart, groups| {
        for (i, p) in points.iter().enumerate().filter(|(_, p)| drawn(p)) {
            let (px, py) = (x.map(p.x), y.map(p.y));
            let c = color(i);
            groups.open(&pixels(chart), "series", &p.label)?;
            chart.draw_series(std::iter::once(Circle::new((px, py), 6, c.filled())))?;
            chart.draw_series(std::iter::once(Text::new(
                p.label.clone(),
                (px + (x.hi - x.lo) * 0.012, py),
                text_style(11),
            )))?;
            groups.close(&pixels(chart))?;
        }
        Ok(())
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
