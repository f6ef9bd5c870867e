//! `--precision PCT`: after the first stage (the planned repetitions, at
//! least 5), one more interleaved round of every cell whose TPS has not
//! reached the target by the sequential rule of `stats::sequential`
//! (Chow and Robbins' fixed-width procedure), until every cell has or has
//! `max_repeat` complete runs. A round runs the cells in their order, so
//! that repetitions stay interleaved as in the planned ones.

use crate::model::Precision;
use crate::report::analysis::cells::counted;
use crate::stats::{Summary, sequential};
use crate::store::{Cell, Results};

use super::schedule::ScheduledRun;

/// The next round: one run of every cell of `cells` whose complete runs in
/// `results` have not reached `p.target_pct` and number fewer than
/// `p.max_repeat`; empty when none is left. A cell's repetition number
/// continues after its highest so far (interrupted runs included, so a
/// number is never used twice).
pub(super) fn next_round(
    cells: &[Cell],
    results: &Results,
    p: Precision,
    exclude_faulted: bool,
) -> Vec<ScheduledRun> {
    let mut round = Vec::new();
    for (i, cell) in cells.iter().enumerate() {
        let runs = results.runs.iter().filter(|r| r.cell == *cell);
        let tps: Vec<f64> = runs
            .clone()
            .filter(|r| counted(r, exclude_faulted))
            .map(|r| r.tps)
            .collect();
        let last = runs.map(|r| r.repetition).max().unwrap_or(0);
        let reached =
            Summary::of(&tps).is_some_and(|s| sequential::reached(&s, p.target_pct / 100.0));
        if !reached && (tps.len() as u32) < p.max_repeat && last < 10 * p.max_repeat {
            round.push(ScheduledRun {
                cell: cell.clone(),
                cell_index: i,
                repetition: last + 1,
            });
        }
    }
    round
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Isolation;
    use crate::model::fixture;

    fn cells(r: &Results) -> Vec<Cell> {
        let mut out: Vec<Cell> = Vec::new();
        for run in &r.runs {
            if !out.contains(&run.cell) {
                out.push(run.cell.clone());
            }
        }
        out
    }

    /// `r` with `n` complete runs of `cell` at `tps` values.
    fn with_runs(mut r: Results, iso: Isolation, tps: &[f64]) -> Results {
        let proto = r
            .runs
            .iter()
            .find(|x| x.cell.isolation == iso)
            .unwrap()
            .clone();
        r.runs.retain(|x| x.cell.isolation != iso);
        for (i, t) in tps.iter().enumerate() {
            let mut run = proto.clone();
            run.repetition = i as u32 + 1;
            run.complete = true;
            run.tps = *t;
            r.runs.push(run);
        }
        r
    }

    #[test]
    fn rounds_go_on_until_the_target_or_the_maximum() {
        let (rc, ser) = (Isolation::ReadCommitted, Isolation::Serializable);
        let p = Precision {
            target_pct: 2.0,
            max_repeat: 8,
        };
        // rc: five runs within ±0.1 %: reached. ser: noisy (CV 10 %).
        let r = with_runs(fixture::results(), rc, &[100.0, 100.1, 99.9, 100.0, 100.0]);
        let r = with_runs(r, ser, &[140.0, 160.0, 150.0, 135.0, 165.0]);
        let c = cells(&r);
        let round = next_round(&c, &r, p, false);
        assert_eq!(round.len(), 1);
        assert_eq!((round[0].cell.isolation, round[0].repetition), (ser, 6));
        // At the maximum, no more rounds, reached or not.
        let r = with_runs(
            r,
            ser,
            &[140.0, 160.0, 150.0, 135.0, 165.0, 140.0, 160.0, 150.0],
        );
        assert!(next_round(&c, &r, p, false).is_empty());
        // Four runs are never enough (the first stage is 5).
        let r = with_runs(r, rc, &[100.0, 100.0, 100.0, 100.1]);
        let round = next_round(&c, &r, p, false);
        assert_eq!((round.len(), round[0].repetition), (1, 5));
    }
}
