//! Line charts: panels of lines with error bars, sharing an x axis.

use super::*;

/// A point of a line with an optional interval `(low, high)` drawn as an
/// error bar.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// Position on the x axis, in data units.
    pub x: f64,
    /// Position on the y axis, in data units.
    pub y: f64,
    /// Interval `(low, high)` in data units, drawn as an error bar.
    pub ci: Option<(f64, f64)>,
}

/// One line of a [`Panel`].
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// Colour and marker.
    pub style: Style,
    /// Sorted by x; non-finite points are skipped.
    pub points: Vec<Point>,
}

/// One plot of a [`lines()`] chart, sharing the x axis.
#[derive(Debug, Clone, PartialEq)]
pub struct Panel {
    /// Drawn above the plot (small multiples), or none.
    pub title: Option<String>,
    /// The panel's own y axis.
    pub y: Axis,
    /// The lines drawn, in legend order.
    pub lines: Vec<Line>,
    /// Events on the x axis drawn behind the lines (faults, outages).
    pub marks: Vec<XMark>,
}

/// An event on the x axis of a [`Panel`]: a dashed vertical line at
/// `from`, or with `to` a light band from `from` to `to` (data units),
/// labelled at the top of the plot.
#[derive(Debug, Clone, PartialEq)]
pub struct XMark {
    pub from: f64,
    pub to: Option<f64>,
    pub label: String,
    pub color: RGBColor,
}

/// A line chart: `panels` in a grid of `columns`, each `panel_height`
/// pixels high, sharing the x axis and the legend.
pub fn lines(
    x: &Axis,
    panels: &[Panel],
    legend: &[LegendItem],
    columns: usize,
    width: u32,
    panel_height: u32,
    aria: &str,
) -> Result<String, String> {
    let columns = columns.max(1);
    let rows = panels.len().div_ceil(columns).max(1);
    svg(width, panel_height * rows as u32, legend, aria, |area| {
        let cells = area.split_evenly((rows, columns));
        for (panel, cell) in panels.iter().zip(&cells) {
            draw_panel(cell, x, panel)?;
        }
        Ok(())
    })
}

fn draw_panel(area: &Area, x: &Axis, panel: &Panel) -> Result<(), String> {
    let y = &panel.y;
    let y_label_w = y
        .ticks
        .iter()
        .map(|t| text_width(&y.label(*t)))
        .max()
        .unwrap_or(20);
    let mut b = ChartBuilder::on(area);
    b.margin_left(6)
        .margin_right(18)
        .margin_top(if panel.title.is_some() { 4 } else { 10 })
        .margin_bottom(4)
        .x_label_area_size(46)
        .y_label_area_size(y_label_w + 34);
    if let Some(t) = &panel.title {
        b.caption(t, (FONT, DESC_SIZE + 1).into_font().color(&BLACK));
    }
    let mut chart = b.build_cartesian_2d(x.coord(), y.coord()).map_err(err)?;
    let xf = |v: &f64| x.label(*v);
    let yf = |v: &f64| y.label(*v);
    mesh(&mut chart, x, y, &xf, &yf, true)?;
    // Everything is drawn in pixels of the plot area, so that series
    // with error bars can be dodged a few pixels apart at a shared x.
    let plot = chart.plotting_area().strip_coord_spec();
    let (ox, oy) = plot.get_base_pixel();
    let px = |xv: f64, yv: f64| {
        let (bx, by) = chart.backend_coord(&(x.t(xv), y.t(yv)));
        (bx - ox, by - oy)
    };
    for (k, m) in panel.marks.iter().enumerate() {
        draw_mark(&plot, &chart, x, y, m, k % 3)?;
    }
    let n = panel.lines.len();
    let dodge = n > 1
        && panel
            .lines
            .iter()
            .any(|l| l.points.iter().any(|p| p.ci.is_some()));
    for (k, line) in panel.lines.iter().enumerate() {
        let c = line.style.color;
        let shift = if dodge {
            ((k as f64 - (n - 1) as f64 / 2.0) * 5.0).round() as i32
        } else {
            0
        };
        let points: Vec<&Point> = line
            .points
            .iter()
            .filter(|p| p.x.is_finite() && p.y.is_finite())
            .collect();
        let path: Vec<(i32, i32)> = points
            .iter()
            .map(|p| {
                let (a, b) = px(p.x, p.y);
                (a + shift, b)
            })
            .collect();
        plot.draw(&PathElement::new(path.clone(), c.stroke_width(2)))
            .map_err(err)?;
        for p in &points {
            if let Some((lo, hi)) = p.ci.filter(|(lo, hi)| lo.is_finite() && hi.is_finite()) {
                let (a, top) = px(p.x, hi);
                let (_, bottom) = px(p.x, lo);
                whisker(
                    &plot,
                    (a + shift, top),
                    (a + shift, bottom),
                    c.stroke_width(2),
                )?;
            }
        }
        for &at in &path {
            draw_marker(&plot, line.style.marker, at, c)?;
        }
    }
    Ok(())
}

/// Draws `m` on `plot`, the plotting area of `chart` (pixels from its
/// top left corner): a band or a dashed line over the whole height, its
/// label near the top, left-aligned just right of `m.from`, in text row
/// `row` (so that labels of nearby marks do not overlap).
fn draw_mark(
    plot: &Area,
    chart: &ChartContext<'_, SVGBackend<'_>, Cartesian2d<Coord, Coord>>,
    x: &Axis,
    y: &Axis,
    m: &XMark,
    row: usize,
) -> Result<(), String> {
    if !m.from.is_finite() {
        return Ok(());
    }
    let (ox, oy) = plot.get_base_pixel();
    let at = |xv: f64, yv: f64| {
        let (a, b) = chart.backend_coord(&(x.t(xv), yv));
        (a - ox, b - oy)
    };
    let (x0, top) = at(m.from, y.hi);
    let (_, bottom) = at(m.from, y.lo);
    match m.to.filter(|t| t.is_finite()) {
        Some(to) => {
            let (x1, _) = at(to, y.hi);
            plot.draw(&Rectangle::new(
                [(x0, top), (x1.max(x0 + 1), bottom)],
                m.color.mix(0.15).filled(),
            ))
            .map_err(err)?;
        }
        None => {
            // Dashes of 6 px with gaps of 4 px.
            let mut y0 = top;
            while y0 < bottom {
                let y1 = (y0 + 6).min(bottom);
                plot.draw(&PathElement::new(
                    vec![(x0, y0), (x0, y1)],
                    m.color.stroke_width(2),
                ))
                .map_err(err)?;
                y0 += 10;
            }
        }
    }
    let style = TextStyle::from((FONT, LABEL_SIZE - 3).into_font())
        .color(&m.color)
        .pos(Pos::new(HPos::Left, VPos::Top));
    plot.draw_text(&m.label, &style, (x0 + 3, top + 2 + 13 * row as i32))
        .map_err(err)
}
