//! The regression gate's table (`isobench compare --fail-on-regression`,
//! [`crate::report::analysis::gate`]): one row per cell and metric that
//! did not pass (every row when asked), with BASE's and NEW's means, the
//! change, the smallest change the comparison could detect, the gate's
//! status and why.

use super::table::{Column, Mark, Row as TableRow, Table, Value};
use crate::report::analysis::gate::{Row, Status, count};
use crate::report::{format::NA, format::fmt_ms, format::fmt_pct_change, format::fmt_tps};
use crate::stats;

/// The gate's rows that are not a pass (all of them when `all`).
pub fn gate(rows: &[Row], all: bool) -> Table {
    let mut t = Table::new(vec![
        Column::text("cell"),
        Column::text("metric"),
        Column::num("BASE"),
        Column::num("NEW"),
        Column::num("delta"),
        Column::num("MDE"),
        Column::text("gate"),
        Column::long("why"),
    ]);
    t.id = Some("gate");
    for r in rows.iter().filter(|r| all || r.status != Status::Pass) {
        // As the tables above print the same figure.
        let fmt = match r.metric {
            "tps" | "effective_tps" => fmt_tps,
            "p99_ms" => fmt_ms,
            _ => |v: f64| format!("{v:.2}"),
        };
        let num = |v: Option<f64>| Value::opt(v, v.map_or_else(|| NA.into(), fmt));
        let c = r.comparison.as_ref();
        let delta = c.and_then(|c| c.pct);
        let mde = c.and_then(|c| c.mde_pct);
        t.rows.push(TableRow {
            values: vec![
                Value::text(r.cell.clone()),
                Value::text(r.metric),
                num(r.base),
                num(r.new),
                Value::opt(delta, delta.map_or_else(|| NA.into(), fmt_pct_change)),
                Value::opt(
                    mde,
                    mde.map_or_else(|| NA.into(), |m| format!("±{}", stats::fmt_mde(m))),
                ),
                Value::text(r.status.label()).mark(match r.status {
                    Status::Regression => Mark::Bad,
                    Status::CannotTell => Mark::None,
                    Status::Pass => Mark::Good,
                }),
                Value::text(r.why.clone()),
            ],
            class: "",
        });
    }
    t
}

/// `1 regression(s), 2 cannot tell, 5 pass, over 8 metric(s) of the
/// cells both sides have.`
pub fn gate_counts(rows: &[Row]) -> String {
    format!(
        "{} regression(s), {} cannot tell, {} pass, over {} metric(s) of the cells both sides have.",
        count(rows, Status::Regression),
        count(rows, Status::CannotTell),
        count(rows, Status::Pass),
        rows.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Isolation;
    use crate::model::fixture;
    use crate::report::analysis::gate::evaluate;

    /// rc 20 % slower in NEW: one REGRESSION row, with its delta; passes
    /// are left out unless asked for.
    #[test]
    fn the_gate_table_lists_what_did_not_pass() {
        let base = fixture::third_runs(fixture::results());
        let mut new = base.clone();
        for run in &mut new.runs {
            if run.cell.isolation == Isolation::ReadCommitted {
                run.tps *= 0.8;
            }
        }
        let rows = evaluate(&base, &new, 5.0);
        let t = gate(&rows, false);
        let regression: Vec<&TableRow> = t
            .rows
            .iter()
            .filter(|r| r.values[6].text == "REGRESSION")
            .collect();
        assert_eq!(regression.len(), 1, "{t:?}");
        assert_eq!(regression[0].values[1].text, "tps");
        assert_eq!(regression[0].values[4].text, "-20.0%");
        assert!(t.rows.iter().all(|r| r.values[6].text != "pass"));
        let all = gate(&rows, true);
        assert_eq!(all.rows.len(), rows.len());
        assert!(gate_counts(&rows).starts_with("1 regression(s), "));
    }
}
