//! Declared checks: rules a study states about its own data (`[[check]]`
//! in a study file, `--check NAME=SQL`, `--check-file FILE`), checked in
//! each run's database after the run and, with `during`, at every sample
//! interval while it runs. They make the anomalies column say what an
//! isolation level buys for transactions isobench does not know (a
//! pgbench script, an application driven by `--load-cmd`).

use serde::{Deserialize, Serialize};

/// How many violating rows a check keeps per run (and per sample during
/// it): the first ones the query returned.
pub const KEPT_ROWS: usize = 10;

/// One declared check.
///
/// The query's result decides how it counts (see [`CheckSpec::expect`]):
/// - rows: any result but those below; every row returned is a violation
///   (`SELECT aid, abalance FROM pgbench_accounts WHERE abalance < 0`);
/// - a count: one row of one column named `count` (as `SELECT count(*)`
///   names it), or any one value when `expect` is given; the violations
///   are how far the value is from `expect` (default 0).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckSpec {
    /// Unique in the study; names the check in every report.
    pub name: String,
    /// One SQL query, run in the run's database in a READ ONLY
    /// transaction.
    pub sql: String,
    /// The count the query must return: given, the query must return one
    /// integer (one row, one column), and the violations are
    /// `|value - expect|`; `None`: rows are violations, or a `count`
    /// column must be 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<i64>,
    /// Also checked at every sample interval while the run's load runs
    /// (warm-up included), so that a rule broken and then repaired within
    /// a run is seen.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub during: bool,
    /// Where the check was declared, for errors: `study.toml:12` (its
    /// `[[check]]`), `checks.sql:3` (its `-- name:` line), or `--check`.
    pub origin: String,
}

/// Rows a check returned: the column names and the first [`KEPT_ROWS`]
/// rows, each value as PostgreSQL prints it (text format), `None` for
/// NULL.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckRows {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Option<String>>>,
}

impl CheckRows {
    /// The first row as `col=value col=value` (NULL for a NULL), or
    /// `None` without rows.
    pub fn first(&self) -> Option<String> {
        let row = self.rows.first()?;
        Some(
            self.columns
                .iter()
                .zip(row)
                .map(|(c, v)| format!("{c}={}", v.as_deref().unwrap_or("NULL")))
                .collect::<Vec<_>>()
                .join(" "),
        )
    }
}

/// What the samples of a `during` check saw while the run's load ran.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DuringCheck {
    /// Times the check ran during the run.
    pub samples: u32,
    /// Samples that found violations.
    pub violated_samples: u32,
    /// The most violations one sample found.
    pub max_violations: u64,
    /// When the first violation was seen, s after the load started
    /// (warm-up included); `None` when none was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_violation_s: Option<f64>,
    /// The rows of the first sample that found violations (a rows
    /// check).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<CheckRows>,
}
