//! The Guarantees section's table: per cell with a history check and per
//! anomaly class, whether the cell's level forbids the class, the cases
//! its checks found in how many committed transactions, and the rate per
//! million with its exact 95 % interval ([`crate::report::analysis::guarantee`]).

use super::cells::cell_value;
use crate::report::analysis::guarantee::sig;
use crate::report::analysis::model::ReportModel;
use crate::report::format::grouped;
use crate::report::tables::table::{Column, Mark, Table, Value};

/// One row per cell and class the checks count, the cell's violations
/// marked; empty when no cell has a history check.
pub fn guarantees(m: &ReportModel) -> Table {
    let mut t = Table::new(vec![
        Column::text("cell"),
        Column::text("level"),
        Column::text("class"),
        Column::text("the level"),
        Column::num("cases"),
        Column::num("committed transactions checked"),
        Column::num("per million"),
        Column::text("95 % CI (per million)"),
    ]);
    for g in &m.guarantees {
        for c in &g.classes {
            let (rate, low, high) = c.rate.per_million();
            let verdict = match (c.forbidden, c.rate.events) {
                (true, 0) => Value::text("forbids: kept").mark(Mark::Good),
                (true, _) => Value::text("forbids: VIOLATED").mark(Mark::Violation),
                (false, 0) => Value::text("allows"),
                (false, _) => Value::text("allows: found"),
            };
            t.row(vec![
                cell_value(m, g.cell),
                Value::text(g.level.short()),
                Value::text(c.class),
                verdict,
                Value::count(c.rate.events).mark(if c.violated() {
                    Mark::Violation
                } else {
                    Mark::None
                }),
                Value::num(g.checked as f64, grouped(g.checked)),
                Value::num(rate, sig(rate)),
                Value::text(format!("{}-{}", sig(low), sig(high))),
            ]);
        }
    }
    t
}

/// The promise of each level the checked cells ran at, one sentence each
/// (`crate::model::promise`).
pub fn promises(m: &ReportModel) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for g in &m.guarantees {
        if !out.contains(&g.promise()) {
            out.push(g.promise());
        }
    }
    out
}

/// What a report of a violation to PostgreSQL needs, and where each
/// piece is in the results directory; empty when no promise was broken.
pub fn how_to_report(m: &ReportModel) -> Vec<String> {
    if !m.violated() {
        return Vec::new();
    }
    let versions = m.server_versions.join(", ");
    vec![
        "These are isobench's measurements, not PostgreSQL's diagnosis: a checker can be wrong \
         too, so read the cycle's edges against the statements before reporting."
            .into(),
        format!(
            "The server: its version ({versions}), how it was built (`pg_config --configure`) and its \
             settings (report.md's Setup; `max_pred_locks_per_*` matter to SSI)."
        ),
        "The transactions: each violation's `violations/<n>/statements.txt` gives every \
         statement of the cycle's transactions with the client's times (begin, sent, answered, \
         commit) and the backend's pid; `cycle.txt` says which operation proves each edge."
            .into(),
        "A replay: `violations/<n>/replay.spec` is an isolation-tester spec that runs those \
         transactions in the observed order (run it with `isobench anomalies --spec` or \
         PostgreSQL's isolationtester); `replay.txt` says how often it reproduced the anomaly: \
         0 of N means the violation depends on timing, which the report should say."
            .into(),
        "The history: `violations/<n>/history.edn` (Jepsen's EDN, for Elle) and `history.json` \
         hold the cycle's transactions; the run's whole history is in `histories/`; \
         `isobench check-history` checks it again."
            .into(),
        "How often: the rate per million committed transactions with its interval (the table \
         above), and the command that ran the study (report.md's Setup)."
            .into(),
        "Where: the pgsql-bugs mailing list (pgsql-bugs@lists.postgresql.org) or the bug form at \
         https://www.postgresql.org/account/submitbug/."
            .into(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fixture;

    #[test]
    fn a_row_per_cell_and_class_with_the_violation_marked() {
        let r = fixture::guarantee_violated();
        let m = ReportModel::new(&r);
        let t = guarantees(&m);
        assert_eq!(t.rows.len(), 2 * crate::model::ANOMALY_CLASSES.len());
        let violated: Vec<_> = t
            .rows
            .iter()
            .filter(|r| r.values[3].mark == Mark::Violation)
            .collect();
        assert_eq!(violated.len(), 1);
        let v = &violated[0].values;
        assert_eq!(
            (v[1].text.as_str(), v[2].text.as_str(), v[4].text.as_str()),
            ("ser", "G2-item", "1")
        );
        assert_eq!(v[5].text, "277,156");
        assert_eq!(v[6].text, "3.6");
        assert_eq!(v[7].text, "0.091-20");
    }
}
