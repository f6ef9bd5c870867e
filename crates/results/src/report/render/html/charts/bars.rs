//! Horizontal bar charts, grouped or stacked, with whiskers.

use super::*;

/// A bar's value and optional interval `(low, high)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bar {
    /// Length of the bar, data units.
    pub value: f64,
    /// Interval `(low, high)` in data units, drawn as a whisker.
    pub ci: Option<(f64, f64)>,
}

/// One series of a [`hbars`] chart: a value (or none) per category.
#[derive(Debug, Clone, PartialEq)]
pub struct BarSeries {
    /// Legend text.
    pub name: String,
    /// Fill colour.
    pub color: RGBColor,
    /// One entry per category, in category order.
    pub values: Vec<Option<Bar>>,
}

/// How [`hbars`] writes values on the bars.
#[derive(Debug, Clone, Copy)]
pub enum ValueLabels {
    /// After the end of each bar (grouped bars).
    AfterBar(fn(f64) -> String),
    /// Inside stacked segments wide enough to hold them.
    Inside(fn(f64) -> String),
}

/// Horizontal bars: one row per category (top to bottom), the series of a
/// row side by side (`stacked: false`) or end to end (`stacked: true`).
#[derive(Debug, Clone)]
pub struct HBars<'a> {
    /// Row labels, top to bottom.
    pub categories: &'a [String],
    /// The series, in legend order.
    pub series: Vec<BarSeries>,
    /// End to end (shares of a whole) rather than side by side.
    pub stacked: bool,
    /// The value axis.
    pub x: Axis,
    pub labels: ValueLabels,
    /// Show the legend even with one series.
    pub legend: bool,
    /// Width of the SVG, px (the height follows from the rows).
    pub width: u32,
}

/// Draws [`HBars`].
pub fn hbars(spec: &HBars, aria: &str) -> Result<String, String> {
    let n = spec.categories.len();
    let k = spec.series.len().max(1);
    let row_h: u32 = if spec.stacked {
        34
    } else {
        (14 * k as u32 + 14).max(30)
    };
    let height = row_h * n as u32 + 70;
    svg(spec.width, height, &legend(spec), aria, |area| {
        let label_w = spec
            .categories
            .iter()
            .map(|c| text_width(c))
            .max()
            .unwrap_or(20)
            .min(spec.width / 2);
        let x = &spec.x;
        let y = Axis {
            desc: String::new(),
            lo: 0.0,
            hi: n as f64,
            ticks: (0..n).map(|i| n as f64 - i as f64 - 0.5).collect(),
            log: false,
            step: 1.0,
        };
        let mut chart = ChartBuilder::on(area)
            .margin_left(6)
            .margin_right(26)
            .margin_top(8)
            .margin_bottom(4)
            .x_label_area_size(46)
            .y_label_area_size(label_w + 14)
            .build_cartesian_2d(x.coord(), y.coord())
            .map_err(err)?;
        let cats = spec.categories;
        let xf = |v: &f64| x.label(*v);
        let yf = |v: &f64| {
            let i = (n as f64 - v - 0.5).round();
            if i >= 0.0 && (i as usize) < n {
                fit(&cats[i as usize], spec.width / 2)
            } else {
                String::new()
            }
        };
        let mut m = chart.configure_mesh();
        m.bold_line_style(GRID)
            .light_line_style(TRANSPARENT)
            .axis_style(AXIS)
            .label_style((FONT, LABEL_SIZE).into_font().color(&BLACK))
            .axis_desc_style((FONT, DESC_SIZE).into_font().color(&BLACK))
            .x_label_formatter(&xf)
            .y_label_formatter(&yf)
            .disable_y_mesh()
            .x_desc(x.desc.clone());
        m.draw().map_err(err)?;
        let base = x.t(if x.log { 0.0 } else { x.lo.max(0.0) });
        for ci in 0..n {
            let top = n as f64 - ci as f64;
            let mut end = base;
            let mut acc = 0.0;
            for (si, s) in spec.series.iter().enumerate() {
                let Some(bar) = s.values.get(ci).copied().flatten() else {
                    continue;
                };
                if !bar.value.is_finite() {
                    continue;
                }
                let (y0, y1, x0, x1) = if spec.stacked {
                    let x0 = end;
                    acc += bar.value;
                    end = x.t(acc);
                    (top - 0.8, top - 0.2, x0, end)
                } else {
                    let band = 0.8 / k as f64;
                    let y1 = top - 0.1 - band * si as f64;
                    (y1 - band * 0.9, y1, base, x.t(bar.value))
                };
                if x1 > x0 {
                    chart
                        .draw_series(std::iter::once(Rectangle::new(
                            [(x0, y0), (x1, y1)],
                            s.color.filled(),
                        )))
                        .map_err(err)?;
                }
                let mid = (y0 + y1) / 2.0;
                if let Some((lo, hi)) = bar.ci.filter(|(lo, hi)| lo.is_finite() && hi.is_finite()) {
                    let shift = if spec.stacked { acc - bar.value } else { 0.0 };
                    let plot = chart.plotting_area().strip_coord_spec();
                    let (ox, oy) = plot.get_base_pixel();
                    let a = chart.backend_coord(&(x.t(shift + lo), mid));
                    let b = chart.backend_coord(&(x.t(shift + hi), mid));
                    whisker(
                        &plot,
                        (a.0 - ox, a.1 - oy),
                        (b.0 - ox, b.1 - oy),
                        WHISKER.stroke_width(1),
                    )?;
                }
                value_label(&chart, spec.labels, bar, s.color, (x0, x1), mid, x)?;
            }
        }
        Ok(())
    })
}

