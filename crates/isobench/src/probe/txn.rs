//! Which transaction each step ran in, and whether that transaction
//! committed, from what a session executed: its setup, its steps and its
//! teardown, each with the statements it holds and whether it succeeded.
//!
//! The client cannot see the server's transaction status directly (the
//! simple query protocol's command tags are not exposed by tokio-postgres),
//! so this follows the statements, as psql's prompt would: `BEGIN`/`START
//! TRANSACTION` opens a transaction; `COMMIT`/`END` commits it unless a
//! statement in it failed (PostgreSQL then answers ROLLBACK); `ROLLBACK`/
//! `ABORT` (not `ROLLBACK TO SAVEPOINT`) rolls it back; a transaction still
//! open when the session closes is rolled back; a statement outside a
//! transaction block commits on its own. Statements are split at `;`, so a
//! `;` inside a string or a function body can confuse the split (it only
//! matters if a fragment then starts with one of these keywords).

use std::collections::BTreeMap;

use super::spec::StepRef;

/// What a statement does to the transaction state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Control {
    Begin,
    Commit,
    Rollback,
    Other,
}

/// The transaction-control meaning of each statement of `sql`, in order
/// (empty statements and `--` comments skipped).
pub(crate) fn controls(sql: &str) -> Vec<Control> {
    sql.split(';')
        .filter_map(|stmt| {
            let text: String = stmt
                .lines()
                .map(|l| l.split("--").next().unwrap_or(""))
                .collect::<Vec<_>>()
                .join(" ");
            let words: Vec<String> = text
                .split_whitespace()
                .take(2)
                .map(str::to_ascii_lowercase)
                .collect();
            let first = words.first()?;
            let second = words.get(1).map(String::as_str);
            Some(match first.as_str() {
                "begin" => Control::Begin,
                "start" if second == Some("transaction") => Control::Begin,
                "commit" | "end" => Control::Commit,
                "rollback" | "abort" if second != Some("to") => Control::Rollback,
                _ => Control::Other,
            })
        })
        .collect()
}

/// One thing a session executed, in order.
#[derive(Debug, Clone)]
pub struct Executed<'a> {
    /// The step, or `None` for the session's setup or teardown.
    pub step: Option<StepRef>,
    pub sql: &'a str,
    /// It completed without error.
    pub ok: bool,
}

