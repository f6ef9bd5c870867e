//! The `isobench anomalies` command: parse the probes, start the target,
//! run the matrix, write `anomalies.json` and `anomalies.md`.

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use tokio_util::sync::CancellationToken;

use crate::model::AnomaliesConfig;
use crate::model::probes::Matrix;
use crate::probe::exec::{Env, WaitCheck};
use crate::probe::{run_matrix, select};
use crate::{postgres, report, store};

pub(crate) const ANOMALIES_JSON: &str = "anomalies.json";
pub(crate) const ANOMALIES_MD: &str = "anomalies.md";

/// What the command produced: the matrix and where it was written.
pub struct ProbesRun {
    pub matrix: Matrix,
    pub dir: PathBuf,
}

/// Runs the command. Probe files are parsed before anything starts; the
/// managed server (if any) is stopped before this returns, also on error.
/// When `cancel` fires, the probes done so far are written (`complete:
/// false`).
///
/// Errors: bad `--probe` arguments or files, an unusable results
/// directory, a target that does not start, or a probe whose setup fails
/// or whose anomaly condition holds serially.
pub async fn run(cfg: &AnomaliesConfig, cancel: CancellationToken) -> Result<ProbesRun> {
    let probes = select(&cfg.probes).map_err(crate::model::BadInput::from_error)?;
    if cfg.levels.is_empty() {
        bail!("--isolation: name at least one level");
    }
    let fresh = store::create_results_dir(cfg.out.as_deref(), "anomalies-", ANOMALIES_JSON)?;
    let dir = fresh.path.clone();
    let started = async {
        let target = postgres::start(&cfg.target, &dir.join(store::SERVER_LOG), 20).await?;
        let config = target.config(&target.admin_db());
        let admin = postgres::connect(&config).await?;
        let wait_check = WaitCheck::detect(&admin).await?;
        anyhow::Ok((target, config, wait_check))
    };
    let (target, config, wait_check) = match started.await {
        Ok(t) => t,
        Err(e) => {
            // Nothing probed: no empty directory left behind.
            fresh.remove_if_empty();
            return Err(e);
        }
    };
    let env = Env {
        config,
        wait_check,
        step_timeout: cfg.step_timeout,
        cancel,
    };
    let progress = !cfg.quiet && std::io::stderr().is_terminal();
    let total = probes.len();
    let levels = cfg.levels.clone();
    let matrix = run_matrix(&env, &probes, &levels, target.describe(), |i, p| {
        if progress {
            eprint!("\r\x1b[2Kprobe {}/{total}: {}", i + 1, p.name);
        }
    })
    .await;
    if progress {
        eprint!("\r\x1b[2K");
    }
    drop(target); // stops a managed server
    let matrix = matrix?;
    let json = serde_json::to_vec_pretty(&matrix).context("encoding anomalies.json")?;
    for (name, bytes) in [
        (ANOMALIES_JSON, json),
        (
            ANOMALIES_MD,
            report::render::anomalies::markdown(&matrix).into_bytes(),
        ),
    ] {
        let path = dir.join(name);
        store::write_atomic(&path, &bytes)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(ProbesRun { matrix, dir })
}
