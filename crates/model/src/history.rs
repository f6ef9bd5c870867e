//! The history check of pgbench scripts over pgbench's tables: how many
//! rows `pgbench_history` gained in a run against how many the committed
//! transactions inserted. The check writes its numbers into the invariant's
//! `detail` with [`HistoryCount::detail`], and the report's findings read
//! them back with [`HistoryCount::parse`]: one format, defined here, so the
//! stored results need no extra columns.

use super::{InvariantResult, Lifetime};

/// The name of the check (the same as the built-in `tpcb` workload's).
pub const HISTORY_CHECK: &str = "history-matches-commits";

/// A run's effective throughput, tx/s: of the `tps` it reported (commits
/// per second of the measured window), the share whose work is in the
/// database. The history check ([`HISTORY_CHECK`]) counts over the
/// clients' whole life ([`Lifetime`]: warm-up and drain included) the
/// committed transactions whose `pgbench_history` row is missing (its
/// `lost_commits`: a PL/pgSQL function that swallowed a serialization
/// failure, or an asynchronous commit lost in a crash); the window is
/// taken to lose the same share: `tps · (1 - lost / lifetime.committed)`.
/// `None` when no history check applies (another workload, scripts over
/// their own tables or inserting no history row) or it could not count.
pub fn effective_tps(tps: f64, lifetime: &Lifetime, invariants: &[InvariantResult]) -> Option<f64> {
    let lost = invariants
        .iter()
        .find(|i| i.name == HISTORY_CHECK)?
        .lost_commits?;
    if lifetime.committed == 0 {
        return Some(tps);
    }
    let kept = lifetime.committed.saturating_sub(lost) as f64 / lifetime.committed as f64;
    Some(tps * kept)
}

/// Rows `pgbench_history` gained during a run and the range the committed
/// transactions account for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryCount {
    /// Rows gained: count after the run minus count in the loaded data.
    pub rows: u64,
    /// Rows the committed transactions must have inserted: one per
    /// committed transaction of each script that inserts one
    /// unconditionally (per `INSERT INTO pgbench_history` command or call
    /// of a function that inserts into it).
    pub expected_min: u64,
    /// At most this many: the minimum plus the inserts under `\if` and the
    /// transactions whose COMMIT outcome is unknown.
    pub expected_max: u64,
}

impl HistoryCount {
    /// Whether the rows gained are in the expected range.
    pub fn ok(&self) -> bool {
        (self.expected_min..=self.expected_max).contains(&self.rows)
    }

    /// Rows outside the expected range: missing rows (committed
    /// transactions whose history row is not there) or surplus rows.
    pub fn violations(&self) -> u64 {
        if self.rows < self.expected_min {
            self.expected_min - self.rows
        } else {
            self.rows.saturating_sub(self.expected_max)
        }
    }

    /// The invariant's detail: the numbers first (what [`Self::parse`]
    /// reads), then `scripts`, which says where the expectation comes from.
    pub fn detail(&self, scripts: &str) -> String {
        let expected = if self.expected_min == self.expected_max {
            self.expected_min.to_string()
        } else {
            format!("{}..{}", self.expected_min, self.expected_max)
        };
        format!(
            "pgbench_history gained {} rows, expected {expected}: {scripts}",
            self.rows
        )
    }

    /// The numbers of a detail written by [`Self::detail`]; `None` for any
    /// other text (the built-in `tpcb` workload's check words its own).
    pub fn parse(detail: &str) -> Option<Self> {
        let rest = detail.strip_prefix("pgbench_history gained ")?;
        let (rows, rest) = rest.split_once(" rows, expected ")?;
        let (expected, _) = rest.split_once(':')?;
        let (min, max) = match expected.split_once("..") {
            Some((a, b)) => (a.parse().ok()?, b.parse().ok()?),
            None => {
                let n = expected.parse().ok()?;
                (n, n)
            }
        };
        Some(HistoryCount {
            rows: rows.parse().ok()?,
            expected_min: min,
            expected_max: max,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn effective_tps_is_the_share_of_commits_in_the_database() {
        let lifetime = Lifetime {
            committed: 1000,
            unknown_outcome: 0,
        };
        let mut history = InvariantResult::count(HISTORY_CHECK, 750, "x".into());
        assert_eq!(effective_tps(90.0, &lifetime, &[history.clone()]), None);
        history.lost_commits = Some(750);
        let other = InvariantResult::check("accounts-match-history", true, "y".into());
        assert_eq!(
            effective_tps(90.0, &lifetime, &[other.clone(), history.clone()]),
            Some(22.5)
        );
        history.lost_commits = Some(0);
        assert_eq!(effective_tps(90.0, &lifetime, &[history]), Some(90.0));
        assert_eq!(effective_tps(90.0, &lifetime, &[other]), None);
    }

    #[test]
    fn detail_round_trips_and_counts_violations() {
        let h = HistoryCount {
            rows: 5550,
            expected_min: 27150,
            expected_max: 27150,
        };
        let d = h.detail("one per committed transaction of swallow.sql");
        assert_eq!(
            d,
            "pgbench_history gained 5550 rows, expected 27150: one per committed transaction of swallow.sql"
        );
        assert_eq!(HistoryCount::parse(&d), Some(h));
        assert!(!h.ok());
        assert_eq!(h.violations(), 21600);
        let r = HistoryCount {
            rows: 12,
            expected_min: 10,
            expected_max: 11,
        };
        assert_eq!(HistoryCount::parse(&r.detail("x: y")), Some(r));
        assert_eq!(r.violations(), 1);
        assert!(HistoryCount::parse("count(pgbench_history)=1 client-counted commits=1").is_none());
    }
}
