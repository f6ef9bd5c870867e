//! Inline SVG charts for the HTML report, drawn with `plotters`' SVG
//! backend.
//!
//! `plotters` is built with `default-features = false` and only
//! `svg_backend`: no `ttf` (font-kit, which would look for system fonts)
//! and no bitmap backends. Without a font backend plotters lays text out
//! with its built-in "naive" estimate (a fixed width per character), which
//! is all an SVG backend can know anyway: the browser sets the `<text>`
//! elements in its own `sans-serif` font. So nothing here reads a font at
//! build or run time. plotters draws the frame, axes, ticks, tick labels,
//! axis descriptions and panel titles; lines, markers, error bars, bars and
//! the legend strip are drawn here from its basic elements (its own
//! `ErrorBar` marks the mean with a circle, which reads badly on bars, and
//! its legend box sits inside the plot, over the data).
//!
//! Every chart has its axes described with units, a legend drawn in a strip
//! above the plot (so it never covers data), and colours from the
//! Okabe–Ito palette (safe for the common colour-vision deficiencies);
//! line series also differ by marker shape. Axes use ticks computed here
//! ([`Axis`]): "nice" linear steps, or for a log scale the 1-2-5 values of
//! each decade, plotted as `log10(v)` on a linear coordinate and labelled
//! with `v`.
//!
//! Charts are returned as `<svg>` strings without the `xmlns` attribute
//! (inline SVG in HTML needs none, and so the page names no URL at all),
//! with `role="img"`, an `aria-label`, and a `class` for CSS scaling.

use plotters::coord::Shift;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

mod bars;
mod lines;

pub use bars::{Bar, BarSeries, HBars, ValueLabels, hbars};
pub use lines::{Line, Panel, Point, XMark, lines};

/// The Okabe–Ito palette (Okabe & Ito, "Color Universal Design", 2002) in
/// the order series take it: blue, vermillion, bluish green, orange,
/// reddish purple, sky blue, black, yellow (yellow last: weak on white).
pub const PALETTE: [RGBColor; 8] = [
    RGBColor(0x00, 0x72, 0xB2),
    RGBColor(0xD5, 0x5E, 0x00),
    RGBColor(0x00, 0x9E, 0x73),
    RGBColor(0xE6, 0x9F, 0x00),
    RGBColor(0xCC, 0x79, 0xA7),
    RGBColor(0x56, 0xB4, 0xE9),
    RGBColor(0x00, 0x00, 0x00),
    RGBColor(0xF0, 0xE4, 0x42),
];

/// Grey for an "other" bucket.
pub const GREY: RGBColor = RGBColor(0xA0, 0xA0, 0xA0);

/// The colour of series `i` (the palette repeats after 8).
pub fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

const FONT: &str = "sans-serif";
/// plotters divides font sizes by 1.24 in SVG: 16 → 12.9 px.
const LABEL_SIZE: u32 = 16;
const DESC_SIZE: u32 = 17;
const GRID: RGBColor = RGBColor(0xE3, 0xE3, 0xE3);
const AXIS: RGBColor = RGBColor(0x55, 0x55, 0x55);
const LEGEND_ROW: u32 = 22;
/// Error bars on bars: dark grey, visible on every palette colour.
const WHISKER: RGBColor = RGBColor(0x33, 0x33, 0x33);

/// Estimated width in pixels of `s` at [`LABEL_SIZE`].
fn text_width(s: &str) -> u32 {
    (s.chars().count() as f64 * 7.4).ceil() as u32
}

/// `s`, cut with `…` to about `px` pixels.
fn fit(s: &str, px: u32) -> String {
    let max = (f64::from(px) / 7.4) as usize;
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut cut: String = s.chars().take(max.saturating_sub(1)).collect();
        cut.push('…');
        cut
    }
}

