//! The server's tables: `pg_stat_database` counters, wait events and
//! SIRead locks per cell.

use super::cells::cell_value;
use super::opt_value;
use super::table::{Column, Table, Value};
use crate::report::analysis::model::ReportModel;
use crate::report::format::fmt_fixed;

/// `pg_stat_database` rates: a row per counter, a column per cell headed
/// by `labels` (one per cell).
pub fn counters(m: &ReportModel, labels: &[String]) -> Table {
    let mut cols = vec![Column::text("counter (per s)")];
    cols.extend(labels.iter().map(Column::num));
    let mut t = Table::new(cols);
    for n in &m.counter_names {
        let mut row = vec![Value::text(n.clone())];
        row.extend(
            m.counter_rates
                .iter()
                .map(|r| opt_value(r.get(n).copied(), 1)),
        );
        t.row(row);
    }
    t
}

/// The `top` most frequent wait events of each cell.
pub fn wait_events(m: &ReportModel, top: usize) -> Table {
    let mut t = Table::new(vec![
        Column::text("cell"),
        Column::text("wait event"),
        Column::num("observations (backend samples)"),
        Column::num("share (%)"),
    ]);
    for (i, (total, shares)) in m.wait_events.iter().enumerate() {
        for w in shares.iter().take(top) {
            t.row(vec![
                cell_value(m, i),
                Value::text(w.event.clone()),
                Value::num(w.count as f64, format!("{} of {total}", w.count)),
                Value::num(w.pct, fmt_fixed(w.pct, 1)),
            ]);
        }
    }
    t
}

/// SIRead locks by granularity of the cells `which` (indexes into the
/// model's cells); a cell without any has a `none` row.
pub fn siread_locks(m: &ReportModel, which: &[usize]) -> Table {
    let mut t = Table::new(vec![
        Column::text("cell"),
        Column::text("granularity"),
        Column::num("mean (locks)"),
        Column::num("max (locks)"),
    ]);
    for &i in which {
        let by = &m.siread[i];
        if by.is_empty() {
            t.row(vec![
                cell_value(m, i),
                "none".into(),
                Value::num(0.0, "0.0"),
                Value::count(0),
            ]);
        }
        for (gran, s) in by {
            t.row(vec![
                cell_value(m, i),
                Value::text(gran.clone()),
                Value::num(s.mean, fmt_fixed(s.mean, 1)),
                Value::count(s.max),
            ]);
        }
    }
    t
}
