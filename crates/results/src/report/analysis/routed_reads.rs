//! Reads on standbys (issue #50): per cell whose runs routed their
//! read-only transactions (`--read-from standby|any`), the standby reads
//! the read-your-writes check examined, how many began before the
//! standby replayed their client's last commit, how stale they were, and
//! the routed reads that went back in time (monotonic reads; Terry et
//! al., "Session Guarantees for Weakly Consistent Replicated Data", PDIS
//! 1994). The engine's checks ([`crate::model::READ_YOUR_WRITES`],
//! [`crate::model::MONOTONIC_READS`]) give each run's counts and the
//! percentiles of its staleness.
//!
//! Counted over every run with the checks, complete or not, as the
//! guarantees are ([`super::guarantee`]): a read that was behind is as
//! real in an interrupted run. Percentiles do not add up over runs: a
//! cell's p50 and p99 are the medians of its runs' (its one run's with
//! one run), its maximum the largest.

use crate::model::{MONOTONIC_READS, READ_FROM, READ_YOUR_WRITES, Spread};
use crate::report::analysis::cells::CellSummary;

/// One cell's routed reads.
#[derive(Debug, Clone, PartialEq)]
pub struct RoutedReads {
    /// Index into the model's cells.
    pub cell: usize,
    /// The cell's route when `read_from` is a factor (`standby`, `any`);
    /// `None` when the study had one route, which results.json does not
    /// name.
    pub route: Option<String>,
    /// Runs with the checks.
    pub runs: usize,
    /// Standby reads after a commit of their client: the reads the
    /// read-your-writes check examined.
    pub examined: u64,
    /// Of those, the reads that began before their standby replayed the
    /// client's last commit: read-your-writes violations.
    pub behind: u64,
    /// Whether `behind` is an upper bound: with several clients, WAL
    /// another one wrote between a COMMIT and its position query counts
    /// as not replayed (the engine's check says so in its detail).
    pub at_most: bool,
    /// Staleness in ms (from the client's COMMIT returning to the read's
    /// start; 0 for a read that was caught up) and in bytes of WAL
    /// behind the commit: medians of the runs' p50 and p99, largest
    /// maximum; `None` when no run examined a read.
    pub ms: Option<Spread>,
    pub bytes: Option<Spread>,
    /// Routed reads the monotonic-reads check examined (on a standby, and
    /// under `any` on the primary too), and those that began at an older
    /// WAL position than an earlier read of their client.
    pub routed: u64,
    pub went_back: u64,
}

/// The cells whose runs routed reads, in the cells' order.
pub fn tally(cells: &[CellSummary]) -> Vec<RoutedReads> {
    let mut out = Vec::new();
    for (i, c) in cells.iter().enumerate() {
        let mut r = RoutedReads {
            cell: i,
            route: c.cell.settings.get(READ_FROM).cloned(),
            runs: 0,
            examined: 0,
            behind: 0,
            at_most: c.cell.clients > 1,
            ms: None,
            bytes: None,
            routed: 0,
            went_back: 0,
        };
        let (mut ms, mut bytes) = (Vec::new(), Vec::new());
        for run in &c.runs {
            let mut checked = false;
            for inv in &run.invariants {
                if inv.name == READ_YOUR_WRITES {
                    checked = true;
                    r.examined += inv.checked.unwrap_or(0);
                    r.behind += inv.violations;
                    if let Some(s) = inv.staleness.filter(|s| s.reads > 0) {
                        ms.push(s.ms);
                        bytes.push(s.bytes);
                    }
                } else if inv.name == MONOTONIC_READS {
                    checked = true;
                    r.routed += inv.checked.unwrap_or(0);
                    r.went_back += inv.violations;
                }
            }
            r.runs += usize::from(checked);
        }
        if r.runs == 0 {
            continue;
        }
        r.ms = over_runs(&ms);
        r.bytes = over_runs(&bytes);
        out.push(r);
    }
    out
}