/// A chart failed to draw (never expected: SVG into a string).
fn err<E: std::fmt::Display>(e: E) -> String {
    format!("chart: {e}")
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// A linear f64 coordinate ticked at given values. (plotters'
/// `WithKeyPoints<RangedCoordf64>` cannot be used with `configure_mesh`:
/// it has no value formatter.)
#[derive(Debug, Clone)]
struct Coord {
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
}

impl Ranged for Coord {
    type ValueType = f64;
    type FormatOption = DefaultFormatting;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        if self.hi == self.lo {
            return (limit.0 + limit.1) / 2;
        }
        let f = (v - self.lo) / (self.hi - self.lo);
        limit.0 + (f64::from(limit.1 - limit.0) * f).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

/// A numeric axis: its range and ticks in plotting space (`log10(v)` on
/// a log scale), and how to label a tick.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// Description with unit, e.g. `throughput (tx/s)`.
    pub desc: String,
    /// Low end of the axis, plotting space.
    pub lo: f64,
    /// High end of the axis, plotting space.
    pub hi: f64,
    /// Tick positions, plotting space.
    pub ticks: Vec<f64>,
    /// Base-10 logarithmic: plotting space is `log10(v)`.
    pub log: bool,
    /// Distance between linear ticks (decides the decimals shown).
    step: f64,
}

impl Axis {
    /// A linear axis from 0 to a "nice" value at or above `max` plus 5 %.
    pub fn from_zero(desc: &str, max: f64) -> Axis {
        Self::linear(desc, 0.0, max * 1.05)
    }

    /// A linear axis covering `[min, max]` with about 5 nice ticks.
    pub fn linear(desc: &str, min: f64, max: f64) -> Axis {
        let (min, max) = if min.is_finite() && max.is_finite() && max > min {
            (min, max)
        } else if min.is_finite() && min != 0.0 {
            (min.min(0.0), min.abs().max(min))
        } else {
            (0.0, 1.0)
        };
        let step = nice_step(max - min, 5);
        let lo = (min / step).floor() * step;
        let hi = (max / step - 1e-9).ceil() * step;
        let n = ((hi - lo) / step).round() as usize;
        let ticks = (0..=n).map(|i| lo + step * i as f64).collect();
        Axis {
            desc: desc.into(),
            lo,
            hi,
            ticks,
            log: false,
            step,
        }
    }

    /// Time in the measured window, from 0 to the window's `end` (s):
    /// ticked at nice steps of `end`, ending at `end` itself rather than
    /// at the next tick past the last point (issue #31: a 10 s window
    /// whose last point fell at 10.02 s drew an axis to 12.5 s), or at
    /// `t_max` when a point lies past `end` (a last partial second).
    /// Without a window (`end` 0) it spans the points, as [`Axis::linear`].
    pub fn window(desc: &str, end: f64, t_max: f64) -> Axis {
        if !(end.is_finite() && end > 0.0) {
            return Self::linear(desc, 0.0, t_max.max(1.0));
        }
        let step = nice_step(end, 5);
        let n = (end / step + 1e-9).floor() as usize;
        Axis {
            desc: desc.into(),
            lo: 0.0,
            hi: if t_max.is_finite() {
                end.max(t_max)
            } else {
                end
            },
            ticks: (0..=n).map(|i| step * i as f64).collect(),
            log: false,
            step,
        }
    }

    /// A base-10 log axis over whole decades around `[min, max]` (both
    /// > 0), ticked at 1, 2, 5 × 10ᵏ (only powers of 10 past 4 decades).
    pub fn log(desc: &str, min: f64, max: f64) -> Axis {
        let lo = min.max(1e-9).log10().floor();
        let hi = max.max(min * 10.0).log10().ceil().max(lo + 1.0);
        let decades = (hi - lo) as i32;
        let mut ticks = Vec::new();
        for e in lo as i32..=hi as i32 {
            for m in [1.0f64, 2.0, 5.0] {
                let t = (m * 10f64.powi(e)).log10();
                if t <= hi + 1e-9 && (m == 1.0 || decades <= 4) {
                    ticks.push(t);
                }
            }
        }
        Axis {
            desc: format!("{desc}, log scale"),
            lo,
            hi,
            ticks,
            log: true,
            step: 0.0,
        }
    }

    /// An axis ticked exactly at `values` (e.g. the client counts run),
    /// log-scaled when they are positive and span 16× or more.
    pub fn at_values(desc: &str, values: &[f64]) -> Axis {
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if !(min.is_finite() && max.is_finite()) {
            return Self::linear(desc, 0.0, 1.0);
        }
        let log = min > 0.0 && max / min >= 16.0;
        let tv = |v: f64| if log { v.log10() } else { v };
        let (a, b) = (tv(min), tv(max));
        let pad = if b > a {
            (b - a) * 0.06
        } else {
            0.5_f64.max(a.abs() * 0.1)
        };
        let mut ticks: Vec<f64> = values.iter().map(|v| tv(*v)).collect();
        ticks.sort_by(f64::total_cmp);
        ticks.dedup();
        // Drop ticks that would collide (closer than 3 % of the range).
        let span = b - a + 2.0 * pad;
        let mut kept: Vec<f64> = Vec::new();
        for t in ticks {
            if kept.last().is_none_or(|k| t - k >= span * 0.03) {
                kept.push(t);
            }
        }
        let desc = if log {
            format!("{desc}, log scale")
        } else {
            desc.to_string()
        };
        Axis {
            desc,
            lo: a - pad,
            hi: b + pad,
            ticks: kept,
            log,
            step: 0.0,
        }
    }

    /// A linear axis from 0, or a log axis when the positive `values`
    /// span more than `spread`× (zeros are then not drawn).
    pub fn auto(desc: &str, values: &[f64], spread: f64) -> Axis {
        let pos: Vec<f64> = values
            .iter()
            .copied()
            .filter(|v| v.is_finite() && *v > 0.0)
            .collect();
        let min = pos.iter().copied().fold(f64::INFINITY, f64::min);
        let max = pos.iter().copied().fold(0.0, f64::max);
        if pos.len() >= 2 && max / min > spread {
            Self::log(desc, min, max)
        } else {
            Self::from_zero(desc, max.max(f64::MIN_POSITIVE))
        }
    }

    /// A value in plotting space (log axes clamp at the axis' low end).
    pub fn t(&self, v: f64) -> f64 {
        if self.log {
            if v > 0.0 {
                v.log10().max(self.lo)
            } else {
                self.lo
            }
        } else {
            v
        }
    }

    /// The label of tick `t` (plotting space).
    pub fn label(&self, t: f64) -> String {
        if self.log {
            compact(10f64.powf(t), 0.0)
        } else {
            compact(t, self.step)
        }
    }

    fn coord(&self) -> Coord {
        Coord {
            lo: self.lo,
            hi: self.hi,
            ticks: self.ticks.clone(),
        }
    }
}

/// A "nice" step (1, 2, 2.5 or 5 × 10ᵏ) giving about `target` intervals.
fn nice_step(range: f64, target: usize) -> f64 {
    let raw = (range / target as f64).max(1e-12);
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let nice = match f {
        f if f <= 1.0 => 1.0,
        f if f <= 2.0 => 2.0,
        f if f <= 2.5 => 2.5,
        f if f <= 5.0 => 5.0,
        _ => 10.0,
    };
    nice * mag
}

/// A tick value: `12`, `0.25`, `12.5k`, `3M` (decimals from `step`, or as
/// few as needed when `step` is 0).
fn compact(v: f64, step: f64) -> String {
    let (div, suffix) = match v.abs().max(step) {
        x if x >= 1e6 => (1e6, "M"),
        x if x >= 1e4 => (1e3, "k"),
        _ => (1.0, ""),
    };
    let (v, step) = (v / div, step / div);
    let decimals = if step > 0.0 {
        (-(step.log10().floor())).clamp(0.0, 6.0) as usize
            + usize::from((step * 10f64.powf(-(step.log10().floor()))).fract() > 1e-6)
    } else if (v - v.round()).abs() < 1e-9 {
        0
    } else {
        (-(v.abs().log10().floor())).clamp(1.0, 6.0) as usize
    };
    let s = format!("{v:.decimals$}");
    let s = if s == "-0" { "0".to_string() } else { s };
    format!("{s}{suffix}")
}

/// How a series is marked: its colour and marker shape.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Style {
    /// Line, marker and error-bar colour.
    pub color: RGBColor,
    /// Marker at each point.
    pub marker: Marker,
}

