//! The formats: each writes the tables of [`crate::report::tables`] and
//! the figures of [`crate::report::analysis`] out, adding only
//! presentation.
//!
//! - [`markdown`]: report.md; [`pipe`] is the one Markdown table writer
//!   (report.md, `isobench compare`, anomalies.md).
//! - [`html`]: report.html, with charts.
//! - [`terminal`]: what commands print, fitted to the terminal's width
//!   ([`terminal::fit`]).
//! - [`csv`] and [`json`]: runs.csv, cells.csv and cells.json, the cells
//!   from one serializable row ([`cell_row::CellRow`]).
//! - [`compare`]: `isobench compare`'s Markdown; [`ci_formats`]: B's
//!   figures as Bencher's and github-action-benchmark's JSON; [`anomalies`]: the
//!   anomaly matrix (anomalies.md and the terminal).

pub mod anomalies;
pub mod cell_row;
pub mod ci_formats;
pub mod compare;
pub mod csv;
pub mod html;
pub mod json;
pub mod markdown;
pub mod pipe;
pub mod terminal;
