//! Which report files a study's results directory gets, and when: the
//! commands decide, the executor calls ([`crate::executor::Reports`]).

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};

use crate::executor::Reports;
use crate::report;
use crate::store::{self, Results};

/// `isobench run`'s reports: report.md after every run (a study stopped
/// half-way has a current one), then every format at the end (report.md,
/// report.html, cells.csv, cells.json, the charts; see
/// [`report::files::Format::ALL`]).
pub struct ReportFiles;

impl ReportFiles {
    /// As the executor's hook.
    pub fn hook() -> Option<Arc<dyn Reports>> {
        Some(Arc::new(ReportFiles))
    }
}

impl Reports for ReportFiles {
    fn after_run(&self, dir: &Path, results: &Results) -> Result<()> {
        let path = dir.join(store::REPORT_MD);
        store::write_atomic(&path, report::render::markdown::render(results).as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
        Ok(())
    }

    fn at_end(&self, dir: &Path, results: &Results) -> Result<()> {
        report::files::write(dir, results, report::files::Format::ALL)
            .map_err(anyhow::Error::msg)?;
        Ok(())
    }
}
