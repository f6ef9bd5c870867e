//! `isobench run`: measure a study and write its results directory.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use tokio_util::sync::CancellationToken;

use super::{Exit, WidthArg, out, watch_signals};
use crate::executor;
use crate::model::{BadInput, StudyConfig};
use crate::report;
use crate::study::{Settings, SettingsError};

/// Flags of `isobench run`. With none, a default study: TPC-B at scale 10,
/// rc/rr/ser, 16 clients, 3 x 10 s after 2 s of warm-up, on a managed server.
/// Every flag but `--resume` and `--width` is also a key of the study file
/// ([`Settings`]).
#[derive(Debug, Default, Args)]
pub struct RunArgs {
    /// A study file (TOML) with the study's factors and settings; flags override it.
    #[arg(value_name = "STUDY.toml")]
    pub study: Option<PathBuf>,
    /// Continue the interrupted study in DIR, skipping its completed runs.
    #[arg(long, value_name = "DIR", conflicts_with = "study")]
    pub resume: Option<PathBuf>,
    #[command(flatten)]
    pub settings: Settings,
    #[command(flatten)]
    pub width: WidthArg,
}

impl RunArgs {
    /// The study: defaults <- the study file <- these flags
    /// ([`crate::study::from_args`]).
    ///
    /// Errors: [`SettingsError`], naming the file's line or the flag.
    pub fn into_study(self) -> Result<StudyConfig, SettingsError> {
        crate::study::from_args(self.study.as_deref(), self.resume.as_deref(), self.settings)
    }
}

/// Runs the study; with `--fail-on-violation`, [`Exit::GuaranteeViolated`]
/// when a level broke its promise (a history check found a class the
/// cell's level forbids) and [`Exit::Violations`] when other invariants
/// were violated; [`Exit::Interrupted`] after Ctrl-C (what was measured
/// is saved).
///
/// Errors: bad settings ([`BadInput`]), or a failure at run time.
pub async fn run(args: RunArgs) -> Result<Exit> {
    let width = args.width.columns();
    let cfg = args.into_study().map_err(|e| BadInput(e.to_string()))?;
    let quiet = cfg.quiet;
    let fail_on_violation = cfg.fail_on_violation;
    let cancel = CancellationToken::new();
    tokio::spawn(watch_signals(cancel.clone()));
    let outcome =
        match executor::run(cfg, cancel.clone(), super::reports::ReportFiles::hook()).await {
            Ok(outcome) => outcome,
            // An error after Ctrl-C is most likely its consequence: still 130.
            Err(e) if cancel.is_cancelled() => {
                eprintln!("isobench: interrupted: {e:#}");
                return Ok(Exit::Interrupted);
            }
            Err(e) => return Err(e),
        };
    if !quiet {
        out(&format!(
            "{}results: {}\n",
            report::render::terminal::summary(&outcome.results, width),
            outcome.dir.display()
        ));
    }
    if outcome.interrupted {
        eprintln!(
            "isobench: interrupted; {} completed run(s) saved in {} (complete: false)",
            outcome.results.runs.iter().filter(|r| r.complete).count(),
            outcome.dir.display()
        );
        return Ok(Exit::Interrupted);
    }
    let failed = outcome
        .results
        .runs
        .iter()
        .filter(|r| r.load.is_some() && !r.complete)
        .count();
    if failed > 0 {
        eprintln!(
            "isobench: {failed} run(s) failed and were kept out of the statistics (on_error = continue); see Problems in {}",
            outcome.dir.join("report.md").display()
        );
    }
    let broken: Vec<String> = outcome
        .results
        .runs
        .iter()
        .flat_map(|r| {
            r.invariants
                .iter()
                .filter(|i| i.violations > 0 && crate::model::forbids(r.cell.isolation, &i.name))
                .map(move |i| {
                    format!(
                        "run {}: {} {} at {}",
                        r.index,
                        i.violations,
                        i.name,
                        r.cell.isolation.sql()
                    )
                })
        })
        .collect();
    if fail_on_violation && !broken.is_empty() {
        eprintln!(
            "isobench: an isolation level broke its promise ({}) and --fail-on-violation is set",
            broken.join("; ")
        );
        return Ok(Exit::GuaranteeViolated);
    }
    let violated: Vec<u32> = outcome
        .results
        .runs
        .iter()
        .filter(|r| r.anomalies > 0)
        .map(|r| r.index)
        .collect();
    if fail_on_violation && !violated.is_empty() {
        eprintln!(
            "isobench: invariants violated in {} run(s) ({}) and --fail-on-violation is set",
            violated.len(),
            violated
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        );
        return Ok(Exit::Violations);
    }
    Ok(Exit::Done)
}
