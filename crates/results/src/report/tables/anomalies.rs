//! The anomaly matrix of `isobench anomalies` as a table: a row per
//! probe (its code and the anomaly's plain name), a column per isolation
//! level, each cell saying whether the level prevented the anomaly and
//! how. anomalies.md shows the full cells (what the steps read); the
//! terminal their short form ([`Value::short`]) and the levels' short
//! names ([`Column::short`]).

use super::table::{Column, Table, Value};
use crate::model::probes::Outcome;
use crate::model::probes::{LevelResult, Matrix};

/// The matrix's table.
pub fn matrix(m: &Matrix) -> Table {
    let mut cols = vec![Column::text("probe"), Column::long("anomaly")];
    cols.extend(m.levels.iter().map(|l| Column {
        short: Some(l.short().to_string()),
        ..Column::long(l.name())
    }));
    let mut t = Table::new(cols);
    t.id = Some("anomalies");
    for p in &m.probes {
        let mut row = vec![Value::text(p.name.clone()), Value::text(p.title.clone())];
        row.extend(
            m.levels
                .iter()
                .map(|l| level_value(p.results.get(l.name()))),
        );
        t.row(row);
    }
    t
}

/// A level's cell: its full text, and the short form.
fn level_value(r: Option<&LevelResult>) -> Value {
    match r {
        None => Value::text("-"),
        Some(r) => Value {
            short: Some(short_cell(r)),
            ..Value::text(with_expected(r, r.cell()))
        },
    }
}

/// `text`, with the probe's `@expect` for the level when the result
/// differs from it.
fn with_expected(r: &LevelResult, mut text: String) -> String {
    if r.as_expected == Some(false) {
        text.push_str(&format!(
            " [expected {}]",
            r.expected.as_deref().unwrap_or("?")
        ));
    }
    text
}

/// The short cell: the outcome and its mechanisms in the words of
/// `@expect` (`prevented (blocked, 40001)`, `ANOMALY`), without the steps
/// and what they read.
fn short_cell(r: &LevelResult) -> String {
    let text = match r.outcome {
        Outcome::Anomaly => "ANOMALY".to_string(),
        o if r.mechanisms.is_empty() => o.name().to_string(),
        o => format!("{} ({})", o.name(), r.mechanisms.join(", ")),
    };
    with_expected(r, text)
}