/// The runs' spreads as one: the medians of their p50, p90 and p99, the
/// largest maximum; `None` for no run.
fn over_runs(runs: &[Spread]) -> Option<Spread> {
    let median = |f: fn(&Spread) -> f64| {
        let mut v: Vec<f64> = runs.iter().map(f).collect();
        v.sort_by(f64::total_cmp);
        let k = v.len() / 2;
        if v.len() % 2 == 1 {
            v[k]
        } else {
            (v[k - 1] + v[k]) / 2.0
        }
    };
    (!runs.is_empty()).then(|| Spread {
        p50: median(|s| s.p50),
        p90: median(|s| s.p90),
        p99: median(|s| s.p99),
        max: runs.iter().map(|s| s.max).fold(f64::NEG_INFINITY, f64::max),
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::model::{InvariantResult, Staleness, fixture};
    use crate::report::analysis::model::ReportModel;

    /// The two checks of one run's routed reads: `behind` of `examined`
    /// standby reads, with p50 and p99 ms (and 1,000 times as many bytes),
    /// `went_back` of `routed` routed reads.
    pub(crate) fn checks(
        examined: u64,
        behind: u64,
        (p50, p99): (f64, f64),
        routed: u64,
        went_back: u64,
    ) -> Vec<InvariantResult> {
        let spread = |k: f64| Spread {
            p50: p50 * k,
            p90: p99 * k,
            p99: p99 * k,
            max: 2.0 * p99 * k,
        };
        let mut ryw = InvariantResult::count(READ_YOUR_WRITES, behind, String::new());
        ryw.checked = Some(examined);
        ryw.staleness = (examined > 0).then(|| Staleness {
            reads: examined,
            ms: spread(1.0),
            bytes: spread(1000.0),
        });
        let mut mr = InvariantResult::count(MONOTONIC_READS, went_back, String::new());
        mr.checked = Some(routed);
        vec![ryw, mr]
    }

    /// The fixture's rc runs routed their reads (read_from=standby): 10
    /// of 100 reads behind with p50 1 ms and p99 4 ms in one repetition,
    /// 30 of 100 with p50 3 ms and p99 8 ms in the other; ser runs read
    /// on the primary.
    #[test]
    fn counts_add_up_and_percentiles_are_the_runs_medians() {
        let mut r = fixture::results();
        for run in &mut r.runs {
            if run.cell.isolation == crate::model::Isolation::ReadCommitted {
                let k = run.repetition % 2;
                let (behind, p) = if k == 0 {
                    (10, (1.0, 4.0))
                } else {
                    (30, (3.0, 8.0))
                };
                run.invariants.extend(checks(100, behind, p, 150, k as u64));
            }
        }
        let m = ReportModel::new(&r);
        let rc: Vec<_> = m.routed_reads.iter().collect();
        assert_eq!(rc.len(), 1, "{rc:?}");
        let rc = rc[0];
        assert_eq!(m.cells[rc.cell].cell.isolation.short(), "rc");
        assert_eq!(rc.runs, 2);
        assert_eq!(rc.examined, 200);
        assert_eq!(rc.routed, 300);
        assert_eq!(rc.route, None);
        assert_eq!(rc.behind, 40);
        assert_eq!(rc.went_back, 1);
        // 4 clients: the count of reads behind is an upper bound.
        assert!(rc.at_most);
        // Two runs: the medians are the means of the two.
        let ms = rc.ms.unwrap();
        assert_eq!((ms.p50, ms.p99), (2.0, 6.0), "{ms:?}");
        assert_eq!(ms.max, 16.0);
        assert_eq!(rc.bytes.unwrap().max, 16_000.0);
        assert_eq!(over_runs(&[]), None);
        let one = Spread {
            p50: 1.0,
            p90: 2.0,
            p99: 3.0,
            max: 4.0,
        };
        let s = over_runs(&[one, Spread { p50: 5.0, ..one }, Spread { p50: 2.0, ..one }]);
        assert_eq!(s.unwrap().p50, 2.0);
        // Without routed reads: none.
        assert!(
            ReportModel::new(&fixture::results())
                .routed_reads
                .is_empty()
        );
    }
}
