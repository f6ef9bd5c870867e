//! What a failover costs (issue #50): per cell whose runs each lived
//! through a failover (`--fault failover@T`), the acknowledged commits
//! lost per failover (the workload's ledger against the data on the new
//! primary: TPC-B's `history-matches-commits`, list-append's
//! `acknowledged-appends-kept`), as a rate per failover
//! with its exact Poisson interval (Garwood 1936, [`crate::stats::rate`]), the
//! clients' write unavailability (from the kill to their first commit
//! on the new primary) and the manager's promotion time, each as a mean
//! with its 95 % t-interval over the failovers; and the writes two
//! primaries accepted (split brain), counted from which node acknowledged
//! each commit (`FailoverOutcome::split_brain_writes`).
//!
//! Lost commits per failover are counts of a rare event per exposure,
//! like anomalies per transaction; Poisson is a model (a failover loses
//! the commits in flight to the standby, which can come in bunches), and
//! the range over the runs is shown beside it.

use crate::model::{FaultKind, RunRecord};
use crate::report::analysis::model::ReportModel;
use crate::stats::Summary;
use crate::stats::rate::Rate;

/// One cell's failovers.
#[derive(Debug, Clone)]
pub struct CellFailovers {
    pub cell: usize,
    /// Failovers the cell's complete runs went through (one per
    /// injected failover whose manager promoted a node).
    pub failovers: u64,
    /// Failovers that did not promote a node within the limit.
    pub not_promoted: u64,
    /// Acknowledged commits lost, summed over the runs that counted them,
    /// and per failover ([`Rate`]: rate, exact 95 % interval); `None`
    /// when no check of the workload counts lost commits.
    pub lost: Option<Rate>,
    /// The fewest and most lost in one run.
    pub lost_range: Option<(u64, u64)>,
    /// Write unavailability per failover, s.
    pub unavailable_s: Option<Summary>,
    /// Failovers after which nothing committed again in the window.
    pub never_back: u64,
    /// The manager's promotion time per failover, s.
    pub promoted_s: Option<Summary>,
    /// Writes accepted by two primaries, summed over the failovers that
    /// measured them, and how many did; `None` when none did.
    pub split_brain: Option<(u64, u64)>,
}

/// The lost commits a run's checks counted, summed; `None` when none
/// counts them.
pub fn lost_commits(r: &RunRecord) -> Option<u64> {
    let counted: Vec<u64> = r.invariants.iter().filter_map(|i| i.lost_commits).collect();
    (!counted.is_empty()).then(|| counted.iter().sum())
}

/// Every cell with failovers, in the cells' order.
pub fn failovers(m: &ReportModel) -> Vec<CellFailovers> {
    let mut out = Vec::new();
    for (i, c) in m.cells.iter().enumerate() {
        let mut promoted = 0u64;
        let mut not_promoted = 0u64;
        let mut lost = Vec::new();
        let mut unavailable = Vec::new();
        let mut never_back = 0u64;
        let mut promotion = Vec::new();
        let mut split_brain: Option<(u64, u64)> = None;
        for r in c.complete_runs() {
            let Some(f) = &r.faults else { continue };
            let outcomes: Vec<_> = f
                .injected
                .iter()
                .filter(|x| x.kind == FaultKind::Failover)
                .filter_map(|x| x.failover.as_ref())
                .collect();
            if outcomes.is_empty() {
                continue;
            }
            for o in &outcomes {
                match (&o.promoted, o.promoted_s) {
                    (Some(_), Some(s)) => {
                        promoted += 1;
                        promotion.push(s);
                    }
                    _ => not_promoted += 1,
                }
                match o.unavailable_s {
                    Some(s) => unavailable.push(s),
                    None => never_back += 1,
                }
                if let Some(w) = o.split_brain_writes {
                    let (sum, n) = split_brain.get_or_insert((0, 0));
                    *sum += w;
                    *n += 1;
                }
            }
            if let Some(l) = lost_commits(r) {
                lost.push(l);
            }
        }
        if promoted + not_promoted == 0 {
            continue;
        }
        out.push(CellFailovers {
            cell: i,
            failovers: promoted,
            not_promoted,
            lost: (!lost.is_empty())
                .then(|| Rate::of(lost.iter().sum(), lost.len() as u64))
                .flatten(),
            lost_range: lost.iter().min().copied().zip(lost.iter().max().copied()),
            unavailable_s: Summary::of(&unavailable),
            never_back,
            promoted_s: Summary::of(&promotion),
            split_brain,
        });
    }
    out
}

/// `3.2 acknowledged commits lost per failover (16 in 5; 95 % CI 1.8 to
/// 5.2, exact Poisson; 1 to 6 per run)`, or `none lost in 5 failovers (95
/// % upper bound 0.74 per failover)`.
pub fn lost_text(f: &CellFailovers) -> Option<String> {
    let r = f.lost?;
    if r.events == 0 {
        return Some(format!(
            "no acknowledged commit lost in {} failover(s) (95 % upper bound {:.2} per failover, exact Poisson)",
            r.exposure, r.high
        ));
    }
    let range = f
        .lost_range
        .map(|(lo, hi)| format!("; {lo} to {hi} per run"))
        .unwrap_or_default();
    Some(format!(
        "{:.1} acknowledged commits lost per failover ({} in {}; 95 % CI {:.1} to {:.1}, exact Poisson{range})",
        r.rate, r.events, r.exposure, r.low, r.high
    ))
}

