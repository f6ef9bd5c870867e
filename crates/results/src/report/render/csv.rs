//! CSV exports for spreadsheets and scripts: one row per run
//! ([`runs`]) or per cell ([`cells()`]).
//!
//! Format: a header row, then one row per record; fields quoted as RFC 4180
//! says (a field holding a comma, a double quote or a line break is put in
//! double quotes, inner quotes doubled; written by the `csv` crate); lines
//! end in LF. Numbers are plain, unrounded decimals (`98`, `0.10625`), so
//! that nothing is lost; a figure that does not exist (no pool, one run,
//! no baseline) is an empty field. Units are in the column names.

use super::cell_row::{CellRow, csv_num};
use crate::report::analysis::model::ReportModel;
use crate::store::{Results, WaitSummary};

/// One row per run, in execution order. Columns: `run` (index),
/// `repetition`, every factor of [`crate::report::format::factor_headers`], `complete`
/// (`true`/`false`), `outlier` (`true` when the run's TPS is an outlier of
/// its cell by the modified z-score, see `cells::CellSummary::outliers`),
/// `tps` (tx/s), `effective_tps` (tx/s: committed transactions whose
/// work is in the database, empty when no history check applies),
/// `committed`, `retries`, `failed` (transactions),
/// `failure_pct` (%), `latency_mean_ms`, `latency_p50_ms`,
/// `latency_p95_ms`, `latency_p99_ms`, `pool_wait_mean_ms`,
/// `pool_wait_p99_ms`, `schedule_lag_mean_ms`, `schedule_lag_p99_ms`,
/// `skipped`, `late` (transactions), `anomalies` (invariant violations),
/// `server_version`, `client_cpu_us_per_tx` (isobench's CPU per commit,
/// µs), `host_busy_pct`, `host_steal_pct` (the host's CPU busy and stolen
/// over the window, % of all CPUs' time; empty when not measured).
pub fn runs(results: &Results) -> String {
    runs_of(&ReportModel::new(results))
}

/// [`runs`] from an aggregated model.
pub fn runs_of(m: &ReportModel) -> String {
    let (results, outliers) = (m.results, &m.outlier_runs);
    let mut header: Vec<String> = vec!["run".into(), "repetition".into()];
    header.extend(crate::report::format::factor_headers(results));
    header.extend(
        [
            "complete",
            "outlier",
            "tps",
            "effective_tps",
            "committed",
            "retries",
            "failed",
            "failure_pct",
            "latency_mean_ms",
            "latency_p50_ms",
            "latency_p95_ms",
            "latency_p99_ms",
            "pool_wait_mean_ms",
            "pool_wait_p99_ms",
            "schedule_lag_mean_ms",
            "schedule_lag_p99_ms",
            "skipped",
            "late",
            "anomalies",
            "server_version",
            "client_cpu_us_per_tx",
            "host_busy_pct",
            "host_steal_pct",
        ]
        .map(String::from),
    );
    let wait = |w: &Option<WaitSummary>| match w {
        Some(w) => [csv_num(w.mean), csv_num(w.p99)],
        None => [String::new(), String::new()],
    };
    let rows = results.runs.iter().map(|run| {
        let mut row = vec![run.index.to_string(), run.repetition.to_string()];
        row.extend(factors(results, &run.cell));
        row.extend([
            run.complete.to_string(),
            outliers.contains(&run.index).to_string(),
            csv_num(run.tps),
            opt(run.effective_tps),
            run.committed.to_string(),
            run.retries.to_string(),
            run.failed.values().sum::<u64>().to_string(),
            csv_num(run.failure_pct),
        ]);
        let l = run.reported_latency();
        row.extend([l.mean, l.p50, l.p95, l.p99].map(|v| v.map_or_else(String::new, csv_num)));
        row.extend(wait(&run.pool_wait_ms));
        row.extend(wait(&run.schedule_lag_ms));
        row.extend([
            run.skipped.to_string(),
            run.late.to_string(),
            run.anomalies.to_string(),
            run.server_version.clone(),
            csv_num(run.client_cpu_us_per_tx),
        ]);
        let host = run.host_cpu;
        row.extend(
            [host.map(|h| h.busy_pct), host.map(|h| h.steal_pct)]
                .map(|v| v.map_or_else(String::new, csv_num)),
        );
        row
    });
    write(header, rows)
}

