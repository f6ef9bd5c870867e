//! The isobench directives of a probe file: `# @key value` comment lines
//! that the isolation tester ignores.
//!
//! - `@probe NAME`, `@title TEXT`, `@source TEXT` (repeatable).
//! - `@anomaly CONDITION`: the probe shows the anomaly when any of its
//!   `@anomaly` lines holds. A condition is `TERM and TERM ...`; a term is
//!   `STEP = "ROWS"`, `STEP != "ROWS"`, `STEP has "ROWS"` (contains every
//!   row) or `STEP lacks "ROWS"` (contains none), where `ROWS` lists rows as
//!   `1,10; 2,20` (columns by `,`, rows by `;`, `NULL` for null, `""` for
//!   no rows). A term about a step holds only if that step completed
//!   without error and the transaction it ran in committed (see
//!   [`super::txn`]): anomalies are properties of committed transactions
//!   (Adya 1999). A step that a permutation runs twice cannot be named.
//!   `final` instead of a step name means the result of the `@final`
//!   query.
//! - `@final SQL`: a query run after all sessions have ended and closed
//!   (e.g. the table's final state).
//! - `@expect LEVEL OUTCOME [HOW...]`: what the server must do at `LEVEL`
//!   (`rc`, `rr`, `ser` or the long names): `OUTCOME` is `prevented`,
//!   `anomaly` or `stuck`; `HOW` (optional) is the exact set of mechanisms
//!   seen: `blocked`, a SQLSTATE such as `40001`, or `snapshot` (neither a
//!   wait nor an error).

use std::collections::BTreeSet;

use super::expect::*;
use super::spec::{Block, Directive, Parser, Probe, SpecError};
use crate::model::Isolation;
pub(super) fn apply(
    probe: &mut Probe,
    directives: Vec<Directive>,
    p: &Parser<'_>,
) -> Result<(), SpecError> {
    let mut sources = Vec::new();
    for d in directives {
        let need_value = |what: &str| -> Result<(), SpecError> {
            if d.value.is_empty() {
                p.err(d.line, d.col, format!("@{} needs {what}", d.key))
            } else {
                Ok(())
            }
        };
        match d.key.as_str() {
            "probe" => {
                need_value("a name")?;
                probe.name = d.value;
            }
            "title" => {
                need_value("a text")?;
                probe.title = d.value;
            }
            "source" => {
                need_value("a text")?;
                sources.push(d.value);
            }
            "final" => {
                need_value("a query")?;
                probe.final_query = Some(Block {
                    sql: d.value,
                    line: d.line,
                });
            }
            "anomaly" => {
                need_value("a condition, e.g. s2r has \"1,101\"")?;
                let c = parse_condition(probe, &d, p)?;
                probe.anomalies.push(c);
            }
            "expect" => {
                let e = parse_expectation(&d, p)?;
                if probe.expect.iter().any(|x| x.level == e.level) {
                    return p.err(
                        d.line,
                        d.col,
                        format!("a second @expect for {}", e.level.name()),
                    );
                }
                probe.expect.push(e);
            }
            other => {
                return p.err(
                    d.line,
                    d.key_col,
                    format!(
                        "unknown directive @{other} (known: @probe, @title, @source, @anomaly, @final, @expect)"
                    ),
                );
            }
        }
    }
    probe.source = sources.join("; ");
    for c in &probe.anomalies {
        for t in &c.terms {
            let Subject::Step(r) = t.subject else {
                continue;
            };
            if let Some(n) = probe
                .permutations
                .iter()
                .position(|perm| perm.iter().filter(|x| **x == r).count() > 1)
            {
                return p.err(
                    c.line,
                    1,
                    format!(
                        "step {} runs more than once in permutation {}, so a condition cannot say which run it means; give the second run its own step",
                        probe.step(r).name,
                        n + 1
                    ),
                );
            }
        }
    }
    let uses_final = probe
        .anomalies
        .iter()
        .flat_map(|c| &c.terms)
        .any(|t| t.subject == Subject::Final);
    if uses_final && probe.final_query.is_none() {
        let c = probe
            .anomalies
            .iter()
            .find(|c| c.terms.iter().any(|t| t.subject == Subject::Final))
            .expect("a condition uses final");
        return p.err(
            c.line,
            1,
            "a condition uses `final` but there is no `# @final SQL` query",
        );
    }
    Ok(())
}