/// `writes unavailable 5.3 s ± 0.4 s per failover (95 % CI, n = 5)`.
pub fn unavailable_text(f: &CellFailovers) -> Option<String> {
    let s = f.unavailable_s.as_ref()?;
    let ci = if s.n >= 2 {
        format!(" ± {:.1} s (95 % CI, n = {})", s.ci95, s.n)
    } else {
        " (one failover)".to_string()
    };
    let mut text = format!("writes unavailable {:.1} s{ci} per failover", s.mean);
    if f.never_back > 0 {
        text.push_str(&format!(
            ", and {} failover(s) with no commit again before the window ended",
            f.never_back
        ));
    }
    Some(text)
}

/// `2 writes accepted by two primaries (split brain) in 5 failovers`
/// when any was; `None` when none was or none was measured.
pub fn split_brain_text(f: &CellFailovers) -> Option<String> {
    let (writes, n) = f.split_brain.filter(|(w, _)| *w > 0)?;
    Some(format!(
        "{writes} write(s) accepted by two primaries (split brain) in {n} failover(s)"
    ))
}

/// What a cell's headline adds about its failovers (issue #50: the cost
/// and the loss side by side): writes two primaries accepted, first, if
/// any; the lost commits per failover with their interval; and the write
/// unavailability; empty without failovers.
pub fn headline_parts(m: &ReportModel, cell: usize) -> Vec<String> {
    let Some(f) = failovers(m).into_iter().find(|f| f.cell == cell) else {
        return Vec::new();
    };
    let mut out: Vec<String> = split_brain_text(&f).into_iter().collect();
    if let Some(r) = f.lost {
        out.push(if r.events == 0 {
            format!(
                "0 acknowledged commits lost in {} failover(s) (≤ {:.2} per failover, 95 %)",
                r.exposure, r.high
            )
        } else {
            format!(
                "{:.1} acknowledged commits lost per failover [{:.1}, {:.1}] over {}",
                r.rate, r.low, r.high, r.exposure
            )
        });
    }
    if let Some(s) = &f.unavailable_s {
        out.push(format!("writes unavailable {:.1} s per failover", s.mean));
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::model::{FailoverOutcome, InjectedFault, RunFaults, fixture};

    /// The fixture's complete runs each with a failover: rc cells lost 3
    /// and 5 commits and were unavailable 5 and 6 s; ser cells lost none.
    pub(crate) fn failed_over() -> crate::store::Results {
        let mut r = fixture::results();
        for run in &mut r.runs {
            let rc = run.cell.isolation == crate::model::Isolation::ReadCommitted;
            let k = (run.repetition as usize + 1) % 2;
            let (lost, down) = if rc {
                ([3, 5][k], 5.0 + k as f64)
            } else {
                (0, 4.0)
            };
            run.invariants[1].lost_commits = Some(lost);
            run.faults = Some(RunFaults {
                connections_lost: 4,
                injected: vec![InjectedFault {
                    kind: FaultKind::Failover,
                    t_s: 2.0,
                    detail: "SIGKILL to node n1".into(),
                    failover: Some(FailoverOutcome {
                        killed: "n1".into(),
                        promoted: Some("n2".into()),
                        promoted_s: Some(down - 0.5),
                        unavailable_s: Some(down),
                        split_brain_writes: Some(0),
                    }),
                }],
                ..Default::default()
            });
        }
        r
    }

    #[test]
    fn lost_commits_and_unavailability_per_failover_with_intervals() {
        let r = failed_over();
        let m = ReportModel::new(&r);
        let f = failovers(&m);
        assert_eq!(f.len(), 2, "{f:?}");
        let rc = &f[0];
        assert_eq!(rc.failovers, 2);
        let lost = rc.lost.unwrap();
        assert_eq!((lost.events, lost.exposure), (8, 2));
        assert_eq!(lost.rate, 4.0);
        let text = lost_text(rc).unwrap();
        assert!(
            text.starts_with("4.0 acknowledged commits lost per failover (8 in 2; 95 % CI")
                && text.contains("3 to 5 per run"),
            "{text}"
        );
        let u = unavailable_text(rc).unwrap();
        assert!(u.starts_with("writes unavailable 5.5 s ±"), "{u}");
        let ser = &f[1];
        let text = lost_text(ser).unwrap();
        assert!(
            text.starts_with("no acknowledged commit lost in 2 failover(s) (95 % upper bound 1.84"),
            "{text}"
        );
        assert_eq!(rc.split_brain, Some((0, 2)));
        assert_eq!(split_brain_text(rc), None);
        // Without failovers: nothing.
        assert!(failovers(&ReportModel::new(&fixture::results())).is_empty());
    }

    #[test]
    fn writes_to_two_primaries_lead_the_headline() {
        let mut r = failed_over();
        let mut first_rc = true;
        for run in &mut r.runs {
            let f = run.faults.as_mut().unwrap().injected[0]
                .failover
                .as_mut()
                .unwrap();
            let rc = run.cell.isolation == crate::model::Isolation::ReadCommitted;
            f.split_brain_writes = match (rc, first_rc) {
                (true, true) => Some(3),
                (true, false) => None, // not measured
                (false, _) => Some(0),
            };
            first_rc &= !rc;
        }
        let m = ReportModel::new(&r);
        let f = failovers(&m);
        assert_eq!(f[0].split_brain, Some((3, 1)));
        let parts = headline_parts(&m, f[0].cell);
        assert_eq!(
            parts[0], "3 write(s) accepted by two primaries (split brain) in 1 failover(s)",
            "{parts:?}"
        );
        assert_eq!(f[1].split_brain, Some((0, 2)));
        assert!(!headline_parts(&m, f[1].cell)[0].contains("two primaries"));
    }
}
