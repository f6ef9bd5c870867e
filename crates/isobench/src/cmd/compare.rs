//! `isobench compare A B`: two results directories side by side, cell by
//! cell; with `--fail-on-regression 5%` a regression gate for CI (exit 3
//! on a significant regression beyond the threshold), and with `--format`
//! NEW's figures for continuous-benchmarking services.

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, ValueEnum};

use super::{Exit, WidthArg, out};
use crate::model::BadInput;
use crate::report::analysis::gate::{self, Status};
use crate::study::values::{Parse, Percent};
use crate::{report, store};

/// Flags of `isobench compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The A side, BASE (e.g. the original server build).
    pub a: PathBuf,
    /// The B side, NEW (e.g. the patched build).
    pub b: PathBuf,
    /// Exit with status 3 when a cell of B is significantly worse than A by at least this much: TPS or effective TPS down, p99 up, failures up (e.g. 5%); a cell whose smallest detectable change is above it is "cannot tell": exit 0 with a warning.
    #[arg(long, value_name = "PCT", value_parser = Percent::parse)]
    pub fail_on_regression: Option<f64>,
    /// What to print: md (the comparison, Markdown), bmf (B's cells as Bencher Metric Format JSON), gab (B's TPS as github-action-benchmark's customBiggerIsBetter JSON), gab-latency (B's p99 as customSmallerIsBetter JSON) [default: md].
    #[arg(long, value_enum, default_value_t = CompareFormat::Md)]
    pub format: CompareFormat,
    /// A results directory of `isobench calibrate`: its noise (CV between runs, false-positive rate) is shown for the cells it has, every comparison (the tables and the gate) takes each side's spread at least at its CV, and the gate says "cannot tell" where that noise could hide a regression of the threshold's size.
    #[arg(long, value_name = "DIR")]
    pub noise: Option<PathBuf>,
    /// With --fail-on-regression: a gate that could judge no metric (every one had too few runs on a side) exits 2 instead of 0 with a warning.
    #[arg(long, requires = "fail_on_regression")]
    pub strict: bool,
    #[command(flatten)]
    pub width: WidthArg,
}

/// `--format` of `isobench compare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompareFormat {
    Md,
    Bmf,
    Gab,
    GabLatency,
}

/// Prints the comparison of the two directories (or B's figures in a
/// service's format), then the regression gate when asked for:
/// [`Exit::Violations`] (3) on a regression; warnings on stderr for every
/// "cannot tell". A gate that compared nothing (no cell in common) never
/// passes: [`Exit::BadInput`] (2), naming each side's cells; one whose
/// every metric had too few runs passes with a warning, or with
/// `--strict` exits 2.
///
/// Errors: an unreadable store, or two studies that cannot be compared
/// (bad input).
pub fn run(args: CompareArgs) -> Result<Exit> {
    let ra = store::load_dir(&args.a)?;
    let rb = store::load_dir(&args.b)?;
    report::analysis::compare::check(&ra, &rb).map_err(BadInput)?;
    let noise = match &args.noise {
        None => None,
        Some(dir) => Some(crate::stats::noise::of(&store::load_dir(dir)?).ok_or_else(|| {
            BadInput(format!(
                "--noise {}: not a calibration (written by `isobench calibrate`): it has no noise section",
                dir.display()
            ))
        })?),
    };
    let gate = args
        .fail_on_regression
        .map(|t| (t, gate::evaluate_with_noise(&ra, &rb, t, noise.as_ref())));
    match args.format {
        CompareFormat::Md => {
            let width = Some(args.width.columns());
            // Markdown tables whole for a file or a pipe; fitted for a
            // terminal or an explicit --width.
            let tables = if args.width.width.is_some() || std::io::stdout().is_terminal() {
                report::render::compare::Tables::Fitted
            } else {
                report::render::compare::Tables::Whole
            };
            let mut text = report::render::compare::render(
                &ra,
                &rb,
                &args.a.display().to_string(),
                &args.b.display().to_string(),
                width,
                tables,
                noise.as_ref(),
            );
            if let (Some(n), Some(dir)) = (&noise, &args.noise) {
                text.push('\n');
                text.push_str(&report::render::compare::noise_section(
                    n,
                    &ra,
                    &rb,
                    &dir.display().to_string(),
                ));
            }
            if let Some((t, rows)) = &gate {
                text.push('\n');
                text.push_str(&report::render::compare::gate_section(
                    rows, *t, false, width, tables,
                ));
            }
            out(&text);
        }
        CompareFormat::Bmf => out(&report::render::ci_formats::bmf(&ra, &rb)),
        CompareFormat::Gab => out(&report::render::ci_formats::gab(&ra, &rb, false)),
        CompareFormat::GabLatency => out(&report::render::ci_formats::gab(&ra, &rb, true)),
    }
    let Some((t, rows)) = gate else {
        return Ok(Exit::Done);
    };
    let t = crate::stats::fmt_mde(t);
    if rows.is_empty() {
        // Nothing compared is not a pass.
        let (ca, cb) = (
            report::analysis::cells::aggregate(&ra),
            report::analysis::cells::aggregate(&rb),
        );
        let p = report::analysis::compare::pair(&ra, &rb, &ca, &cb);
        eprintln!(
            "isobench: compared nothing: no cell in common; --fail-on-regression cannot pass"
        );
        for (side, dir, cells) in [("A", &args.a, &p.only_a), ("B", &args.b, &p.only_b)] {
            let cells = if cells.is_empty() {
                "no cell".to_string()
            } else {
                cells.join("; ")
            };
            eprintln!("isobench:   {side} ({}): {cells}", dir.display());
        }
        return Ok(Exit::BadInput);
    }
    if gate::too_few_runs_everywhere(&rows) {
        let min = crate::stats::MIN_RUNS;
        eprintln!(
            "isobench: {}: the gate judged no metric: every one had fewer than {min} complete runs on a side, so a regression of {t} could not be seen; run more repetitions (--repeat {min} or more)",
            if args.strict { "error" } else { "warning" }
        );
        if args.strict {
            return Ok(Exit::BadInput);
        }
    }
    for r in rows.iter().filter(|r| r.status == Status::CannotTell) {
        eprintln!(
            "isobench: warning: cannot tell at {t}: {} {}: {}",
            r.cell, r.metric, r.why
        );
    }
    let regressions: Vec<&gate::Row> = rows
        .iter()
        .filter(|r| r.status == Status::Regression)
        .collect();
    for r in &regressions {
        eprintln!("isobench: regression: {} {}: {}", r.cell, r.metric, r.why);
    }
    if regressions.is_empty() {
        let unsure = rows
            .iter()
            .filter(|r| r.status == Status::CannotTell)
            .count();
        if unsure > 0 {
            eprintln!(
                "isobench: no regression of {t} or more found, but {unsure} figure(s) could not be told apart at {t} (see the warnings)"
            );
        }
        Ok(Exit::Done)
    } else {
        eprintln!(
            "isobench: {} regression(s) of {t} or more and --fail-on-regression is set",
            regressions.len()
        );
        Ok(Exit::Violations)
    }
}