fn parse_condition(probe: &Probe, d: &Directive, p: &Parser<'_>) -> Result<Condition, SpecError> {
    let text = &d.value;
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0usize;
    let at = |i: usize| d.col + i as u32;
    let skip_ws = |i: &mut usize| {
        while *i < chars.len() && chars[*i].is_whitespace() {
            *i += 1;
        }
    };
    let word = |i: &mut usize| -> String {
        let start = *i;
        while *i < chars.len() && (chars[*i].is_ascii_alphanumeric() || chars[*i] == '_') {
            *i += 1;
        }
        chars[start..*i].iter().collect()
    };
    let mut terms = Vec::new();
    loop {
        skip_ws(&mut i);
        let start = i;
        let name = word(&mut i);
        if name.is_empty() {
            return p.err(d.line, at(start), "expected a step name or `final`");
        }
        let subject = if name == "final" {
            Subject::Final
        } else {
            let found = probe.sessions.iter().enumerate().find_map(|(si, s)| {
                s.steps
                    .iter()
                    .position(|st| st.name == name)
                    .map(|step| StepRef { session: si, step })
            });
            match found {
                Some(r) => Subject::Step(r),
                None => {
                    return p.err(d.line, at(start), format!("unknown step '{name}'"));
                }
            }
        };
        skip_ws(&mut i);
        let op_start = i;
        let op = if chars.get(i) == Some(&'=') {
            i += 1;
            Op::Is
        } else if chars.get(i) == Some(&'!') && chars.get(i + 1) == Some(&'=') {
            i += 2;
            Op::IsNot
        } else {
            match word(&mut i).as_str() {
                "has" => Op::Has,
                "lacks" => Op::Lacks,
                _ => {
                    return p.err(d.line, at(op_start), "expected `=`, `!=`, `has` or `lacks`");
                }
            }
        };
        skip_ws(&mut i);
        if chars.get(i) != Some(&'"') {
            return p.err(
                d.line,
                at(i),
                "expected rows in double quotes, e.g. \"1,10; 2,20\"",
            );
        }
        let q = i;
        i += 1;
        let start = i;
        while i < chars.len() && chars[i] != '"' {
            i += 1;
        }
        if i == chars.len() {
            return p.err(d.line, at(q), "unterminated \"rows\"");
        }
        let rows: String = chars[start..i].iter().collect();
        i += 1;
        terms.push(Term {
            subject,
            op,
            rows: parse_rows(&rows),
        });
        skip_ws(&mut i);
        if i == chars.len() {
            break;
        }
        let w_start = i;
        if word(&mut i) != "and" {
            return p.err(d.line, at(w_start), "expected `and` or the end of the line");
        }
    }
    Ok(Condition {
        text: text.clone(),
        line: d.line,
        terms,
    })
}

fn parse_expectation(d: &Directive, p: &Parser<'_>) -> Result<Expectation, SpecError> {
    let mut words = d.value.split_whitespace();
    let usage = "@expect LEVEL OUTCOME [HOW...], e.g. @expect rr prevented blocked 40001";
    let Some(level) = words.next() else {
        return p.err(d.line, d.col, format!("expected {usage}"));
    };
    let level: Isolation = level.parse().or_else(|e: String| p.err(d.line, d.col, e))?;
    let outcome = match words.next() {
        Some("prevented") => Outcome::Prevented,
        Some("anomaly") => Outcome::Anomaly,
        Some("stuck") => Outcome::Stuck,
        Some(other) => {
            return p.err(
                d.line,
                d.col,
                format!("unknown outcome '{other}' (use prevented, anomaly or stuck)"),
            );
        }
        None => return p.err(d.line, d.col, format!("expected {usage}")),
    };
    let mut how = BTreeSet::new();
    for w in words {
        let m = match w.to_ascii_lowercase().as_str() {
            "blocked" => Mechanism::Blocked,
            "snapshot" => Mechanism::Snapshot,
            // Every SQLSTATE has a digit (class 40, HV, P0, ...), so a
            // mistyped word such as `block` is not taken for one.
            code if crate::model::sqlstate(&code.to_ascii_uppercase()).is_some()
                && code.bytes().any(|b| b.is_ascii_digit()) =>
            {
                Mechanism::Error(code.to_ascii_uppercase())
            }
            _ => {
                return p.err(
                    d.line,
                    d.col,
                    format!(
                        "unknown mechanism '{w}' (use blocked, snapshot or a SQLSTATE like 40001)"
                    ),
                );
            }
        };
        how.insert(m);
    }
    if outcome != Outcome::Prevented && how.contains(&Mechanism::Snapshot) {
        return p.err(
            d.line,
            d.col,
            "`snapshot` names how an anomaly was prevented; an anomaly or a stuck run can only name blocked or SQLSTATEs",
        );
    }
    Ok(Expectation {
        level,
        outcome,
        how: (!how.is_empty()).then_some(how),
        line: d.line,
    })
}