/// A point marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    /// No marker (dense time series).
    None,
    /// A filled circle.
    Circle,
    /// A filled triangle.
    Triangle,
    /// A filled square.
    Square,
    /// An x.
    Cross,
    /// A filled box (bars and stacked segments in legends).
    Box,
}

impl Marker {
    /// Marker of line series `i`.
    pub fn nth(i: usize) -> Marker {
        [
            Marker::Circle,
            Marker::Triangle,
            Marker::Square,
            Marker::Cross,
        ][i % 4]
    }
}

/// Draws marker `m` centred at pixel `(x, y)` of `area`.
fn draw_marker(area: &Area, m: Marker, (x, y): (i32, i32), c: RGBColor) -> Result<(), String> {
    let filled = c.filled();
    match m {
        Marker::None => Ok(()),
        Marker::Circle => area.draw(&Circle::new((x, y), 4, filled)).map_err(err),
        Marker::Triangle => area
            .draw(&TriangleMarker::new((x, y), 5, filled))
            .map_err(err),
        Marker::Square => area
            .draw(&Rectangle::new([(x - 4, y - 4), (x + 4, y + 4)], filled))
            .map_err(err),
        Marker::Cross => area
            .draw(&Cross::new((x, y), 4, c.stroke_width(2)))
            .map_err(err),
        Marker::Box => area
            .draw(&Rectangle::new([(x - 6, y - 6), (x + 6, y + 6)], filled))
            .map_err(err),
    }
}