/// The legend: one box per series, when there are several or
/// `spec.legend` asks for one.
fn legend(spec: &HBars) -> Vec<LegendItem> {
    if spec.series.len() <= 1 && !spec.legend {
        return Vec::new();
    }
    spec.series
        .iter()
        .map(|s| LegendItem {
            name: s.name.clone(),
            style: Style {
                color: s.color,
                marker: Marker::Box,
            },
            line: false,
        })
        .collect()
}

type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<Coord, Coord>>;

/// Writes `bar`'s value as `labels` says: after the bar (or its whisker),
/// or inside the segment `x0..x1` (plotted units) in ink that contrasts
/// with `color`, when it fits.
fn value_label(
    chart: &Chart,
    labels: ValueLabels,
    bar: Bar,
    color: RGBColor,
    (x0, x1): (f64, f64),
    mid: f64,
    x: &Axis,
) -> Result<(), String> {
    let plot = chart.plotting_area().strip_coord_spec();
    let (ox, oy) = plot.get_base_pixel();
    match labels {
        ValueLabels::AfterBar(f) => {
            let hi = bar.ci.map_or(bar.value, |c| c.1.max(bar.value));
            let at = chart.backend_coord(&(x.t(hi), mid));
            let style = TextStyle::from((FONT, LABEL_SIZE - 2).into_font())
                .color(&BLACK)
                .pos(Pos::new(HPos::Left, VPos::Center));
            plot.draw_text(&f(bar.value), &style, (at.0 - ox + 4, at.1 - oy))
                .map_err(err)
        }
        ValueLabels::Inside(f) => {
            let text = f(bar.value);
            let a = chart.backend_coord(&(x0, mid));
            let b = chart.backend_coord(&(x1, mid));
            if (b.0 - a.0) as u32 <= text_width(&text) + 6 {
                return Ok(());
            }
            let luma = (color.0 as u32 * 299 + color.1 as u32 * 587 + color.2 as u32 * 114) / 1000;
            let ink = if luma < 140 { WHITE } else { BLACK };
            let style = TextStyle::from((FONT, LABEL_SIZE - 2).into_font())
                .color(&ink)
                .pos(Pos::new(HPos::Center, VPos::Center));
            plot.draw_text(&text, &style, ((a.0 + b.0) / 2 - ox, a.1 - oy))
                .map_err(err)
        }
    }
}
