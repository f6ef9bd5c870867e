//! Declared checks in the store (store version 13): which invariants of
//! a run the study declared, what their samples saw during the run, and
//! their violating rows, in `declared_checks` and `check_rows` next to
//! the run's `invariants` (see the parent module's docs).

use rusqlite::{Connection, Transaction, params};

use super::children;
use super::{Context, Error, R};
use crate::model::{CheckRows, DuringCheck, InvariantResult};

/// A declared check's `declared_checks` row and its `check_rows`.
pub(super) fn write_declared(tx: &Transaction, run: u32, i: usize, v: &InvariantResult) -> R<()> {
    let d = v.during.as_ref();
    tx.prepare_cached(
        "INSERT INTO declared_checks (run, ordinal, columns_json, during_samples, during_violated,
            during_max, during_first_s, during_columns_json)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![
        run,
        i,
        v.rows.as_ref().map(|r| json(&r.columns)),
        d.map(|d| d.samples),
        d.map(|d| d.violated_samples),
        d.map(|d| d.max_violations),
        d.and_then(|d| d.first_violation_s),
        d.and_then(|d| d.rows.as_ref()).map(|r| json(&r.columns)),
    ])
    .context("declared_checks")?;
    let mut st = tx.prepare_cached(
        "INSERT INTO check_rows (run, ordinal, phase, seq, values_json) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for (phase, rows) in [
        ("after", v.rows.as_ref()),
        ("during", d.and_then(|d| d.rows.as_ref())),
    ] {
        for (seq, row) in rows.iter().flat_map(|r| r.rows.iter()).enumerate() {
            st.execute(params![run, i, phase, seq, json(row)])
                .context("check_rows")?;
        }
    }
    Ok(())
}

/// `x` as JSON text (the store keeps column names and rows so).
fn json<T: serde::Serialize>(x: &T) -> String {
    serde_json::to_string(x).expect("plain values serialize")
}

/// `invariants` of run `run` with what `declared_checks` and
/// `check_rows` hold of its declared checks (none in stores before
/// version 13).
pub(super) fn read_declared(
    conn: &Connection,
    run: u32,
    mut invariants: Vec<InvariantResult>,
) -> R<Vec<InvariantResult>> {
    type Declared = (
        usize,
        Option<String>,
        Option<u32>,
        Option<u32>,
        Option<u64>,
        Option<f64>,
        Option<String>,
    );
    let declared: Vec<Declared> = children(
        conn,
        "declared_checks",
        "SELECT ordinal, columns_json, during_samples, during_violated, during_max,
                during_first_s, during_columns_json
           FROM declared_checks WHERE run = ?1 ORDER BY ordinal",
        run,
        |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
            ))
        },
    )?;
    let rows: Vec<(usize, String, String)> = children(
        conn,
        "check_rows",
        "SELECT ordinal, phase, values_json FROM check_rows WHERE run = ?1
          ORDER BY ordinal, phase, seq",
        run,
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    let parse = |what: &str, text: &str| -> R<Vec<Option<String>>> {
        serde_json::from_str(text).map_err(|e| Error(format!("{what}: {e}")))
    };
    let kept = |ordinal: usize, phase: &str, columns: Option<&String>| -> R<Option<CheckRows>> {
        let Some(columns) = columns else {
            return Ok(None);
        };
        let columns = parse("declared_checks columns", columns)?
            .into_iter()
            .map(Option::unwrap_or_default)
            .collect();
        let rows = rows
            .iter()
            .filter(|(o, p, _)| *o == ordinal && p == phase)
            .map(|(_, _, v)| parse("check_rows", v))
            .collect::<R<_>>()?;
        Ok(Some(CheckRows { columns, rows }))
    };
    for (ordinal, columns, samples, violated, max, first, during_columns) in declared {
        let Some(inv) = invariants.get_mut(ordinal) else {
            continue;
        };
        inv.declared = true;
        inv.rows = kept(ordinal, "after", columns.as_ref())?;
        if let (Some(samples), Some(violated_samples), Some(max_violations)) =
            (samples, violated, max)
        {
            inv.during = Some(DuringCheck {
                samples,
                violated_samples,
                max_violations,
                first_violation_s: first,
                rows: kept(ordinal, "during", during_columns.as_ref())?,
            });
        }
    }
    Ok(invariants)
}
