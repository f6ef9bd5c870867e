//! Reports: what a results directory says, computed once and written
//! many ways. Three layers, each importing only the ones above it:
//!
//! - [`analysis`]: the figures. Cells and their statistics against the
//!   baseline ([`analysis::cells`]), the aggregated [`analysis::model`]
//!   every report reads, findings and headlines, failure reasons, plans,
//!   server observations, and the A/B matching of `isobench compare`.
//!   No text layout here.
//! - [`tables`]: each table of every report, built once as data
//!   ([`tables::Table`]: columns with header, unit and alignment; rows of
//!   values that know their text, their number and their emphasis), and
//!   the setup list ([`tables::setup`]). Labels agree across formats
//!   because there is one place that writes them.
//! - [`render`]: the formats. Markdown (`report.md`, `isobench compare`,
//!   `anomalies.md`, through one pipe-table writer), HTML
//!   (`report.html`), the terminal (fitted to its width), CSV and JSON
//!   (from one serializable per-cell row).
//!
//! [`mod@format`]'s number and label formatting is shared by all three, so a
//! figure reads the same everywhere; [`files`] writes a results
//! directory's report files.

pub mod analysis;
pub mod files;
pub mod format;
pub mod render;
pub mod tables;

#[cfg(test)]
mod dump;
