//! `isobench report DIR`: re-render a results directory's reports from its
//! store, without re-running.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use super::{Exit, WidthArg, out};
use crate::model::BadInput;
use crate::{report, store};

/// Flags of `isobench report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A directory written by `isobench run`.
    pub dir: PathBuf,
    /// Formats to write: md (report.md), html (report.html), json (results.json, cells.json), csv (runs.csv, cells.csv).
    #[arg(long, value_delimiter = ',', default_value = "md,html,json,csv")]
    pub format: Vec<crate::report::files::Format>,
    /// The baseline cell of "% vs baseline", e.g. 'isolation=rc,clients=16' (default: the study's).
    #[arg(long, value_name = "FACTOR=VALUE,...")]
    pub baseline: Option<String>,
    #[command(flatten)]
    pub width: WidthArg,
}

/// Writes the reports of `args.dir` in `args.format` and prints the
/// terminal summary.
///
/// Errors: an unreadable store, a bad `--baseline` (bad input), a report
/// that cannot be written.
pub fn run(args: ReportArgs) -> Result<Exit> {
    let mut results = store::load_dir(&args.dir)?;
    if args.baseline.is_some() {
        results.config.baseline = args.baseline;
        report::analysis::cells::check_baseline(&results)
            .map_err(|e| BadInput(format!("--baseline: {e}")))?;
    }
    let model = report::analysis::model::ReportModel::new(&results);
    let written =
        report::files::write_model(&args.dir, &model, &args.format).map_err(anyhow::Error::msg)?;
    let files: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
    out(&format!(
        "{}written: {}\n",
        report::render::terminal::summary_of(&model, args.width.columns()),
        files.join(", ")
    ));
    Ok(Exit::Done)
}
