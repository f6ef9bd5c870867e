//! What a cell's anomalies column counts: which checks cover its
//! transactions, and each check's violations over the cell's runs.
//!
//! A check covers a cell's transactions when it says something about
//! them: every check the study declared (`[[check]]`, `--check`,
//! `--check-file`); a built-in workload's own invariants; for pgbench
//! scripts over pgbench's tables, TPC-B's balance and history checks when
//! the scripts are pgbench's own (`-b`), or insert the history rows that
//! make those checks meaningful (the history check could count lost
//! commits), as rewrites of pgbench's scripts do; and any check that
//! found a violation.
//! A custom script or an external load without a covering check is *not
//! checked*: its anomalies column says so, never 0 (issue #37: a transfer
//! script that overdrew accounts under READ COMMITTED read "anomalies 0").

use crate::model::{HISTORY_CHECK, InvariantResult};
use crate::store::{Cell, RunRecord, StoredConfig};

/// The workload name results hold for pgbench scripts
/// (`executor::SCRIPTS`).
const SCRIPTS: &str = "pgbench-script";

/// One check over a cell's runs (all of them: a violation is a fact about
/// the data however long the run lasted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckTally {
    pub name: String,
    /// Declared by the study, not one of the workload's own invariants.
    pub declared: bool,
    /// Σ violations over the runs.
    pub violations: u64,
    /// Runs in which the check found violations.
    pub runs_violated: usize,
    /// Runs in which the check ran.
    pub runs_checked: usize,
    /// Whether it covers the cell's transactions (see the module docs).
    pub covers: bool,
}

/// Whether the scripts of `cell` (of a study configured as `config`) are
/// pgbench's own built-in scripts only (`-b`, or a script set of
/// `builtin:` members), whose data TPC-B's checks describe.
fn pgbench_own_scripts(config: &StoredConfig, cell: &Cell) -> bool {
    let s = &config.scripts;
    match s.sets.iter().find(|set| set.label == cell.workload) {
        Some(set) => set.files.is_empty(),
        None => s.sets.is_empty() && s.files.is_empty() && !s.builtins.is_empty(),
    }
}

/// Whether invariant `i` of run `r` (of a study configured as `config`)
/// covers the run's transactions (see the module docs).
fn covers(config: &StoredConfig, r: &RunRecord, i: &InvariantResult) -> bool {
    i.declared
        || !i.ok
        || match config.workload.as_str() {
            SCRIPTS => {
                pgbench_own_scripts(config, &r.cell)
                    || r.invariants
                        .iter()
                        .any(|x| x.name == HISTORY_CHECK && x.lost_commits.is_some())
            }
            _ => true,
        }
}

/// Every check of `runs` (of a study configured as `config`), the
/// workload's own first, then the declared ones, each in the order the
/// runs list them.
pub fn tallies(config: &StoredConfig, runs: &[&RunRecord]) -> Vec<CheckTally> {
    let mut out: Vec<CheckTally> = Vec::new();
    for r in runs {
        for i in &r.invariants {
            let covers = covers(config, r, i);
            let t = match out
                .iter_mut()
                .find(|t| t.name == i.name && t.declared == i.declared)
            {
                Some(t) => t,
                None => {
                    out.push(CheckTally {
                        name: i.name.clone(),
                        declared: i.declared,
                        violations: 0,
                        runs_violated: 0,
                        runs_checked: 0,
                        covers: false,
                    });
                    out.last_mut().expect("just pushed")
                }
            };
            t.violations += i.violations;
            t.runs_violated += usize::from(i.violations > 0 || !i.ok);
            t.runs_checked += 1;
            t.covers |= covers;
        }
    }
    out.sort_by_key(|t| t.declared);
    out
}

/// Whether any of `tallies` covers the cell: else its anomalies column
/// says "not checked".
pub fn checked(tallies: &[CheckTally]) -> bool {
    tallies.iter().any(|t| t.covers)
}

/// The names of the checks that cover some cell, over every cell's
/// `tallies`: the workload's own, then the declared ones, each once.
pub fn covered_names<'a>(
    tallies: impl IntoIterator<Item = &'a [CheckTally]>,
) -> (Vec<String>, Vec<String>) {
    let (mut own, mut declared) = (Vec::new(), Vec::new());
    for ts in tallies {
        for t in ts.iter().filter(|t| t.covers) {
            let list = if t.declared { &mut declared } else { &mut own };
            if !list.contains(&t.name) {
                list.push(t.name.clone());
            }
        }
    }
    (own, declared)
}

/// What a cell's anomalies column says when no check covers it.
pub const NOT_CHECKED: &str = "not checked";

