//! Writing a results directory's report files in the formats asked for
//! (`isobench report DIR --format md,html,json,csv`), all rendered from one
//! [`Results`].

use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::store::{self, Results};

pub(crate) const REPORT_HTML: &str = "report.html";
pub(crate) const CELLS_JSON: &str = "cells.json";
pub(crate) const RUNS_CSV: &str = "runs.csv";
pub(crate) const CELLS_CSV: &str = "cells.csv";

/// A report format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `report.md`.
    Markdown,
    /// `report.html`: self-contained, with SVG charts.
    Html,
    /// `results.json` (everything, as exported from the store) and
    /// `cells.json` (the per-cell statistics).
    Json,
    /// `runs.csv` (one row per run) and `cells.csv` (one row per cell).
    Csv,
}

impl Format {
    /// Every format, in the order they are written.
    pub const ALL: &[Format] = &[Format::Markdown, Format::Html, Format::Json, Format::Csv];
}

impl FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "md" | "markdown" => Ok(Format::Markdown),
            "html" => Ok(Format::Html),
            "json" => Ok(Format::Json),
            "csv" => Ok(Format::Csv),
            other => Err(format!(
                "unknown format '{other}' (use md, html, json, csv)"
            )),
        }
    }
}

/// Writes the files of `formats` for `results` into `dir`; returns their
/// paths. Errors: a file cannot be written (naming it).
pub fn write(dir: &Path, results: &Results, formats: &[Format]) -> Result<Vec<PathBuf>, String> {
    write_model(
        dir,
        &crate::report::analysis::model::ReportModel::new(results),
        formats,
    )
}

/// [`write()`] from an aggregated model (the cells are aggregated once for
/// every format).
pub fn write_model(
    dir: &Path,
    m: &crate::report::analysis::model::ReportModel,
    formats: &[Format],
) -> Result<Vec<PathBuf>, String> {
    let results = m.results;
    let mut written = Vec::new();
    let mut put = |name: &str, text: String| -> Result<(), String> {
        let path = dir.join(name);
        store::write_atomic(&path, text.as_bytes())
            .map_err(|e| format!("writing {}: {e}", path.display()))?;
        written.push(path);
        Ok(())
    };
    for f in formats {
        match f {
            Format::Markdown => put(
                store::REPORT_MD,
                crate::report::render::markdown::render_model(m),
            )?,
            Format::Html => put(REPORT_HTML, crate::report::render::html::render_model(m))?,
            Format::Json => {
                put(
                    store::RESULTS_JSON,
                    store::results_json(results).map_err(|e| e.to_string())?,
                )?;
                put(CELLS_JSON, crate::report::render::json::cells_of(m))?;
            }
            Format::Csv => {
                put(RUNS_CSV, crate::report::render::csv::runs_of(m))?;
                put(CELLS_CSV, crate::report::render::csv::cells_of(m))?;
            }
        }
    }
    Ok(written)
}
