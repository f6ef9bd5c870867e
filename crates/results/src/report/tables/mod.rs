//! Every table of the reports, built once as data from the
//! [`crate::report::analysis::model::ReportModel`] and written out by each format: report.md and
//! report.html alike, the terminal summary, `isobench compare` and the
//! anomaly matrix. A table's text is the same in every format; the
//! renderers ([`crate::report::render`]) add only presentation (see
//! [`table`]). The setup list, the one non-table block every report
//! starts from, is built here too ([`setup`]), so its labels cannot
//! differ between report.md and report.html.
//!
//! One file per part of the report: [`cells`] (Cells, Cells in detail),
//! [`client`] (latency, transactions, commands), [`mod@failures`],
//! [`server`] (counters, wait events, SIRead locks), [`checks`],
//! [`mod@faults`], [`mod@hosts`], [`mod@runs`], [`mod@pooler`] (pgbouncer), [`mod@standbys`] (`pg_stat_replication`), [`load_cmd`] (an
//! external load's figures), [`compare`] (`isobench compare`), [`gate`] (its regression
//! gate), [`noise`] (a calibration's noise, `isobench calibrate`), [`anomalies`] (the anomaly
//! matrix).

pub mod anomalies;
pub mod cells;
pub mod checks;
pub mod client;
pub mod compare;
pub mod failovers;
pub mod failures;
pub mod faults;
pub mod gate;
pub mod guarantee;
pub mod hosts;
pub mod load_cmd;
pub mod noise;
pub mod pooler;
pub mod runs;
pub mod server;
pub mod setup;
pub mod standbys;
pub mod table;

pub use cells::{
    CELL_DETAILS_NOTE, CELLS_MAX_COLUMNS, EFFECTIVE_NOTE, cell_details, cell_value, cells_note,
    constant_factors, summary, summary_notes,
};
pub use checks::{invariant_checks, invariant_summary};
pub use client::{commands, latency, transactions};
pub use failovers::{FAILOVERS_NOTE, failovers};
pub use failures::{SWALLOWED, SWALLOWED_NOTE, failure_totals, failures};
pub use faults::{cell_faults, faults};
pub use hosts::{host_note, hosts};
pub use load_cmd::external_load;
pub use pooler::{POOLER_NOTE, pooler};
pub use runs::{problems, runs};
pub use server::{counters, siread_locks, wait_events};
pub use standbys::{STANDBYS_NOTE, standbys};
pub use table::{Align, Column, Mark, Row, Table, Value};

use crate::report::{format::fmt_mean, format::fmt_opt};
use crate::stats::Summary;

/// A mean of a summary, formatted by `f`.
pub(crate) fn mean_value(s: Option<&Summary>, f: fn(f64) -> String) -> Value {
    Value::opt(s.map(|s| s.mean), fmt_mean(s, f))
}

/// An optional figure with `decimals` decimals.
pub(crate) fn opt_value(v: Option<f64>, decimals: usize) -> Value {
    Value::opt(v, fmt_opt(v, decimals))
}
