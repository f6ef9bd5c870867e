//! `isobench check-history FILE...`: Elle-style checks of list-append
//! histories, and, given the level they ran at, their guarantee
//! violations with evidence.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;

use super::{Exit, out};
use crate::evidence::{self, Violation};
use crate::model::{BadInput, Isolation, forbids};
use crate::workload::list_append::Shape;

/// Flags of `isobench check-history`.
#[derive(Debug, Args)]
pub struct CheckHistoryArgs {
    /// History files, gzip-compressed or not.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// The isolation level the histories ran at (rc, rr, ser): an anomaly it forbids is a guarantee violation (exit status 4). A run's history in an isobench results directory (DIR/histories/run-N.jsonl.gz) has its level read from the study.
    #[arg(long, value_name = "LEVEL")]
    pub level: Option<Isolation>,
    /// Write each guarantee violation's evidence into DIR/violations/N/ (the cycle in words, the statements with their times, the EDN and JSON excerpts, a replay spec); needs a level.
    #[arg(long, value_name = "DIR")]
    pub evidence: Option<PathBuf>,
    /// The list-append parameters the history ran with, for the statements and the replay spec, repeatable: --param tables=3 (read from the study for a run's history).
    #[arg(long = "param", value_name = "NAME=VALUE")]
    pub params: Vec<String>,
}

/// What is known of where a history ran: its level, its shape, a label.
struct Origin {
    level: Option<Isolation>,
    shape: Option<Shape>,
    cell: String,
    run: Option<u32>,
}

/// The study's cell of `path` when it is `DIR/histories/run-N.jsonl.gz`
/// of a results directory.
fn run_origin(path: &Path) -> Option<Origin> {
    let name = path.file_name()?.to_str()?;
    let n: u32 = name.strip_prefix("run-")?.split('.').next()?.parse().ok()?;
    let dir = path.parent()?;
    if dir.file_name()? != "histories" {
        return None;
    }
    let results = crate::store::load_dir(dir.parent()?).ok()?;
    let cell = &results.runs.iter().find(|r| r.index == n)?.cell;
    Some(Origin {
        level: Some(cell.isolation),
        shape: evidence::HISTORY_WORKLOADS
            .contains(&cell.workload.as_str())
            .then(|| Shape::for_workload(&cell.workload, &cell.params, &cell.strategy).ok())
            .flatten(),
        cell: cell.label(),
        run: Some(n),
    })
}

/// Reads and checks each file, prints what the checker found and, with a
/// level, its guarantee violations; writes their evidence with
/// `--evidence`. [`Exit::GuaranteeViolated`] when a class the level
/// forbids was found, else [`Exit::Violations`] when any anomaly was.
///
/// Errors (bad input): a file that cannot be read, decompressed or
/// parsed; a `--param` that is not NAME=VALUE or not a list-append
/// parameter's value; `--evidence` without a level.
pub fn run(args: CheckHistoryArgs) -> Result<Exit> {
    let mut params = BTreeMap::new();
    for p in &args.params {
        let (k, v) = p.split_once('=').ok_or_else(|| {
            BadInput(format!(
                "--param {p}: give NAME=VALUE, e.g. --param tables=3"
            ))
        })?;
        params.insert(k.trim().to_string(), v.trim().to_string());
    }
    let given_shape = if params.is_empty() {
        None
    } else {
        Some(Shape::from_params(&params, "optimistic").map_err(BadInput)?)
    };
    let (mut found, mut broken) = (0, 0);
    for path in &args.files {
        let bad = |what: String| BadInput(format!("{}: {what}", path.display()));
        let history = evidence::read_history(path).map_err(bad)?;
        let origin = run_origin(path).unwrap_or(Origin {
            level: None,
            shape: None,
            cell: path.display().to_string(),
            run: None,
        });
        let level = args.level.or(origin.level);
        if args.evidence.is_some() && level.is_none() {
            return Err(BadInput(format!(
                "--evidence: {} is not a run's history in a results directory: give --level \
                 (rc, rr or ser) to say which anomalies break its promise",
                path.display()
            ))
            .into());
        }
        let shape = given_shape.clone().or(origin.shape);
        let started = std::time::Instant::now();
        let report = crate::elle::check(&history);
        let took = started.elapsed().as_secs_f64();
        found += report.total();
        let mut text = format!(
            "{}: {} transactions ({} committed), {} dependency edges, checked in {took:.2} s ({:.1} µs per transaction)\n{}",
            path.display(),
            report.txns,
            report.committed,
            report.edges,
            1e6 * took / report.txns.max(1) as f64,
            report.render()
        );
        let Some(level) = level else {
            out(&text);
            continue;
        };
        let invariants =
            crate::workload::list_append::invariants(&report, std::time::Duration::ZERO);
        for inv in invariants
            .iter()
            .filter(|i| i.violations > 0 && forbids(level, &i.name))
        {
            broken += inv.violations;
            text.push_str(&format!(
                "GUARANTEE VIOLATED: {} {} at {}, which forbids it\n",
                inv.violations,
                inv.name,
                level.sql()
            ));
            let Some(dir) = &args.evidence else { continue };
            for cycle in &inv.cycles {
                let v = Violation {
                    run: origin.run,
                    cell: origin.cell.clone(),
                    class: &inv.name,
                    level,
                    cycle,
                    shape: shape.as_ref(),
                };
                let rel = evidence::write(dir, &history, &v, None, None).map_err(|e| {
                    anyhow::anyhow!("writing the evidence into {}: {e}", dir.display())
                })?;
                text.push_str(&format!(
                    "  {}: evidence in {}\n",
                    cycle.arrows(),
                    dir.join(rel).display()
                ));
            }
        }
        out(&text);
    }
    Ok(if broken > 0 {
        Exit::GuaranteeViolated
    } else if found > 0 {
        Exit::Violations
    } else {
        Exit::Done
    })
}
