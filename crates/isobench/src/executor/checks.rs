//! Running the checks a study declares ([`CheckSpec`]) in a run's
//! database: once after the run, on the connection the workload's own
//! invariants use, and, for those with `during`, at every sample interval
//! while the run's load runs, on a connection of their own
//! (`application_name` `isobench-checks`), so that a rule broken and then
//! repaired within the run is seen. Every execution is one query in a
//! READ ONLY transaction (a check cannot change the data it checks); its
//! result counts as the check's form says ([`CheckSpec`]): every row a
//! violation, or one count compared with `expect`.
//!
//! A check that fails to run (a syntax error, an unknown column, a query
//! that returns no result, or a count that is not one integer) is bad
//! input naming the check and where it was declared, never a pass:
//! [`validate`] finds most of these before a run starts (PREPARE in the
//! run's fresh copy), and an error after a run stops the study once the
//! run is saved.

use std::time::{Duration, Instant};

use tokio::sync::watch;
use tokio_postgres::{Client, SimpleQueryMessage};

use crate::model::{
    BadInput, CheckRows, CheckSpec, DuringCheck, InvariantResult, KEPT_ROWS, Phase,
};
use crate::postgres;

/// A check that could not run: bad input naming the check and its origin.
fn failed(c: &CheckSpec, message: impl std::fmt::Display) -> BadInput {
    BadInput(format!(
        "check {} ({}) failed to run: {message}; fix its query (a check must run in every run's database; \
         it is never counted as passed)",
        c.name, c.origin
    ))
}

/// Why a check did not give a result.
#[derive(Debug)]
enum CheckError {
    /// Its query (or its result) is wrong: bad input.
    Bad(BadInput),
    /// The connection went away (a server that crashed or restarted
    /// under the run, a terminated session): not the check's fault.
    Lost(String),
}

impl From<BadInput> for CheckError {
    fn from(e: BadInput) -> Self {
        CheckError::Bad(e)
    }
}

/// The error of check `c` from the server's `e`: lost for a connection
/// that broke or a session the server ended (SQLSTATE classes 08 and
/// 57), else bad input naming the check.
fn classify(c: &CheckSpec, e: &tokio_postgres::Error) -> CheckError {
    let lost = match e.as_db_error() {
        None => true,
        Some(db) => matches!(&db.code().code()[..2], "08" | "57"),
    };
    if lost || e.is_closed() {
        CheckError::Lost(format!("check {}: {}", c.name, postgres::error_text(e)))
    } else {
        CheckError::Bad(failed(c, postgres::error_text(e)))
    }
}

impl From<CheckError> for anyhow::Error {
    fn from(e: CheckError) -> Self {
        match e {
            CheckError::Bad(b) => b.into(),
            CheckError::Lost(m) => anyhow::anyhow!(m),
        }
    }
}

/// What one execution of a check found.
#[derive(Debug, Clone, PartialEq)]
struct Found {
    violations: u64,
    /// A rows check's rows (the first [`KEPT_ROWS`]).
    rows: Option<CheckRows>,
    /// `3 rows, e.g. aid=7 abalance=-6`, `count 0`, `98, expected 100`.
    detail: String,
}

/// Prepares every check of `checks` on `db` (the run's fresh copy) without
/// running it: a syntax error, an unknown table or column, several
/// statements, or an `expect` on a query of several columns is found
/// before the run starts.
///
/// Errors: [`BadInput`] naming the first check that does not prepare;
/// the connection lost.
pub(super) async fn validate(db: &Client, checks: &[CheckSpec]) -> anyhow::Result<()> {
    for c in checks {
        let st = db.prepare(&c.sql).await.map_err(|e| classify(c, &e))?;
        if st.columns().is_empty() {
            return Err(failed(c, "it returns no rows; give a SELECT").into());
        }
        if c.expect.is_some() && st.columns().len() != 1 {
            return Err(failed(
                c,
                format!(
                    "expect is given, so it must return one value, and it returns {} columns",
                    st.columns().len()
                ),
            )
            .into());
        }
    }
    Ok(())
}

