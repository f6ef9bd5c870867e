//! Writing a results directory's report files in the formats asked for
//! (`isobench report DIR --format md,html,json,csv`), all rendered from one
//! [`Results`].

use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::store::{self, Results};

/// A report format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `report.md`.
    Markdown,
    /// `results.json`, the whole results as exported from the store.
    Json,
}

impl Format {
    /// Every format, in the order they are written.
    pub const ALL: &[Format] = &[Format::Markdown, Format::Json];
}

impl FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "md" | "markdown" => Ok(Format::Markdown),
            "json" => Ok(Format::Json),
            other => Err(format!("unknown format '{other}' (use md, json)")),
        }
    }
}

/// Writes the files of `formats` for `results` into `dir`; returns their
/// paths. Errors: a file cannot be written (naming it).
pub fn write(dir: &Path, results: &Results, formats: &[Format]) -> Result<Vec<PathBuf>, String> {
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
            Format::Markdown => put(store::REPORT_MD, super::markdown::render(results))?,
            Format::Json => put(
                store::RESULTS_JSON,
                serde_json::to_string_pretty(results).map_err(|e| e.to_string())?,
            )?,
        }
    }
    Ok(written)
}
