//! Renderers of the anomaly matrix of `isobench anomalies`: probes as rows,
//! isolation levels as columns, each cell saying whether the level
//! prevented the anomaly and how. Pure functions from [`Matrix`] to text.

use comfy_table::{ContentArrangement, Table, presets};

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
        Some(r) => {
            let mut s = r.cell();
            if r.as_expected == Some(false) {
                s.push_str(&format!(
                    " [expected {}]",
                    r.expected.as_deref().unwrap_or("?")
                ));
            }
            s
        }
    }
}

fn level_results<'a>(m: &Matrix, p: &'a ProbeResult) -> Vec<Option<&'a LevelResult>> {
    m.levels.iter().map(|l| p.results.get(l.name())).collect()
}

/// The matrix for the terminal, wrapped to `width` columns (`None`: not
/// wrapped, e.g. into a pipe); ends with a newline.
pub fn terminal(m: &Matrix, width: Option<u16>) -> String {
    let mut t = Table::new();
    t.load_style(presets::UTF8_FULL_CONDENSED).force_no_tty();
    if let Some(w) = width {
        t.set_content_arrangement(ContentArrangement::Dynamic)
            .set_width(w);
    }
    let mut header = vec!["probe".to_string()];
    header.extend(m.levels.iter().map(|l| l.name().to_string()));
    t.set_header(header);
    for p in &m.probes {
        let mut row = vec![p.name.clone()];
        row.extend(level_results(m, p).into_iter().map(cell));
        t.add_row(row);
    }
    let mut out = format!(
        "{}\n{t}\nprevented (how): blocked = a step waited on another session's lock; a SQLSTATE = a step failed with it;\nsnapshot = neither (the reads did not see the other transactions' writes). ANOMALY: what the steps read.\n",
        header_line(m)
    );
    for p in &m.probes {
        for w in &p.warnings {
            out.push_str(&format!("warning: {}: {w}\n", p.name));
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

    #[test]
    fn markdown_matrix_with_details_and_mismatch() {
        insta::assert_snapshot!(markdown(&fixture()));
    }
}
