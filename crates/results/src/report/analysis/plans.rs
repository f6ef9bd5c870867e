//! What ran when: every run EXPLAINs each workload statement when its
//! measured window starts and again when it ends (a plan that changed is
//! recorded as a [`crate::model::PlanChange`]). This module turns those
//! moments into the words that the findings and the Plans section both
//! use, so that the two tell one story: a plan that held throughout is
//! named alone, one that did not says when it held ("at the start of
//! every run and at the end of run 4", "at the end of run 1").

use std::fmt::Write as _;

use crate::model::plan_shape;
use crate::report::analysis::cells::CellSummary;

/// One EXPLAIN of a statement in a run: at the start or at the end of
/// the run's measured window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Moment<'a> {
    pub run: u32,
    /// At the end of the window (else at its start).
    pub end: bool,
    pub label: &'a str,
    pub sql: &'a str,
    pub plan: &'a str,
}

/// Every EXPLAIN of cell `c`'s runs (interrupted ones included: what
/// they ran is a fact too), in execution order, each run's start before
/// its end. A statement whose plan did not change within a run ended
/// with the plan it started with.
pub fn moments<'a>(c: &CellSummary<'a>) -> Vec<Moment<'a>> {
    let mut out = Vec::new();
    for run in &c.runs {
        let s = &run.server;
        for p in &s.plans {
            out.push(Moment {
                run: run.index,
                end: false,
                label: &p.label,
                sql: &p.sql,
                plan: &p.plan,
            });
        }
        for p in &s.plans {
            let changed = s
                .plan_changes
                .iter()
                .find(|ch| ch.label == p.label && ch.sql == p.sql);
            out.push(Moment {
                run: run.index,
                end: true,
                label: &p.label,
                sql: &p.sql,
                plan: changed.map_or(p.plan.as_str(), |ch| ch.end.as_str()),
            });
        }
    }
    out
}

/// When a plan held in one cell: the runs whose window started with it,
/// those whose window ended with it, out of the cell's runs that
/// EXPLAINed the statement (each list in execution order).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct When {
    pub starts: Vec<u32>,
    pub ends: Vec<u32>,
    /// The cell's runs that EXPLAINed the statement.
    pub runs: Vec<u32>,
}

impl When {
    /// The plan held at the start and at the end of every run.
    pub fn always(&self) -> bool {
        self.starts == self.runs && self.ends == self.runs
    }

    /// When, in words: empty when [`Self::always`]; else `throughout
    /// run 4`, `at the start of every run and at the end of run 4`, `at
    /// the end of run 1`, ...
    pub fn phrase(&self) -> String {
        if self.always() {
            return String::new();
        }
        if !self.starts.is_empty() && self.starts == self.ends {
            return format!("throughout {}", runs_text(&self.starts));
        }
        let part = |v: &[u32], at: &str| match v {
            [] => None,
            v if v == self.runs && v.len() > 1 => Some(format!("at the {at} of every run")),
            v => Some(format!("at the {at} of {}", runs_text(v))),
        };
        [part(&self.starts, "start"), part(&self.ends, "end")]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" and ")
    }
}

/// `run 1`, `runs 1, 4`.
pub fn runs_text(runs: &[u32]) -> String {
    let list: Vec<String> = runs.iter().map(u32::to_string).collect();
    match runs {
        [_] => format!("run {}", list[0]),
        _ => format!("runs {}", list.join(", ")),
    }
}

