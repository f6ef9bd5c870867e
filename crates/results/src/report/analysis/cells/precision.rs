//! Per cell of a `--precision` study: whether its TPS reached the target
//! (the sequential rule of `stats::sequential`) and with how many
//! repetitions, for every report (the Cells in detail table, the lines
//! under Cells: `tables::cells::verdict_notes`, cells.json).

use super::CellSummary;
use crate::model::Precision;
use crate::stats::sequential;

/// How a cell ended against the study's `--precision` target.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PrecisionOutcome {
    /// The target relative half-width, %.
    pub target_pct: f64,
    /// The most repetitions the study allowed a cell.
    pub max_repeat: u32,
    /// Whether the cell's TPS reached the target by the sequential rule.
    pub reached: bool,
    /// Complete runs of the cell.
    pub n: usize,
    /// The relative half-width of the 95 % interval of the mean TPS, %
    /// (NaN with fewer than 2 runs).
    pub half_width_pct: f64,
}

impl PrecisionOutcome {
    /// The outcome of cell `c` against `p`; `None` without TPS.
    pub fn of(c: &CellSummary, p: Precision) -> Option<PrecisionOutcome> {
        let s = c.tps.as_ref()?;
        Some(PrecisionOutcome {
            target_pct: p.target_pct,
            max_repeat: p.max_repeat,
            reached: sequential::reached(s, p.target_pct / 100.0),
            n: s.n,
            half_width_pct: 100.0 * sequential::relative_half_width(s),
        })
    }

    /// `±2 % reached with 7 runs (±1.8 %)` or `±2 % not reached: ±3.4 %
    /// after 20 runs (the maximum)`.
    pub fn label(&self) -> String {
        let t = crate::stats::fmt_mde(self.target_pct);
        let hw = if self.half_width_pct.is_finite() {
            format!("±{}", crate::stats::fmt_mde(self.half_width_pct))
        } else {
            "no interval".into()
        };
        if self.reached {
            format!("±{t} reached with {} runs ({hw})", self.n)
        } else if self.n as u32 >= self.max_repeat {
            format!("±{t} not reached: {hw} after {} runs (the maximum)", self.n)
        } else {
            format!(
                "±{t} not reached: {hw} after {} runs (stopped early)",
                self.n
            )
        }
    }
}