/// What the anomalies column counts, for the note under (or above) a
/// cells table: the checks that cover some cell, the workload's own
/// (`workload` as results name it) then the declared ones, e.g.
/// `anomalies: violations over all runs of tpcb's balances-consistent,
/// history-matches-commits and the declared no-negative-balance`; and
/// which cells no check covers.
pub fn column_note<'a>(
    workload: &str,
    cells: impl IntoIterator<Item = &'a [CheckTally]>,
) -> String {
    let cells: Vec<&[CheckTally]> = cells.into_iter().collect();
    let (own, declared) = covered_names(cells.iter().copied());
    let unchecked = cells.iter().filter(|t| !checked(t)).count();
    let whose = match workload {
        SCRIPTS => "TPC-B's".to_string(),
        w => format!("{w}'s"),
    };
    let mut parts = Vec::new();
    if !own.is_empty() {
        parts.push(format!("{whose} {}", own.join(", ")));
    }
    if !declared.is_empty() {
        parts.push(format!("the declared {}", declared.join(", ")));
    }
    let declare = "declare the rule your transactions must keep with --check or [[check]] (user guide: Declared checks)";
    match (parts.is_empty(), unchecked) {
        (true, _) => {
            format!("anomalies: {NOT_CHECKED}: no check covers these transactions; {declare}")
        }
        (false, 0) => format!(
            "anomalies: violations over all runs of {}",
            parts.join(" and ")
        ),
        (false, n) => format!(
            "anomalies: violations over all runs of {}; {n} cell(s) {NOT_CHECKED}: no check covers their transactions; {declare}",
            parts.join(" and ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fixture;

    /// `config` as a script study's (`-f`, a file of one's own).
    fn scripts(mut config: StoredConfig) -> StoredConfig {
        config.workload = SCRIPTS.into();
        config.scripts.files = vec![("mine.sql".into(), 1)];
        config
    }

    #[test]
    fn a_custom_script_is_covered_by_declared_checks_or_a_history_that_counts() {
        let r = fixture::swallowed_history();
        let runs: Vec<&RunRecord> = r.runs.iter().collect();
        let c = scripts(r.config.clone());
        // Scripts inserting history: the history check counts, covered.
        let t = tallies(&c, &runs);
        assert_eq!(t.len(), 1);
        assert!(checked(&t));
        // A script that inserts none (lost commits unknown): its TPC-B
        // checks hold trivially and say nothing of it.
        let mut r = fixture::results();
        for run in &mut r.runs {
            run.invariants[1].lost_commits = None;
        }
        r.runs.retain(|run| run.anomalies == 0);
        let runs: Vec<&RunRecord> = r.runs.iter().collect();
        let c = scripts(r.config.clone());
        let t = tallies(&c, &runs);
        assert_eq!(t.len(), 2);
        assert!(!checked(&t), "{t:?}");
        assert!(
            column_note(SCRIPTS, [t.as_slice()])
                .starts_with("anomalies: not checked: no check covers these transactions; declare"),
            "{}",
            column_note(SCRIPTS, [t.as_slice()])
        );
        let tpcb = tallies(&r.config, &runs);
        assert_eq!(
            column_note("tpcb", [tpcb.as_slice(), t.as_slice()]),
            "anomalies: violations over all runs of tpcb's balances-consistent, history-matches-commits; \
             1 cell(s) not checked: no check covers their transactions; declare the rule your transactions \
             must keep with --check or [[check]] (user guide: Declared checks)"
        );
        // The same checks of the built-in workload cover it, and of
        // pgbench's own scripts (`-b select-only` inserts no history).
        assert!(checked(&tallies(&r.config, &runs)));
        let mut own = c.clone();
        own.scripts.files.clear();
        own.scripts.builtins = vec![("select-only".into(), 1)];
        assert!(checked(&tallies(&own, &runs)));
        // A declared check covers the script, and counts by run.
        let mut r2 = r.clone();
        for (k, run) in r2.runs.iter_mut().enumerate() {
            run.invariants.push(InvariantResult {
                declared: true,
                ..InvariantResult::count("no-negative-balance", k as u64, String::new())
            });
        }
        let runs: Vec<&RunRecord> = r2.runs.iter().collect();
        let t = tallies(&c, &runs);
        assert!(checked(&t));
        let d = t.iter().find(|t| t.declared).unwrap();
        assert_eq!((d.violations, d.runs_violated, d.runs_checked), (6, 3, 4));
        let (own, declared) = covered_names([t.as_slice()]);
        assert!(own.is_empty());
        assert_eq!(declared, ["no-negative-balance"]);
        assert_eq!(
            column_note(SCRIPTS, [t.as_slice()]),
            "anomalies: violations over all runs of the declared no-negative-balance"
        );
        // A violated TPC-B check of a script covers it (it found something).
        let r = fixture::results();
        let mut r3 = r.clone();
        for run in &mut r3.runs {
            run.invariants[1].lost_commits = None;
        }
        let runs: Vec<&RunRecord> = r3.runs.iter().collect();
        let t = tallies(&scripts(r3.config.clone()), &runs);
        assert!(checked(&t));
        let (own, _) = covered_names([t.as_slice()]);
        assert_eq!(own, ["balances-consistent"]);
    }
}