/// For every step in `log`: whether the transaction it ran in committed.
pub fn step_outcomes(log: &[Executed<'_>]) -> BTreeMap<StepRef, bool> {
    let mut out = BTreeMap::new();
    let mut open = false;
    let mut failed = false;
    let mut members: Vec<StepRef> = Vec::new();
    let end = |members: &mut Vec<StepRef>, committed: bool, out: &mut BTreeMap<StepRef, bool>| {
        for m in members.drain(..) {
            out.insert(m, committed);
        }
    };
    for e in log {
        let ctl = controls(e.sql);
        if let Some(r) = e.step
            && open
        {
            members.push(r);
        }
        if !e.ok {
            // Which statement failed is unknown; one that opens a
            // transaction first is assumed to have run.
            if !open && ctl.first() == Some(&Control::Begin) {
                open = true;
                members.extend(e.step);
            }
            if open {
                failed = true;
            } else if let Some(r) = e.step {
                out.insert(r, false);
            }
            continue;
        }
        for c in ctl {
            match c {
                Control::Begin if !open => {
                    open = true;
                    failed = false;
                    if let Some(r) = e.step
                        && !members.contains(&r)
                    {
                        members.push(r);
                    }
                }
                Control::Begin => {}
                Control::Commit => {
                    end(&mut members, open && !failed, &mut out);
                    open = false;
                }
                Control::Rollback => {
                    end(&mut members, false, &mut out);
                    open = false;
                }
                Control::Other => {
                    if !open && let Some(r) = e.step {
                        out.entry(r).or_insert(true);
                    }
                }
            }
        }
        if let Some(r) = e.step
            && !open
            && !members.contains(&r)
        {
            out.entry(r).or_insert(true);
        }
    }
    end(&mut members, false, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(step: usize) -> StepRef {
        StepRef { session: 0, step }
    }

    fn run(log: &[(Option<usize>, &str, bool)]) -> Vec<(usize, bool)> {
        let log: Vec<Executed<'_>> = log
            .iter()
            .map(|&(s, sql, ok)| Executed {
                step: s.map(r),
                sql,
                ok,
            })
            .collect();
        step_outcomes(&log)
            .into_iter()
            .map(|(k, v)| (k.step, v))
            .collect()
    }

    #[test]
    fn statement_controls() {
        use Control::*;
        assert_eq!(controls("BEGIN; SELECT 1;"), vec![Begin, Other]);
        assert_eq!(
            controls("start transaction isolation level serializable"),
            vec![Begin]
        );
        assert_eq!(
            controls("UPDATE t SET x = 1;\n  rollback;"),
            vec![Other, Rollback]
        );
        assert_eq!(
            controls("ROLLBACK TO SAVEPOINT a; END"),
            vec![Other, Commit]
        );
        assert_eq!(controls("-- rollback\nCOMMIT;"), vec![Commit]);
        assert_eq!(controls("SELECT 'rollback'"), vec![Other]);
        assert_eq!(controls("  ;  "), Vec::<Control>::new());
    }

    #[test]
    fn setup_begin_then_commit_step() {
        let got = run(&[
            (None, "BEGIN;", true),
            (Some(0), "UPDATE t SET v = 1;", true),
            (Some(1), "COMMIT;", true),
        ]);
        assert_eq!(got, vec![(0, true), (1, true)]);
    }

    #[test]
    fn a_failed_statement_makes_commit_a_rollback() {
        let got = run(&[
            (None, "BEGIN;", true),
            (Some(0), "SELECT 1;", true),
            (Some(1), "UPDATE t SET v = 1;", false),
            (Some(2), "COMMIT;", true),
        ]);
        assert_eq!(got, vec![(0, false), (1, false), (2, false)]);
    }

    #[test]
    fn rollback_and_a_transaction_left_open_do_not_commit() {
        let got = run(&[
            (None, "BEGIN;", true),
            (Some(0), "SELECT 1;", true),
            (Some(1), "ABORT;", true),
        ]);
        assert_eq!(got, vec![(0, false), (1, false)]);
        let got = run(&[(None, "BEGIN;", true), (Some(0), "SELECT 1;", true)]);
        assert_eq!(got, vec![(0, false)]);
    }

    #[test]
    fn commit_in_the_teardown_counts_and_can_fail() {
        let got = run(&[
            (None, "BEGIN;", true),
            (Some(0), "SELECT 1;", true),
            (None, "COMMIT;", true),
        ]);
        assert_eq!(got, vec![(0, true)]);
        let got = run(&[
            (None, "BEGIN;", true),
            (Some(0), "SELECT 1;", true),
            (None, "COMMIT;", false),
        ]);
        assert_eq!(got, vec![(0, false)]);
    }

    #[test]
    fn autocommit_steps_and_steps_with_their_own_transactions() {
        let got = run(&[
            (Some(0), "UPDATE t SET v = 1;", true),
            (Some(1), "UPDATE t SET v = 2;", false),
            (Some(2), "BEGIN; UPDATE t SET v = 3; COMMIT;", true),
            (Some(3), "BEGIN; UPDATE t SET v = 4;", true),
            (Some(4), "ROLLBACK;", true),
            (Some(5), "BEGIN; UPDATE t SET v = 5;", false),
            (Some(6), "COMMIT;", true),
        ]);
        assert_eq!(
            got,
            vec![
                (0, true),
                (1, false),
                (2, true),
                (3, false),
                (4, false),
                (5, false),
                (6, false)
            ]
        );
    }
}