/// One legend entry; `line` draws a short line through the marker.
#[derive(Debug, Clone, PartialEq)]
pub struct LegendItem {
    /// The text, as given (plotters escapes it).
    pub name: String,
    /// Colour and marker of the swatch.
    pub style: Style,
    /// Draw a short line through the marker (line series).
    pub line: bool,
}

/// Rows needed for `items` across `width` pixels.
fn legend_rows(items: &[LegendItem], width: u32) -> u32 {
    let mut rows = u32::from(!items.is_empty());
    let mut x = 10;
    for it in items {
        let w = legend_item_width(it);
        if x + w > width && x > 10 {
            rows += 1;
            x = 10;
        }
        x += w;
    }
    rows
}

fn legend_item_width(it: &LegendItem) -> u32 {
    34 + text_width(&it.name) + 18
}

/// Draws the legend strip (items left to right, wrapping).
fn draw_legend(area: &Area, items: &[LegendItem]) -> Result<(), String> {
    let width = area.dim_in_pixel().0;
    let style = TextStyle::from((FONT, LABEL_SIZE).into_font())
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    let (mut x, mut y) = (10u32, LEGEND_ROW / 2 + 4);
    for it in items {
        let w = legend_item_width(it);
        if x + w > width && x > 10 {
            x = 10;
            y += LEGEND_ROW;
        }
        let (xi, yi) = (x as i32, y as i32);
        if it.line {
            area.draw(&PathElement::new(
                vec![(xi, yi), (xi + 26, yi)],
                it.style.color.stroke_width(2),
            ))
            .map_err(err)?;
        }
        draw_marker(area, it.style.marker, (xi + 13, yi), it.style.color)?;
        area.draw_text(&it.name, &style, (xi + 32, yi))
            .map_err(err)?;
        x += w;
    }
    Ok(())
}