/// Parses a probe file. `file` names it in errors (`file:line:col`).
///
/// Errors: [`SpecError`] for bad syntax (see [`super::spec::parse_syntax`]), a probe
/// without a permutation or without an `@anomaly` line, and bad
/// directives.
pub fn parse(text: &str, file: &str) -> Result<Probe, SpecError> {
    let (syntax, directives, p) = super::spec::syntax(text, file)?;
    let stem = file
        .rsplit('/')
        .next()
        .unwrap_or(file)
        .trim_end_matches(".spec")
        .to_string();
    let mut probe = Probe {
        name: stem,
        title: String::new(),
        source: String::new(),
        file: file.to_string(),
        setup: syntax.setup,
        teardown: syntax.teardown,
        sessions: syntax.sessions,
        permutations: syntax
            .permutations
            .iter()
            .map(|perm| perm.iter().map(|s| s.step).collect())
            .collect(),
        final_query: None,
        anomalies: Vec::new(),
        expect: Vec::new(),
    };
    if probe.permutations.is_empty() {
        return p.err(
            p.end.0,
            p.end.1,
            "no `permutation` line: a probe runs fixed interleavings, list at least one",
        );
    }
    apply(&mut probe, directives, &p)?;
    if probe.anomalies.is_empty() {
        return p.err(
            1,
            1,
            "no `# @anomaly CONDITION` line: say which results show the anomaly",
        );
    }
    Ok(probe)
}

#[cfg(test)]
mod tests {
    use super::parse;
    use super::*;

    fn err(text: &str) -> String {
        parse(text, "p.spec").unwrap_err().to_string()
    }

    #[test]
    fn directive_errors_point_into_the_directive() {
        let base = "session s1\nstep a { SELECT 1; }\npermutation a\n";
        let e = err(&format!("{base}# @anomaly b = \"1\"\n"));
        assert_eq!(e, "p.spec:4:12: unknown step 'b'");
        let e = err(&format!("{base}# @anomaly a ~ \"1\"\n"));
        assert_eq!(e, "p.spec:4:14: expected `=`, `!=`, `has` or `lacks`");
        let e = err(&format!("{base}# @anomaly a = 1\n"));
        assert!(
            e.starts_with("p.spec:4:16: expected rows in double quotes"),
            "{e}"
        );
        let e = err(&format!("{base}# @anomaly a = \"1\" or a = \"2\"\n"));
        assert_eq!(e, "p.spec:4:20: expected `and` or the end of the line");
        let e = err(&format!("{base}# @anomaly final = \"1\"\n"));
        assert!(e.contains("no `# @final SQL` query"), "{e}");
        let e = err(&format!(
            "{base}# @anomaly a = \"\"\n# @expect xx prevented\n"
        ));
        assert!(
            e.starts_with("p.spec:5:11: unknown isolation level 'xx'"),
            "{e}"
        );
        let e = err(&format!("{base}# @anomaly a = \"\"\n# @expect rc fine\n"));
        assert!(e.contains("unknown outcome 'fine'"), "{e}");
        let e = err(&format!(
            "{base}# @anomaly a = \"\"\n# @expect rc prevented quickly\n"
        ));
        assert!(e.contains("unknown mechanism 'quickly'"), "{e}");
        let e = err(&format!(
            "{base}# @anomaly a = \"\"\n# @expect rc anomaly snapshot\n"
        ));
        assert!(
            e.contains("`snapshot` names how an anomaly was prevented"),
            "{e}"
        );
        let e = err(&format!(
            "{base}# @anomaly a = \"\"\n# @expect rc prevented block\n"
        ));
        assert!(e.contains("unknown mechanism 'block'"), "{e}");
        let e = err("session s1\nstep a { SELECT 1; }\npermutation a a\n# @anomaly a = \"1\"\n");
        assert!(
            e.starts_with("p.spec:4:1: step a runs more than once in permutation 1"),
            "{e}"
        );
        let e = err(&format!("{base}# @anomaly a = \"\"\n# @colour red\n"));
        assert!(
            e.starts_with("p.spec:5:3: unknown directive @colour"),
            "{e}"
        );
    }

    #[test]
    fn terms_compare_normalised_rows() {
        let t = |op, rows: &str| Term {
            subject: Subject::Final,
            op,
            rows: parse_rows(rows),
        };
        let result = parse_rows("1,10;2, 20");
        assert!(t(Op::Is, " 1, 10 ; 2,20").holds(&result));
        assert!(!t(Op::Is, "2,20; 1,10").holds(&result));
        assert!(t(Op::IsNot, "1,10").holds(&result));
        assert!(t(Op::Has, "2,20").holds(&result));
        assert!(!t(Op::Has, "2,20; 3,30").holds(&result));
        assert!(t(Op::Lacks, "3,30").holds(&result));
        assert!(!t(Op::Lacks, "3,30; 1,10").holds(&result));
        assert!(t(Op::Is, "").holds(&[]));
        assert_eq!(show_rows(&result), "1,10; 2,20");
        assert_eq!(show_rows(&[]), "(no rows)");
    }
}