/// One row per cell, in the order of `cells::aggregate`. Columns: every
/// factor, `n` (complete runs), `interrupted` (runs), `tps_mean`,
/// `tps_sd`, `tps_ci95` (half-width of the 95 % interval of the mean),
/// `tps_min`, `tps_max` (tx/s), `tps_cv` (ratio), `effective_tps_mean`,
/// `effective_tps_ci95` (tx/s: committed transactions whose work is in
/// the database; empty when no history check applies), `swallowed`
/// (transactions counted as committed whose work is not in the
/// database), `vs_baseline_pct` (% change of mean TPS: effective TPS
/// where the cell has one), `vs_baseline_pct_ci95_low`,
/// `vs_baseline_pct_ci95_high` (%), `p_value` (two-sided test of the log
/// ratio whose interval that is, `stats::ratio_test`),
/// `verdict` (`baseline`, `faster`, `slower`,
/// `no_significant_difference`, `not_enough_data` (too few runs: under 3
/// a side), or empty without a baseline cell), `tps_mde_pct` (the
/// smallest change detected with 80 % power at α = 0.05, %), `outlier_runs` (run indexes, space-separated),
/// `latency_p50_ms`, `latency_p95_ms`, `latency_p99_ms` (from the merged
/// histograms of the complete runs), `retries_per_commit` (ratio),
/// `failure_pct` (%), `anomalies` (violations over all runs; empty when
/// no check covers the cell: not checked), `checks` (the violations of
/// each check that covers the cell: `balances-consistent=0;
/// no-negative-balance=2`), `failure_reasons` (failed attempts, retried ones included, by SQLSTATE
/// and reason, most first: `40001 pivot, during commit attempt: 812;
/// 40001 concurrent update: 97; 40P01: 1`; see [`crate::report::analysis::reasons`]).
pub fn cells(results: &Results) -> String {
    cells_of(&ReportModel::new(results))
}

/// [`cells()`] from an aggregated model: [`CellRow::csv_record`] of
/// each cell.
pub fn cells_of(m: &ReportModel) -> String {
    let header = CellRow::csv_header(crate::report::format::factor_headers(m.results));
    let rows = m
        .cells
        .iter()
        .zip(&m.failure_reasons)
        .map(|(c, reasons)| CellRow::new(m.results, &m.cells, c, reasons).csv_record());
    write(header, rows)
}

/// A cell's factor values, with [`crate::report::format::NA`] as an empty field.
fn factors(results: &Results, cell: &crate::store::Cell) -> Vec<String> {
    crate::report::format::factor_values(results, cell)
        .into_iter()
        .map(|v| {
            if v == crate::report::format::NA {
                String::new()
            } else {
                v
            }
        })
        .collect()
}

fn opt(v: Option<f64>) -> String {
    v.map_or_else(String::new, csv_num)
}

/// The header and rows as CSV.
fn write(header: Vec<String>, rows: impl Iterator<Item = Vec<String>>) -> String {
    let mut w = ::csv::Writer::from_writer(Vec::new());
    // Writing to memory cannot fail, and every row has the header's length.
    w.write_record(&header).expect("CSV to memory");
    for r in rows {
        debug_assert_eq!(r.len(), header.len());
        w.write_record(&r).expect("CSV to memory");
    }
    let bytes = w.into_inner().expect("CSV to memory");
    String::from_utf8(bytes).expect("CSV of UTF-8 fields")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fixture;

    #[test]
    fn runs_snapshot() {
        insta::assert_snapshot!(runs(&fixture::results()));
    }

    #[test]
    fn cells_snapshot() {
        insta::assert_snapshot!(cells(&fixture::results()));
    }

    #[test]
    fn rfc4180_quoting_and_shape() {
        let mut r = fixture::results();
        r.config.params = vec![("note".into(), vec!["a,b \"c\"".into()])];
        for run in &mut r.runs {
            run.cell.params.insert("note".into(), "a,b \"c\"".into());
        }
        let text = runs(&r);
        let mut rd = ::csv::Reader::from_reader(text.as_bytes());
        let header = rd.headers().unwrap().clone();
        let col = |name: &str| header.iter().position(|h| h == name).unwrap();
        let rows: Vec<::csv::StringRecord> = rd.records().map(Result::unwrap).collect();
        assert_eq!(rows.len(), 5);
        assert!(rows.iter().all(|row| row.len() == header.len()));
        // Quoted on the way out, the same value on the way back.
        assert!(text.contains("\"a,b \"\"c\"\"\""), "{text}");
        assert_eq!(&rows[0][col("note")], "a,b \"c\"");
        assert_eq!(&rows[4][col("complete")], "false");
        assert_eq!(&rows[0][col("pool_wait_mean_ms")], "");
        assert_eq!(&rows[1][col("tps")], "148");
    }
}