/// Renders a chart of `width` × (legend + `height`) pixels into an SVG
/// string; `draw` gets the plot area below the legend.
fn svg(
    width: u32,
    height: u32,
    legend: &[LegendItem],
    aria: &str,
    draw: impl FnOnce(&Area) -> Result<(), String>,
) -> Result<String, String> {
    let legend_h = legend_rows(legend, width) * LEGEND_ROW + u32::from(!legend.is_empty()) * 6;
    let mut out = String::new();
    {
        let root =
            SVGBackend::with_string(&mut out, (width, height + legend_h)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let (top, plot) = root.split_vertically(legend_h);
        if !legend.is_empty() {
            draw_legend(&top, legend)?;
        }
        draw(&plot)?;
        root.present().map_err(err)?;
    }
    Ok(inline(&out, aria))
}

/// Makes plotters' SVG document inline-ready: no `xmlns`, an accessible
/// name, a CSS class.
fn inline(svg: &str, aria: &str) -> String {
    let mut aria_esc = String::new();
    for c in aria.chars() {
        match c {
            '<' => aria_esc.push_str("&lt;"),
            '>' => aria_esc.push_str("&gt;"),
            '&' => aria_esc.push_str("&amp;"),
            '"' => aria_esc.push_str("&quot;"),
            c => aria_esc.push(c),
        }
    }
    svg.replacen(
        " xmlns=\"http://www.w3.org/2000/svg\"",
        &format!(" class=\"chart\" role=\"img\" aria-label=\"{aria_esc}\""),
        1,
    )
}

/// Configures and draws the mesh of a chart.
fn mesh<'a, 'b>(
    chart: &mut ChartContext<'a, SVGBackend<'b>, Cartesian2d<Coord, Coord>>,
    x: &Axis,
    y: &Axis,
    x_fmt: &dyn Fn(&f64) -> String,
    y_fmt: &dyn Fn(&f64) -> String,
    show_x_desc: bool,
) -> Result<(), String> {
    let mut m = chart.configure_mesh();
    m.bold_line_style(GRID)
        .light_line_style(TRANSPARENT)
        .axis_style(AXIS)
        .label_style((FONT, LABEL_SIZE).into_font().color(&BLACK))
        .axis_desc_style((FONT, DESC_SIZE).into_font().color(&BLACK))
        .x_label_formatter(x_fmt)
        .y_label_formatter(y_fmt)
        .y_desc(y.desc.clone());
    if show_x_desc {
        m.x_desc(x.desc.clone());
    }
    m.draw().map_err(err)
}

/// An error bar between pixels `a` and `b` (one of x or y equal) with
/// caps across both ends.
fn whisker(area: &Area, a: (i32, i32), b: (i32, i32), style: ShapeStyle) -> Result<(), String> {
    area.draw(&PathElement::new(vec![a, b], style))
        .map_err(err)?;
    let cap = |p: (i32, i32)| {
        if a.0 == b.0 {
            vec![(p.0 - 5, p.1), (p.0 + 5, p.1)]
        } else {
            vec![(p.0, p.1 - 5), (p.0, p.1 + 5)]
        }
    };
    area.draw(&PathElement::new(cap(a), style)).map_err(err)?;
    area.draw(&PathElement::new(cap(b), style)).map_err(err)
}

/// The sentence a chart's note gets when its axis `x` is logarithmic
/// ([`Axis::auto`] switches when the `what` span more than 30×), else
/// nothing.
pub fn log_note(x: &Axis, what: &str) -> String {
    if x.log {
        format!(" Logarithmic axis: the {what} span more than 30×.")
    } else {
        String::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_linear_ticks() {
        let a = Axis::from_zero("tps", 152.0);
        assert_eq!(a.lo, 0.0);
        assert!(a.hi >= 152.0 * 1.05 && a.hi <= 200.0, "{a:?}");
        assert_eq!(a.ticks.first(), Some(&0.0));
        assert_eq!(a.label(50.0), "50");
        let s = Axis::linear("x", 0.0, 0.9);
        assert_eq!(s.label(s.ticks[1]), "0.2");
        assert_eq!(compact(12500.0, 2500.0), "12.5k");
        assert_eq!(compact(2_000_000.0, 1_000_000.0), "2M");
    }

    /// Issue #31: a 10 s window's axis ends at 10 s, ticked every 2 s,
    /// although its last point lies at 10.02 s.
    #[test]
    fn a_window_axis_ends_at_the_window() {
        let a = Axis::window("time (s)", 10.0, 10.02);
        assert_eq!(a.ticks, vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert!((a.lo, a.hi) == (0.0, 10.02), "{a:?}");
        let b = Axis::window("time (s)", 10.0, 7.0);
        assert_eq!((b.lo, b.hi), (0.0, 10.0));
        // The linear axis it replaces ran to 12.5 s.
        assert_eq!(Axis::linear("time (s)", 0.0, 10.02).hi, 12.5);
        // No window: the points' span.
        assert_eq!(Axis::window("t", 0.0, 4.0).hi, 4.0);
    }

    #[test]
    fn log_ticks_and_values_axis() {
        let a = Axis::log("ms", 0.8, 260.0);
        assert_eq!((a.lo, a.hi), (-1.0, 3.0));
        assert!(a.ticks.contains(&0.0) && a.ticks.contains(&2.0));
        assert_eq!(a.label(a.t(20.0)), "20");
        assert_eq!(a.label(-1.0), "0.1");
        let v = Axis::at_values("clients", &[1.0, 4.0, 8.0]);
        assert!(!v.log);
        assert_eq!(v.ticks, [1.0, 4.0, 8.0]);
        let w = Axis::at_values("clients", &[1.0, 4.0, 16.0, 64.0]);
        assert!(w.log && w.desc.ends_with("log scale"));
        assert_eq!(w.label(w.ticks[3]), "64");
    }

    #[test]
    fn svg_is_inline_and_closed() {
        let cats = vec!["a <b>".to_string(), "c".to_string()];
        let s = hbars(
            &HBars {
                categories: &cats,
                series: vec![BarSeries {
                    name: "v".into(),
                    color: color(0),
                    values: vec![
                        Some(Bar {
                            value: 3.0,
                            ci: Some((2.0, 4.0)),
                        }),
                        None,
                    ],
                }],
                stacked: false,
                x: Axis::from_zero("value (ms)", 4.0),
                labels: ValueLabels::AfterBar(|v| format!("{v}")),
                legend: true,
                width: 600,
            },
            "test \"chart\"",
        )
        .unwrap();
        assert!(
            s.starts_with("<svg ") && s.trim_end().ends_with("</svg>"),
            "{s}"
        );
        assert!(!s.contains("http"), "{s}");
        assert!(s.contains("a &lt;b&gt;") && s.contains("value (ms)"), "{s}");
        assert!(s.contains("aria-label=\"test &quot;chart&quot;\""));
        assert_eq!(fit("abcdef", 30), "abc…");
        assert_eq!(fit("abc", 30), "abc");
    }
}