/// The moments of `moments` whose statement is `label`, grouped by
/// `key` of their plan, in order of first appearance: each key with the
/// first moment that had it and when it held.
pub fn group_by<'a, K: PartialEq>(
    moments: &[Moment<'a>],
    label: &str,
    key: impl Fn(&Moment<'a>) -> K,
) -> Vec<(K, Moment<'a>, When)> {
    let mut runs: Vec<u32> = Vec::new();
    let mut out: Vec<(K, Moment<'a>, When)> = Vec::new();
    for mo in moments.iter().filter(|mo| mo.label == label) {
        if !runs.contains(&mo.run) {
            runs.push(mo.run);
        }
        let k = key(mo);
        let i = match out.iter().position(|(x, _, _)| *x == k) {
            Some(i) => i,
            None => {
                out.push((k, *mo, When::default()));
                out.len() - 1
            }
        };
        let w = &mut out[i].2;
        let at = if mo.end { &mut w.ends } else { &mut w.starts };
        if !at.contains(&mo.run) {
            at.push(mo.run);
        }
    }
    for (_, _, w) in &mut out {
        w.runs = runs.clone();
    }
    out
}

/// A story of plans, one part per distinct step: `Seq Scan on t`, or,
/// when it did not hold throughout, `Seq Scan on t at the start of every
/// run and at the end of run 4, Index Scan using t_pkey on t at the end
/// of run 1`.
pub fn story(parts: &[(String, When)]) -> String {
    match parts {
        [(step, w)] if w.always() => step.clone(),
        _ => parts
            .iter()
            .map(|(step, w)| {
                let p = w.phrase();
                if p.is_empty() {
                    step.clone()
                } else {
                    format!("{step} {p}")
                }
            })
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// The first line where plans `a` and `b` part (estimates aside), as
/// (the line of `a`, the line of `b`); `(no such step)` past a plan's
/// end.
pub fn first_difference(a: &str, b: &str) -> (String, String) {
    let (a, b) = (plan_shape(a), plan_shape(b));
    let at = (0..).find(|&k| a.get(k) != b.get(k)).unwrap_or(0);
    let step = |v: &[String]| {
        v.get(at)
            .cloned()
            .unwrap_or_else(|| "(no such step)".into())
    };
    (step(&a), step(&b))
}

/// A plan that changed within runs: the statement, the first step where
/// the plans part at the start and at the end of the window, the runs
/// and their cells' labels.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeGroup {
    pub label: String,
    pub start: String,
    pub end: String,
    pub runs: Vec<u32>,
    pub cells: Vec<String>,
}

impl ChangeGroup {
    /// `` `update teller` changed plan within run 1 (rc): Seq Scan on t
    /// at the start, Index Scan using t_pkey on t at the end ``: the same
    /// sentence in the findings and in the Plans section.
    pub fn text(&self) -> String {
        let mut s = format!(
            "`{}` changed plan within {}",
            self.label,
            runs_text(&self.runs)
        );
        if !self.cells.is_empty() {
            let _ = write!(s, " ({})", self.cells.join("; "));
        }
        let _ = write!(s, ": {} at the start, {} at the end", self.start, self.end);
        s
    }
}

/// One distinct plan (estimates aside) of one statement, with the cells
/// that ran it and when.
#[derive(Debug, Clone)]
pub struct PlanGroup<'a> {
    pub label: &'a str,
    pub sql: &'a str,
    /// The plan as first EXPLAINed (its estimates are that EXPLAIN's).
    pub plan: &'a str,
    /// Each cell that ran it (index into the model's cells) and when.
    pub cells: Vec<(usize, When)>,
}

impl PlanGroup<'_> {
    /// Who ran the plan and when: `all cells`, or each cell's label,
    /// followed by when it ran it if not throughout: `rc at the start of
    /// every run and at the end of run 4; ser`.
    pub fn who(&self, labels: &[String]) -> String {
        if self.cells.len() == labels.len() && self.cells.iter().all(|(_, w)| w.always()) {
            return "all cells".into();
        }
        self.cells
            .iter()
            .map(|(i, w)| {
                let p = w.phrase();
                if p.is_empty() {
                    labels[*i].clone()
                } else {
                    format!("{} {p}", labels[*i])
                }
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// Each distinct plan (by statement, SQL and plan shape) of every run of
/// every cell, start and end of the window alike, with the cells that
/// ran it and when; a statement's plans together, statements in order
/// of first appearance.
pub fn distinct_plans<'a>(cells: &[CellSummary<'a>]) -> Vec<PlanGroup<'a>> {
    let mut groups: Vec<(Vec<String>, PlanGroup<'a>)> = Vec::new();
    let mut labels: Vec<&str> = Vec::new();
    for (i, c) in cells.iter().enumerate() {
        let moments = moments(c);
        let mut seen: Vec<&str> = Vec::new();
        for mo in &moments {
            if seen.contains(&mo.label) {
                continue;
            }
            seen.push(mo.label);
            if !labels.contains(&mo.label) {
                labels.push(mo.label);
            }
            let by = group_by(&moments, mo.label, |m| (m.sql, plan_shape(m.plan)));
            for ((sql, shape), first, when) in by {
                match groups
                    .iter_mut()
                    .find(|(s, g)| g.label == first.label && g.sql == sql && *s == shape)
                {
                    Some((_, g)) => g.cells.push((i, when)),
                    None => groups.push((
                        shape,
                        PlanGroup {
                            label: first.label,
                            sql,
                            plan: first.plan,
                            cells: vec![(i, when)],
                        },
                    )),
                }
            }
        }
    }
    let mut groups: Vec<PlanGroup<'a>> = groups.into_iter().map(|(_, g)| g).collect();
    groups.sort_by_key(|g| labels.iter().position(|l| *l == g.label));
    groups
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fixture;
    use crate::report::analysis::cells;

    fn when(starts: &[u32], ends: &[u32], runs: &[u32]) -> When {
        When {
            starts: starts.to_vec(),
            ends: ends.to_vec(),
            runs: runs.to_vec(),
        }
    }

    #[test]
    fn when_in_words() {
        assert_eq!(when(&[1, 4], &[1, 4], &[1, 4]).phrase(), "");
        assert_eq!(
            when(&[1, 4], &[4], &[1, 4]).phrase(),
            "at the start of every run and at the end of run 4"
        );
        assert_eq!(when(&[], &[1], &[1, 4]).phrase(), "at the end of run 1");
        assert_eq!(when(&[4], &[4], &[1, 4]).phrase(), "throughout run 4");
        assert_eq!(when(&[1], &[], &[1]).phrase(), "at the start of run 1");
        assert_eq!(
            when(&[1, 3], &[], &[1, 3, 5]).phrase(),
            "at the start of runs 1, 3"
        );
        let parts = vec![
            ("Seq Scan on t".to_string(), when(&[1, 4], &[4], &[1, 4])),
            (
                "Index Scan using t_pkey on t".to_string(),
                when(&[], &[1], &[1, 4]),
            ),
        ];
        assert_eq!(
            story(&parts),
            "Seq Scan on t at the start of every run and at the end of run 4, \
             Index Scan using t_pkey on t at the end of run 1"
        );
        assert_eq!(
            story(&parts[..1]),
            parts[0].0.clone() + " at the start of every run and at the end of run 4"
        );
        assert_eq!(story(&[("x".into(), when(&[1], &[1], &[1]))]), "x");
    }

    #[test]
    fn plans_deduplicated_by_shape_with_when() {
        let mut r = fixture::results();
        let cells = cells::aggregate(&r);
        let plans = distinct_plans(&cells);
        assert_eq!(plans.len(), 2);
        assert_eq!(plans[0].cells.len(), 2);
        let labels = vec!["rc".to_string(), "ser".to_string()];
        assert_eq!(plans[0].who(&labels), "all cells");
        // Run 1 (rc) ends with another plan of `update account`.
        let start = r.runs[0].server.plans[0].plan.clone();
        r.runs[0].server.plan_changes = vec![crate::model::PlanChange {
            label: "update account".into(),
            sql: r.runs[0].server.plans[0].sql.clone(),
            start,
            end: "Update on pgbench_accounts\n  ->  Seq Scan on pgbench_accounts".into(),
        }];
        let cells = cells::aggregate(&r);
        let plans = distinct_plans(&cells);
        assert_eq!(plans.len(), 3);
        assert_eq!(
            plans.iter().map(|g| g.label).collect::<Vec<_>>(),
            ["update account", "update account", "select balance"]
        );
        assert_eq!(
            plans[0].who(&labels),
            "rc at the start of every run and at the end of run 3; ser"
        );
        assert_eq!(plans[1].who(&labels), "rc at the end of run 1");
    }
}
