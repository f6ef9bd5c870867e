//! Guarantees: what each cell's isolation level promised
//! ([`crate::model::forbids`]) against what its runs' history checks found,
//! as rates per committed transaction with exact intervals
//! ([`crate::stats::rate`]), and the factor values under which a violation is
//! significantly more or less frequent (narrowing a hunt).
//!
//! Counted over every run with a history check, complete or not: a
//! violation an interrupted run found is as real as any. A class's cases
//! are the checker's (one per strongly connected component holding a
//! cycle of the class, see the checker); the exposure is the committed
//! transactions it examined.

use crate::model::{Cycle, Isolation, forbids, promise};
use crate::report::analysis::cells::CellSummary;
use crate::report::analysis::factors::Factors;
use crate::stats::rate::{Rate, RateComparison, compare_rates};

/// One anomaly class in one cell.
#[derive(Debug, Clone)]
pub struct ClassTally<'a> {
    pub class: &'static str,
    /// Whether the cell's level forbids the class: a case is a guarantee
    /// violation.
    pub forbidden: bool,
    /// Cases per committed transaction checked.
    pub rate: Rate,
    /// The runs (indexes) that found cases.
    pub runs: Vec<u32>,
    /// The cycles its runs showed: (run index, cycle).
    pub cycles: Vec<(u32, &'a Cycle)>,
    /// The first case in words (the checker's example, uncut).
    pub example: Option<&'a str>,
}

impl ClassTally<'_> {
    /// Whether this class broke the cell's promise.
    pub fn violated(&self) -> bool {
        self.forbidden && self.rate.events > 0
    }
}

/// A cell's level, its promise, and every class its history checks count.
#[derive(Debug, Clone)]
pub struct CellGuarantee<'a> {
    /// Index into the model's cells.
    pub cell: usize,
    pub level: Isolation,
    /// Committed transactions the history checks examined, over the runs.
    pub checked: u64,
    /// Runs with a history check.
    pub runs: usize,
    /// One per class the checker counted, in the checker's order.
    pub classes: Vec<ClassTally<'a>>,
}

impl<'a> CellGuarantee<'a> {
    /// The classes that broke the promise.
    pub fn violations(&self) -> impl Iterator<Item = &ClassTally<'a>> {
        self.classes.iter().filter(|c| c.violated())
    }

    /// The classes the level admits that the checks found.
    pub fn admitted_found(&self) -> impl Iterator<Item = &ClassTally<'a>> {
        self.classes
            .iter()
            .filter(|c| !c.forbidden && c.rate.events > 0)
    }

    /// Every forbidden class together: all cases of a violation, per
    /// committed transaction.
    pub fn violation_rate(&self) -> Rate {
        let events = self
            .classes
            .iter()
            .filter(|c| c.forbidden)
            .map(|c| c.rate.events)
            .sum();
        Rate::of(events, self.checked).expect("a tallied cell checked something")
    }

    pub fn promise(&self) -> &'static str {
        promise(self.level)
    }
}

/// The cells with a history check, in the model's order.
pub fn tally<'a>(cells: &[CellSummary<'a>]) -> Vec<CellGuarantee<'a>> {
    let mut out = Vec::new();
    for (i, c) in cells.iter().enumerate() {
        let level = c.cell.isolation;
        let mut classes: Vec<ClassTally<'a>> = Vec::new();
        let (mut checked, mut runs) = (0u64, 0usize);
        for run in &c.runs {
            let mut run_checked = None;
            for inv in &run.invariants {
                let Some(class) = crate::model::ANOMALY_CLASSES
                    .iter()
                    .find(|n| **n == inv.name)
                else {
                    continue;
                };
                // Results stored before the checker gave its exposure:
                // the run's committed transactions.
                run_checked = inv.checked.or(Some(run.lifetime.committed));
                let t = match classes.iter_mut().find(|t| t.class == *class) {
                    Some(t) => t,
                    None => {
                        classes.push(ClassTally {
                            class,
                            forbidden: forbids(level, class),
                            rate: Rate::of(0, 1).expect("exposure 1"),
                            runs: Vec::new(),
                            cycles: Vec::new(),
                            example: None,
                        });
                        classes.last_mut().expect("just pushed")
                    }
                };
                t.rate.events += inv.violations;
                if inv.violations > 0 {
                    t.runs.push(run.index);
                    if t.example.is_none() {
                        t.example = Some(inv.detail.as_str());
                    }
                }
                t.cycles.extend(inv.cycles.iter().map(|cy| (run.index, cy)));
            }
            if let Some(n) = run_checked {
                checked += n;
                runs += 1;
            }
        }
        if runs == 0 {
            continue;
        }
        for t in &mut classes {
            t.rate = Rate::of(t.rate.events, checked.max(1)).expect("positive exposure");
        }
        classes.sort_by_key(|t| {
            crate::model::ANOMALY_CLASSES
                .iter()
                .position(|n| *n == t.class)
        });
        out.push(CellGuarantee {
            cell: i,
            level,
            checked,
            runs,
            classes,
        });
    }
    out
}

