//! `isobench calibrate`: how noisy is this machine for this study? The
//! study's cells each run as A and as B, interleaved (A B A B ...), in
//! `--repeat N` A/A comparisons of `--per-side K` runs a side. The
//! results directory is a study like any other (report.md, results.json)
//! whose `results.json` has a `noise` section (`stats::noise`): per cell
//! and metric the coefficients of variation between runs and within a
//! run, the false-positive rate of isobench's own verdict over the pairs,
//! the MDE of a study of K runs a side, and the runs a side a target MDE
//! needs. `isobench compare --noise DIR` uses it.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use tokio_util::sync::CancellationToken;

use super::{Exit, WidthArg, out, watch_signals};
use crate::model::{BadInput, Calibration};
use crate::stats;
use crate::study::Settings;
use crate::study::values::{Count, Parse, Percent};
use crate::{executor, report};

/// The default number of A/A pairs: enough for a false-positive rate with
/// an interval (0 of 20 has an upper end of 17 %).
pub const DEFAULT_PAIRS: u32 = 20;

/// Flags of `isobench calibrate`: `isobench run`'s, with `--repeat` the
/// number of A/A pairs.
#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// A study file (TOML) with the cell(s) to calibrate; flags override it.
    #[arg(value_name = "STUDY.toml")]
    pub study: Option<PathBuf>,
    /// Runs of each side of a pair (the repetitions of the study you plan) [default: 3].
    #[arg(long, value_parser = Count::<1000>::parse, allow_hyphen_values = true)]
    pub per_side: Option<u32>,
    /// The smallest detectable change to plan repetitions for, e.g. 5% [default: 5%].
    #[arg(long, value_name = "PCT", value_parser = Percent::parse)]
    pub target_mde: Option<f64>,
    #[command(flatten)]
    pub settings: Settings,
    #[command(flatten)]
    pub width: WidthArg,
}

/// Runs the calibration and prints its noise section.
///
/// Errors: bad settings (`--precision` does not apply; bad input), or a
/// failure at run time.
pub async fn run(args: CalibrateArgs) -> Result<Exit> {
    let width = args.width.columns();
    let pairs_given = args.settings.repeat;
    if args.settings.precision.is_some() || args.settings.max_repeat.is_some() {
        return Err(BadInput(
            "calibrate: --precision and --max-repeat do not apply: --repeat is the number of A/A pairs".into(),
        )
        .into());
    }
    let mut cfg = crate::study::from_args(args.study.as_deref(), None, args.settings)
        .map_err(|e| BadInput(e.to_string()))?;
    let pairs = pairs_given.unwrap_or(DEFAULT_PAIRS);
    let per_side = args.per_side.unwrap_or(3);
    cfg.calibrate = Some(Calibration {
        pairs,
        per_side,
        target_mde_pct: args.target_mde.unwrap_or(stats::MDE_TARGET_PCT),
    });
    cfg.repeat = 2 * pairs * per_side;
    let quiet = cfg.quiet;
    let cancel = CancellationToken::new();
    tokio::spawn(watch_signals(cancel.clone()));
    let outcome =
        match executor::run(cfg, cancel.clone(), super::reports::ReportFiles::hook()).await {
            Ok(o) => o,
            Err(e) if cancel.is_cancelled() => {
                eprintln!("isobench: interrupted: {e:#}");
                return Ok(Exit::Interrupted);
            }
            Err(e) => return Err(e),
        };
    if !quiet {
        let noise = stats::noise::of(&outcome.results);
        out(&format!(
            "{}{}results: {} (noise section in results.json)\n",
            report::render::terminal::summary(&outcome.results, width),
            noise
                .as_ref()
                .map_or(String::new(), |n| report::render::terminal::noise(n, width)),
            outcome.dir.display()
        ));
    }
    if outcome.interrupted {
        eprintln!(
            "isobench: interrupted; the completed runs are saved in {}",
            outcome.dir.display()
        );
        return Ok(Exit::Interrupted);
    }
    Ok(Exit::Done)
}
