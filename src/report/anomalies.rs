//! Renderers of the anomaly matrix of `isobench anomalies`: probes as rows,
//! isolation levels as columns, each cell saying whether the level
//! prevented the anomaly and how. Pure functions from [`Matrix`] to text.

use comfy_table::{ColumnConstraint, ContentArrangement, Table, presets};

use crate::probe::spec::Outcome;
use crate::probe::{LevelResult, Matrix, ProbeResult};

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

fn cell(r: Option<&LevelResult>) -> String {
    match r {
        None => "-".into(),
        Some(r) => with_expected(r, r.cell()),
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

/// The terminal's short cell: the outcome and its mechanisms in the
/// words of `@expect` (`prevented (blocked, 40001)`, `ANOMALY`), without
/// the steps and what they read, which anomalies.md gives.
fn short_cell(r: Option<&LevelResult>) -> String {
    let Some(r) = r else {
        return "-".into();
    };
    let text = match r.outcome {
        Outcome::Anomaly => "ANOMALY".to_string(),
        o if r.mechanisms.is_empty() => o.name().to_string(),
        o => format!("{} ({})", o.name(), r.mechanisms.join(", ")),
    };
    with_expected(r, text)
}

fn level_results<'a>(m: &Matrix, p: &'a ProbeResult) -> Vec<Option<&'a LevelResult>> {
    m.levels.iter().map(|l| p.results.get(l.name())).collect()
}

/// The widest the terminal matrix gets (issue #31: it printed 182
/// columns); narrower when the terminal is.
pub const TERMINAL_WIDTH: u16 = 100;

/// The matrix for the terminal, at most [`TERMINAL_WIDTH`] columns wide
/// (or `width`, the terminal's, when narrower): levels by short name,
/// cells by outcome and mechanism, wrapped if still too wide; the full
/// cells (steps, what they read) are in anomalies.md. Ends with a newline.
pub fn terminal(m: &Matrix, width: Option<u16>) -> String {
    let width = width.map_or(TERMINAL_WIDTH, |w| w.min(TERMINAL_WIDTH));
    let mut t = Table::new();
    t.load_style(presets::UTF8_FULL_CONDENSED)
        .force_no_tty()
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(width);
    let mut header = vec!["probe".to_string()];
    header.extend(m.levels.iter().map(|l| l.short().to_string()));
    t.set_header(header);
    for p in &m.probes {
        let mut row = vec![p.name.clone()];
        row.extend(level_results(m, p).into_iter().map(short_cell));
        t.add_row(row);
    }
    // Probe names whole; the level columns wrap.
    if let Some(c) = t.column_mut(0) {
        c.set_constraint(ColumnConstraint::ContentWidth);
    }
    let levels: Vec<String> = m
        .levels
        .iter()
        .map(|l| format!("{} = {l}", l.short()))
        .collect();
    let width = usize::from(width);
    let mut out = format!("{}\n{t}\n", header_line(m));
    for text in [
        format!("{}.", levels.join(", ")),
        "prevented by: blocked = a step waited on another session's lock; a SQLSTATE = a step \
         failed with it; snapshot = neither (the reads missed the other transactions' writes)."
            .to_string(),
        "Which steps, and what they read: anomalies.md (the full matrix).".to_string(),
    ] {
        out.push_str(&wrap(&text, width));
    }
    for p in &m.probes {
        for w in &p.warnings {
            out.push_str(&wrap(&format!("warning: {}: {w}", p.name), width));
        }
    }
    out
}

/// `text` broken at spaces into lines of at most `width` characters (a
/// longer word stands alone), continuation lines indented by 2; each line
/// ends with a newline.
fn wrap(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split(' ') {
        let len = line.chars().count();
        if len > 0 && len + 1 + word.chars().count() > width {
            out.push_str(&line);
            out.push('\n');
            line = "  ".into();
        } else if len > 0 {
            line.push(' ');
        }
        line.push_str(word);
    }
    out.push_str(&line);
    out.push('\n');
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
    let mut header = "| probe | title |".to_string();
    let mut rule = "|---|---|".to_string();
    for l in &m.levels {
        header.push_str(&format!(" {} |", l.name()));
        rule.push_str("---|");
    }
    s.push_str(&format!("{header}\n{rule}\n"));
    for p in &m.probes {
        let mut row = format!("| {} | {} |", p.name, md_escape(&p.title));
        for r in level_results(m, p) {
            row.push_str(&format!(" {} |", md_escape(&cell(r))));
        }
        s.push_str(&row);
        s.push('\n');
    }
    s.push_str(
        "\n*prevented (how)*: **blocked** = a step waited on another session's lock; \
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
    use crate::probe::spec::Outcome;
    use crate::probe::{SerialOutcome, ServerInfo, StepError};

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
        insta::assert_snapshot!(terminal(&fixture(), Some(120)));
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
        for (width, limit) in [(None, 100), (Some(250), 100), (Some(80), 80)] {
            let text = terminal(&m, width);
            for line in text.lines() {
                assert!(
                    line.chars().count() <= limit,
                    "{width:?}: {} columns: {line}\n{text}",
                    line.chars().count()
                );
            }
            assert!(text.contains("│ probe"), "{text}");
            assert!(text.contains("ANOMALY"), "{text}");
            if limit == 100 {
                assert!(text.contains("prevented (blocked, 40001)"), "{text}");
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
