//! The anomaly matrix of `isobench anomalies` ([`tables::anomalies`]) as
//! anomalies.md (the full matrix, then every probe in detail) and for the
//! terminal. Pure functions from [`Matrix`] to text.

use super::pipe::{self, Layout};
use super::terminal::{fit, wrap};
use crate::model::probes::Matrix;
use crate::report::tables;

fn header_line(m: &Matrix) -> String {
    let partial = if m.complete {
        ""
    } else {
        " (INTERRUPTED: not every probe ran)"
    };
    format!(
        "{} probe(s) x {} level(s) on PostgreSQL {} in {:.1} s{partial}\ntarget: {}",
        m.probes.len(),
        m.levels.len(),
        m.server.version,
        m.elapsed_s,
        m.target,
    )
}

/// The widest the terminal matrix gets (issue #31: it printed 182
/// columns); narrower when the width is.
pub const TERMINAL_WIDTH: usize = 100;

/// The matrix for the terminal, at most [`TERMINAL_WIDTH`] columns wide
/// (or `width` when narrower): probes with the anomaly's plain name
/// (`P4: lost update`), levels by short name, cells by outcome and mechanism
/// ([`tables::anomalies::matrix`]'s short forms), wrapped to fit; the
/// full cells (steps, what they read) are in anomalies.md. Ends with a
/// newline.
pub fn terminal(m: &Matrix, width: usize) -> String {
    let width = width.min(TERMINAL_WIDTH);
    // The anomaly's plain name beside its code, in one column.
    let mut t = tables::anomalies::matrix(m);
    t.remove_column(1);
    t.columns[0].header = "probe: anomaly".into();
    for (row, p) in t.rows.iter_mut().zip(&m.probes) {
        row.values[0].text = format!("{}: {}", p.name, p.title);
    }
    let table = fit::table(&t, width, &fit::DropOrder::default());
    let levels: Vec<String> = m
        .levels
        .iter()
        .map(|l| format!("{} = {l}", l.short()))
        .collect();
    let mut out = format!("{}\n{}\n", header_line(m), table.text);
    for text in [
        format!("{}.", levels.join(", ")),
        "prevented by: blocked = a step waited on another session's lock; a SQLSTATE = a step \
         failed with it; snapshot = neither (the reads missed the other transactions' writes)."
            .to_string(),
        "Which steps, and what they read: anomalies.md (the full matrix).".to_string(),
    ] {
        out.push_str(&wrap(&text, width, "  "));
    }
    for p in &m.probes {
        for w in &p.warnings {
            out.push_str(&wrap(&format!("warning: {}: {w}", p.name), width, "  "));
        }
    }
    out
}

fn md_escape(s: &str) -> String {
    s.replace('|', "\\|")
}