/// Runs `c` once on `db`, in a READ ONLY transaction.
///
/// Errors: [`BadInput`] naming the check (see the module docs).
async fn run_one(db: &Client, c: &CheckSpec) -> Result<Found, CheckError> {
    db.batch_execute("BEGIN READ ONLY")
        .await
        .map_err(|e| classify(c, &e))?;
    let result = db.simple_query(&c.sql).await;
    // Ends the transaction also after an error (nothing to keep).
    let _ = db.batch_execute("ROLLBACK").await;
    let messages = result.map_err(|e| classify(c, &e))?;
    let mut columns = None;
    let mut rows = Vec::new();
    let mut statements = 0;
    for m in messages {
        match m {
            SimpleQueryMessage::RowDescription(cols) => {
                columns = Some(
                    cols.iter()
                        .map(|c| c.name().to_string())
                        .collect::<Vec<_>>(),
                )
            }
            SimpleQueryMessage::Row(r) => {
                rows.push((0..r.len()).map(|i| r.get(i).map(String::from)).collect())
            }
            SimpleQueryMessage::CommandComplete(_) => statements += 1,
            _ => {}
        }
    }
    if statements > 1 {
        return Err(failed(c, "it holds several statements; give one query").into());
    }
    let columns = columns.ok_or_else(|| failed(c, "it returns no rows; give a SELECT"))?;
    Ok(count(c, columns, rows)?)
}

/// What a check's result counts (see [`CheckSpec`]).
fn count(
    c: &CheckSpec,
    columns: Vec<String>,
    mut rows: Vec<Vec<Option<String>>>,
) -> Result<Found, BadInput> {
    let is_count = c.expect.is_some()
        || (columns.len() == 1
            && rows.len() == 1
            && matches!(columns[0].as_str(), "count" | "violations"));
    if !is_count {
        let n = rows.len() as u64;
        rows.truncate(KEPT_ROWS);
        let kept = CheckRows { columns, rows };
        return Ok(match kept.first() {
            Some(first) => Found {
                violations: n,
                detail: format!("{n} row(s), e.g. {first}"),
                rows: Some(kept),
            },
            None => Found {
                violations: 0,
                detail: "no rows".into(),
                rows: None,
            },
        });
    }
    let value = match (rows.as_slice(), columns.len()) {
        ([row], 1) => row[0].clone(),
        _ => {
            return Err(failed(
                c,
                format!(
                    "expect is given, so it must return one value, and it returned {} row(s) of {} column(s)",
                    rows.len(),
                    columns.len()
                ),
            ));
        }
    };
    let value: i64 = value.as_deref().unwrap_or("NULL").parse().map_err(|_| {
        failed(
            c,
            format!(
                "its count is {}, not an integer",
                value.as_deref().unwrap_or("NULL")
            ),
        )
    })?;
    let expect = c.expect.unwrap_or(0);
    Ok(Found {
        violations: value.abs_diff(expect),
        rows: None,
        detail: match c.expect {
            Some(e) => format!("{} {value}, expected {e}", columns[0]),
            None => format!("{} {value}", columns[0]),
        },
    })
}

/// Runs every check of `checks` once on `db` after a run, and makes
/// each an invariant result with what its samples `during` saw (by
/// check, in `checks`' order; absent for checks without `during`).
///
/// Errors: [`BadInput`] naming the first check that fails to run; the
/// connection lost.
pub(super) async fn after_run(
    db: &Client,
    checks: &[CheckSpec],
    during: &[Option<DuringCheck>],
) -> anyhow::Result<Vec<InvariantResult>> {
    let mut out = Vec::with_capacity(checks.len());
    for (i, c) in checks.iter().enumerate() {
        let found = run_one(db, c).await?;
        out.push(result(c, found, during.get(i).cloned().flatten()));
    }
    Ok(out)
}