/// A factor's values compared for one class at one level: each value's
/// rate pooled over the cells that have it, the first value the
/// reference.
#[derive(Debug, Clone)]
pub struct Narrowing {
    /// The factor's header, e.g. `key-order` or `pg_bin`.
    pub factor: String,
    pub class: &'static str,
    pub level: Isolation,
    /// (value, pooled rate), in the cells' order of first appearance.
    pub values: Vec<(String, Rate)>,
    /// Each value after the first against the first.
    pub tests: Vec<RateComparison>,
}

/// For each class that broke a promise somewhere and each varying factor
/// (isolation aside): the factor's values compared among the cells whose
/// level forbids the class. A hunt's narrowing study reads these: which
/// value makes a violation more or less frequent.
pub fn narrowing(g: &[CellGuarantee], factors: &Factors) -> Vec<Narrowing> {
    let mut out = Vec::new();
    let violated: Vec<(&'static str, Isolation)> = {
        let mut v: Vec<(&'static str, Isolation)> = Vec::new();
        for c in g {
            for t in c.violations() {
                if !v.contains(&(t.class, c.level)) {
                    v.push((t.class, c.level));
                }
            }
        }
        v
    };
    for (class, level) in violated {
        // Column 0 is the isolation level: the comparison is within one.
        for j in 1..factors.headers.len() {
            if !factors.varying[j] {
                continue;
            }
            let mut values: Vec<(String, u64, u64)> = Vec::new();
            for c in g.iter().filter(|c| c.level == level) {
                let Some(t) = c.classes.iter().find(|t| t.class == class) else {
                    continue;
                };
                let v = &factors.values[c.cell][j];
                match values.iter_mut().find(|(x, _, _)| x == v) {
                    Some((_, k, n)) => {
                        *k += t.rate.events;
                        *n += c.checked;
                    }
                    None => values.push((v.clone(), t.rate.events, c.checked)),
                }
            }
            if values.len() < 2 {
                continue;
            }
            let values: Vec<(String, Rate)> = values
                .into_iter()
                .filter_map(|(v, k, n)| Some((v, Rate::of(k, n)?)))
                .collect();
            let tests = values[1..]
                .iter()
                .map(|(_, r)| compare_rates(r, &values[0].1))
                .collect();
            out.push(Narrowing {
                factor: factors.headers[j].clone(),
                class,
                level,
                values,
                tests,
            });
        }
    }
    out
}

/// `7.2 per million (95 % CI 0.18-40)`, or `≤ 1.8 per million (95 %)`
/// with no case.
pub fn rate_text(r: &Rate) -> String {
    let (rate, low, high) = r.per_million();
    if r.events == 0 {
        format!("≤ {} per million (95 %)", sig(high))
    } else {
        format!(
            "{} per million (95 % CI {}-{})",
            sig(rate),
            sig(low),
            sig(high)
        )
    }
}

/// Two significant figures, at least one decimal below 10: `7.2`, `0.18`,
/// `40`, `1,400`.
pub fn sig(x: f64) -> String {
    if x == 0.0 {
        return "0".into();
    }
    let digits = (1 - x.abs().log10().floor() as i32).max(0) as usize;
    let rounded = format!("{x:.digits$}");
    if digits == 0 && x >= 1000.0 {
        let n = x.round() as u64;
        let mag = 10u64.pow((x.log10().floor() as u32).saturating_sub(1));
        return crate::report::format::grouped((n / mag) * mag);
    }
    rounded
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fixture;
    use crate::report::analysis::model::ReportModel;

    #[test]
    fn significant_figures() {
        assert_eq!(sig(7.216), "7.2");
        assert_eq!(sig(0.1827), "0.18");
        assert_eq!(sig(40.2), "40");
        assert_eq!(sig(1.7566), "1.8");
        assert_eq!(sig(1437.0), "1,400");
        assert_eq!(sig(0.0), "0");
    }

    /// The fixture's swallowed-history variant has list-append results at
    /// rc and ser; ser's G2-item is a violation, rc's is not.
    #[test]
    fn a_forbidden_class_is_a_violation_with_its_rate() {
        let r = fixture::guarantee_violated();
        let m = ReportModel::new(&r);
        let g = tally(&m.cells);
        assert_eq!(g.len(), 2, "{g:?}");
        let ser = g
            .iter()
            .find(|c| c.level == Isolation::Serializable)
            .unwrap();
        let v: Vec<_> = ser.violations().collect();
        assert_eq!(v.len(), 1);
        assert_eq!((v[0].class, v[0].rate.events), ("G2-item", 1));
        assert_eq!(ser.checked, 2 * 138_578);
        assert_eq!(v[0].cycles.len(), 1);
        let rc = g
            .iter()
            .find(|c| c.level == Isolation::ReadCommitted)
            .unwrap();
        assert_eq!(rc.violations().count(), 0);
        assert_eq!(rc.admitted_found().count(), 3);
        assert!(rate_text(&v[0].rate).starts_with("3.6 per million (95 % CI"));
    }
}