/// `anomalies.md`: the matrix, then each probe in detail (sources, the
/// anomaly conditions, serial outcomes, and per level how it went and the
/// error text), then any results that differ from the probes'
/// expectations.
pub fn markdown(m: &Matrix) -> String {
    let mut s = String::from("# Isolation anomaly matrix\n\n");
    s.push_str(&format!("{}\n\n", header_line(m).replace('\n', "  \n")));
    s.push_str(&format!(
        "Lock waits detected with `{}`; step timeout {:.1} s; isobench {}.\n\n",
        m.wait_check, m.step_timeout_s, m.isobench_version
    ));
    s.push_str(&pipe::table(&tables::anomalies::matrix(m), Layout::Plain));
    s.push_str(
        "*prevented (how)*: **blocked** = a step waited on another session's lock; \
         a **SQLSTATE** (40001 serialization_failure, 55P03 lock_not_available, ...) = a step failed with it; \
         **snapshot** = neither: the reads did not see the other transactions' writes. \
         **ANOMALY** = an anomaly condition held; the cell shows what the steps read.\n\n",
    );
    s.push_str("## Probes\n\n");
    for p in &m.probes {
        s.push_str(&format!("### {}: {}\n\n", p.name, md_escape(&p.title)));
        s.push_str(&format!("- file: `{}`\n", p.file));
        for src in p.source.split("; ") {
            s.push_str(&format!("- source: {}\n", md_escape(src)));
        }
        for c in &p.anomaly_if {
            s.push_str(&format!("- anomaly if: `{c}`\n"));
        }
        for w in &p.warnings {
            s.push_str(&format!("- **warning**: {}\n", md_escape(w)));
        }
        for o in &p.serial {
            let reads: Vec<String> = o.reads.iter().map(|(k, v)| format!("{k} {v}")).collect();
            s.push_str(&format!(
                "- serially ({}): {}\n",
                o.order.join(", "),
                md_escape(&reads.join(", "))
            ));
        }
        s.push('\n');
        for l in &m.levels {
            let Some(r) = p.results.get(l.name()) else {
                continue;
            };
            s.push_str(&format!("- **{}**: {}", l.name(), md_escape(&r.cell())));
            if let Some(e) = &r.error {
                s.push_str(&format!(
                    " — `{}` at {}: {}",
                    e.sqlstate,
                    e.step,
                    md_escape(&e.message)
                ));
            }
            if r.as_expected == Some(false) {
                s.push_str(&format!(
                    " — **differs from the expected {}**",
                    r.expected.as_deref().unwrap_or("?")
                ));
            }
            s.push('\n');
        }
        s.push('\n');
    }
    let mismatches = m.mismatches();
    if !mismatches.is_empty() {
        s.push_str("## Results that differ from the probes' expectations\n\n```text\n");
        for x in mismatches {
            s.push_str(&x.explain());
            s.push('\n');
        }
        s.push_str("```\n");
    }
    s
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::model::Isolation;
    use crate::model::probes::Outcome;
    use crate::model::probes::{LevelResult, ProbeResult, SerialOutcome, ServerInfo, StepError};

    fn result(outcome: Outcome, how: &str, expected: &str, ok: bool) -> LevelResult {
        LevelResult {
            outcome,
            how: how.into(),
            mechanisms: vec![],
            observation: None,
            waited: vec![],
            error: None,
            expected: Some(expected.into()),
            as_expected: Some(ok),
            permutation: None,
            trace: vec!["step s1r: SELECT 1;".into(), "  rows: 1".into()],
        }
    }

    fn fixture() -> Matrix {
        let mut results = BTreeMap::new();
        results.insert(
            "read-committed".to_string(),
            result(
                Outcome::Anomaly,
                "s1r read 1,10, s2r read 1,10",
                "anomaly",
                true,
            ),
        );
        let mut ser = result(
            Outcome::Prevented,
            "40001 at step s2:s2c",
            "prevented (snapshot)",
            false,
        );
        ser.mechanisms = vec!["40001".into()];
        ser.error = Some(StepError {
            step: "s2:s2c".into(),
            sqlstate: "40001".into(),
            message: "could not serialize access".into(),
        });
        results.insert("serializable".to_string(), ser);
        Matrix {
            schema_version: 1,
            isobench_version: "0.1.0".into(),
            server: ServerInfo {
                version: "15.18".into(),
                version_num: 150018,
            },
            target: "managed".into(),
            wait_check: "pg_isolation_test_session_is_blocked".into(),
            step_timeout_s: 5.0,
            levels: vec![Isolation::ReadCommitted, Isolation::Serializable],
            elapsed_s: 1.25,
            complete: true,
            probes: vec![ProbeResult {
                name: "P4".into(),
                title: "lost update".into(),
                source: "Berenson et al. 1995; Hermitage".into(),
                file: "builtin:P4".into(),
                anomaly_if: vec!["s1r = \"1,10\" and s2r = \"1,10\"".into()],
                results,
                serial: vec![SerialOutcome {
                    order: vec!["s1".into(), "s2".into()],
                    reads: [("s1r".to_string(), "1,10".to_string())].into(),
                }],
                warnings: vec!["session s1 sets its own isolation level (builtin:P4:20); the level columns do not apply to it".into()],
            }],
        }
    }

    #[test]
    fn terminal_matrix() {
        insta::assert_snapshot!(terminal(&fixture(), 120));
    }

    /// Issue #31: the terminal matrix printed 182 columns; with three
    /// levels, long observations and a mismatch it fits 100 (into a pipe
    /// too, and in a wider terminal), or the terminal when narrower. The
    /// reads stay in anomalies.md.
    #[test]
    fn terminal_matrix_fits_100_columns() {
        let mut m = fixture();
        m.levels = vec![
            Isolation::ReadCommitted,
            Isolation::RepeatableRead,
            Isolation::Serializable,
        ];
        let mut p = m.probes[0].clone();
        let long = "s1r read 1,10; 2,20; 3,30; 4,40, s2r read 1,10; 2,20; 3,30; 4,40";
        p.results.get_mut("read-committed").unwrap().how = long.into();
        let mut rr = p.results["serializable"].clone();
        rr.mechanisms = vec!["blocked".into(), "40001".into()];
        rr.how = "blocked at step s2:s2u1, then 40001 at step s2:s2c".into();
        p.results.insert("repeatable-read".into(), rr);
        p.name = "G-single-write-predicate".into();
        m.probes = vec![p.clone(), p];
        for (width, limit) in [(100, 100), (250, 100), (80, 80)] {
            let text = terminal(&m, width);
            for line in text.lines() {
                assert!(
                    line.chars().count() <= limit,
                    "{width:?}: {} columns: {line}\n{text}",
                    line.chars().count()
                );
            }
            assert!(text.contains("│ probe: anomaly"), "{text}");
            assert!(text.contains("│ G-single-write-predicate: "), "{text}");
            assert!(text.contains("ANOMALY"), "{text}");
            if limit == 100 {
                assert!(text.contains("prevented (blocked,"), "{text}");
            }
            assert!(!text.contains("s1r read"), "{text}");
            assert!(text.contains("anomalies.md"), "{text}");
        }
        // The full cells stay in the file.
        assert!(markdown(&m).contains(long));
    }

    #[test]
    fn markdown_matrix_with_details_and_mismatch() {
        insta::assert_snapshot!(markdown(&fixture()));
    }
}