/// The invariant result of check `c` from what it `found` after the run
/// and what its samples saw `during` it: the violations are the most
/// found at once.
fn result(c: &CheckSpec, found: Found, during: Option<DuringCheck>) -> InvariantResult {
    let mut detail = format!("after the run: {}", found.detail);
    let mut violations = found.violations;
    if let Some(d) = &during {
        violations = violations.max(d.max_violations);
        detail.push_str(&match d.first_violation_s {
            Some(t) => format!(
                "; during the run: up to {} at once, first at {t:.1} s ({} of {} samples)",
                d.max_violations, d.violated_samples, d.samples
            ),
            None => format!("; during the run: none in {} samples", d.samples),
        });
    }
    InvariantResult {
        declared: true,
        rows: found.rows,
        during,
        ..InvariantResult::count(&c.name, violations, detail)
    }
}

/// What the samples of the `during` checks saw: by check, in the
/// study's order (`None` for a check without `during`), and why sampling
/// stopped early, if it did (the connection lost: a fault, not the
/// checks').
#[derive(Debug, Default)]
pub(super) struct During {
    pub seen: Vec<Option<DuringCheck>>,
    pub stopped: Option<String>,
}

/// Samples the checks of `checks` that have `during` on their own
/// connection to `config`, every `interval` from when `phase` leaves
/// `Connecting` (the load started) until it reaches `Draining`. Nothing
/// is sampled (and no connection opened) when no check has `during`.
///
/// Errors: a check fails to run ([`BadInput`] naming it); sampling stops
/// at the first error.
pub(super) async fn during_run(
    mut config: tokio_postgres::Config,
    checks: Vec<CheckSpec>,
    interval: Duration,
    mut phase: watch::Receiver<Phase>,
) -> Result<During, BadInput> {
    let mut seen: Vec<Option<DuringCheck>> = checks
        .iter()
        .map(|c| c.during.then(DuringCheck::default))
        .collect();
    if !checks.iter().any(|c| c.during) {
        return Ok(During {
            seen,
            stopped: None,
        });
    }
    postgres::own_session(&mut config, "checks");
    let db = match postgres::connect(&config).await {
        Ok(db) => db,
        Err(e) => {
            return Ok(During {
                seen,
                stopped: Some(format!("declared checks not sampled during the run: {e}")),
            });
        }
    };
    let mut stopped = None;
    while *phase.borrow_and_update() == Phase::Connecting {
        if phase.changed().await.is_err() {
            return Ok(During { seen, stopped });
        }
    }
    let started = Instant::now();
    loop {
        if *phase.borrow() == Phase::Draining {
            break;
        }
        let at = started.elapsed().as_secs_f64();
        for (c, d) in checks.iter().zip(seen.iter_mut()) {
            let Some(d) = d else { continue };
            let found = match run_one(&db, c).await {
                Ok(f) => f,
                Err(CheckError::Bad(e)) => return Err(e),
                Err(CheckError::Lost(m)) => {
                    stopped = Some(format!(
                        "declared checks sampled until {at:.1} s into the run, then: {m}"
                    ));
                    return Ok(During { seen, stopped });
                }
            };
            d.samples += 1;
            if found.violations > 0 {
                d.violated_samples += 1;
                d.max_violations = d.max_violations.max(found.violations);
                if d.first_violation_s.is_none() {
                    d.first_violation_s = Some(at);
                    d.rows = found.rows;
                }
            }
        }
        let next = tokio::time::sleep(interval);
        tokio::select! {
            _ = next => {}
            r = phase.wait_for(|p| *p == Phase::Draining) => {
                if r.is_err() { break; }
            }
        }
    }
    Ok(During { seen, stopped })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(expect: Option<i64>) -> CheckSpec {
        CheckSpec {
            name: "no-negative-balance".into(),
            sql: "SELECT ...".into(),
            expect,
            during: false,
            origin: "study.toml:3".into(),
        }
    }

    fn row(v: &[Option<&str>]) -> Vec<Option<String>> {
        v.iter().map(|x| x.map(String::from)).collect()
    }

    #[test]
    fn rows_are_violations_and_the_first_ten_are_kept() {
        let cols = vec!["aid".to_string(), "abalance".to_string()];
        let rows: Vec<_> = (0..12)
            .map(|i| row(&[Some(&i.to_string()), Some("-6")]))
            .collect();
        let f = count(&spec(None), cols.clone(), rows).unwrap();
        assert_eq!(f.violations, 12);
        assert_eq!(f.rows.as_ref().unwrap().rows.len(), KEPT_ROWS);
        assert_eq!(f.detail, "12 row(s), e.g. aid=0 abalance=-6");
        let f = count(&spec(None), cols, Vec::new()).unwrap();
        assert_eq!(
            (f.violations, f.rows, f.detail.as_str()),
            (0, None, "no rows")
        );
        // One row of one id is a violation, not a count of 7.
        let f = count(&spec(None), vec!["aid".into()], vec![row(&[Some("7")])]).unwrap();
        assert_eq!(f.violations, 1);
        // NULL values are kept as NULL.
        let f = count(
            &spec(None),
            vec!["x".into()],
            vec![row(&[None]), row(&[None])],
        )
        .unwrap();
        assert_eq!(f.detail, "2 row(s), e.g. x=NULL");
    }

    #[test]
    fn a_count_is_compared_with_expect() {
        let f = count(&spec(None), vec!["count".into()], vec![row(&[Some("3")])]).unwrap();
        assert_eq!((f.violations, f.detail.as_str()), (3, "count 3"));
        let f = count(
            &spec(Some(100)),
            vec!["sum".into()],
            vec![row(&[Some("98")])],
        )
        .unwrap();
        assert_eq!(
            (f.violations, f.detail.as_str()),
            (2, "sum 98, expected 100")
        );
        let f = count(
            &spec(Some(100)),
            vec!["sum".into()],
            vec![row(&[Some("100")])],
        )
        .unwrap();
        assert_eq!(f.violations, 0);
        // A count that is not one integer fails, naming the check.
        for (cols, rows, needle) in [
            (vec!["sum"], vec![row(&[None])], "its count is NULL"),
            (vec!["sum"], vec![row(&[Some("1.5")])], "its count is 1.5"),
            (
                vec!["a", "b"],
                vec![row(&[Some("1"), Some("2")])],
                "returned 1 row(s) of 2 column(s)",
            ),
            (vec!["a"], Vec::new(), "returned 0 row(s) of 1 column(s)"),
        ] {
            let cols = cols.into_iter().map(String::from).collect();
            let e = count(&spec(Some(0)), cols, rows).unwrap_err().0;
            assert!(e.contains(needle), "{e}");
            assert!(
                e.starts_with("check no-negative-balance (study.toml:3) failed to run"),
                "{e}"
            );
        }
    }

    #[test]
    fn the_result_holds_the_most_violations_seen_at_once() {
        let found = Found {
            violations: 0,
            rows: None,
            detail: "no rows".into(),
        };
        let during = DuringCheck {
            samples: 10,
            violated_samples: 2,
            max_violations: 3,
            first_violation_s: Some(1.3),
            rows: None,
        };
        let r = result(&spec(None), found.clone(), Some(during));
        assert!(r.declared && !r.ok);
        assert_eq!(r.violations, 3);
        assert_eq!(
            r.detail,
            "after the run: no rows; during the run: up to 3 at once, first at 1.3 s (2 of 10 samples)"
        );
        let r = result(&spec(None), found, None);
        assert!(r.ok && r.during.is_none());
    }
}
