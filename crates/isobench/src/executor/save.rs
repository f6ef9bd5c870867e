//! The results of a study as they grow: after every run the store, then
//! `results.json` and `report.md` are written again, so that an
//! interrupted or failed study keeps every run it completed (and can be
//! resumed from them).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};

use super::drivers::StudyHeader;
use super::schedule::{default_baseline, distinct};
use crate::model::StudyConfig;
use crate::progress::Progress;
use crate::store::sqlite::Store;
use crate::store::{self, Cell, Environment, Results, StoredConfig, StoredTarget};

/// Writes everything measured so far: the store (the study's header
/// and run `index`, the one just finished, if any), then `results.json`;
/// once a run is recorded, `reports` render theirs (before the first
/// there is nothing to report: a study that stops then leaves none).
pub(super) fn save(
    dir: &Path,
    db: &mut Store,
    results: &Results,
    index: Option<u32>,
    reports: Option<&dyn super::Reports>,
) -> Result<()> {
    db.save_header(results)?;
    if let Some(run) = index.and_then(|i| results.runs.iter().find(|r| r.index == i)) {
        db.save_run(run)?;
    }
    store::write_json(results, dir)
        .with_context(|| format!("writing {}", dir.join(store::RESULTS_JSON).display()))?;
    if let Some(r) = reports.filter(|_| !results.runs.is_empty()) {
        r.after_run(dir, results)?;
    }
    Ok(())
}

/// The stored configuration of study `cfg` of `cells`, driven as `header`
/// says (its target is filled in once the server runs).
pub(super) fn stored_config(
    cfg: &StudyConfig,
    cells: &[Cell],
    header: StudyHeader,
) -> StoredConfig {
    StoredConfig {
        workload: header.workload,
        workloads: cfg.workloads.clone(),
        load: cfg.load.clone(),
        scripts: cfg.scripts.clone(),
        scale: distinct(cells.iter().filter_map(|c| c.scale)),
        isolation: cfg.isolation.clone(),
        strategies: header.strategies,
        params: cfg.params.clone(),
        param_defaults: header.param_defaults,
        clients: cfg.clients.clone(),
        pool_size: cfg.pool_size.clone(),
        rate: cfg.rate.clone(),
        latency_limit_ms: cfg.latency_limit.map(|d| d.as_secs_f64() * 1000.0),
        faults: cfg.faults.iter().map(ToString::to_string).collect(),
        fault_plans: cfg.fault_plans.iter().map(ToString::to_string).collect(),
        exclude_faulted: cfg.exclude_faulted,
        pooler: cfg.pooler.poolers.clone(),
        pooler_size: cfg.pooler.sizes.clone(),
        pooler_processes: cfg.pooler.processes,
        pgbouncer_bin: cfg.pooler.bin.as_ref().map(|b| b.display().to_string()),
        max_tries: cfg.max_tries.clone(),
        setting_factors: cfg.setting_factors.clone(),
        pg_bin: cfg.pg_build_labels(),
        pg_bin_dirs: cfg
            .pg_build_labels()
            .into_iter()
            .zip(&cfg.pg_bin)
            .map(|(label, b)| (label, b.dir.display().to_string()))
            .collect(),
        repeat: cfg.repeat,
        order: cfg.order,
        baseline: cfg.baseline.clone().or_else(|| default_baseline(cfg)),
        duration_s: cfg.duration.as_secs_f64(),
        warmup_s: cfg.warmup.as_secs_f64(),
        transactions: cfg.transactions,
        server_wait_s: cfg.server_wait.as_secs_f64(),
        sample_interval_s: cfg.sample_interval.as_secs_f64(),
        threads: cfg.threads,
        retry: cfg.retry.clone(),
        seed: cfg.seed,
        target: String::new(), // known once the server runs
        settings: cfg
            .target
            .settings
            .iter()
            .cloned()
            .collect::<BTreeMap<_, _>>(),
        file: cfg.file.as_ref().map(|f| f.display().to_string()),
        target_options: StoredTarget::of(&cfg.target),
        shard: cfg.shard,
        precision: cfg.precision,
        hunt: cfg.hunt,
        cpus: cfg.cpus.clone(),
        calibrate: cfg.calibrate,
        checks: cfg.checks.clone(),
    }
}

/// The results a study starts from: `prior` ones to resume (their
/// interrupted runs dropped, to run again), or new ones with `config` and
/// the server's `env`. `planned` is the number of planned runs.
pub(super) fn starting_results(
    prior: Option<Results>,
    config: StoredConfig,
    env: &Environment,
    planned: usize,
    progress: &Progress,
) -> Results {
    match prior {
        Some(mut prior) => {
            let redo = prior.runs.iter().filter(|r| !r.complete).count();
            prior.runs.retain(|r| r.complete);
            progress.note(&format!(
                "resuming: {} of {} runs done{}",
                prior.runs.len(),
                planned,
                if redo > 0 {
                    format!("; {redo} interrupted run(s) run again")
                } else {
                    String::new()
                }
            ));
            prior.complete = false;
            prior.finished_at = None;
            prior.config.target = config.target;
            prior
        }
        None => Results {
            schema_version: store::SCHEMA_VERSION,
            isobench_version: env!("CARGO_PKG_VERSION").into(),
            started_at: chrono::Local::now().to_rfc3339(),
            finished_at: None,
            complete: false,
            config,
            environment: env.clone(),
            load: Vec::new(),
            runs: Vec::new(),
        },
    }
}

/// The store: created with the study (with the runs of `results`),
/// or reopened to resume (the interrupted runs' rows go; they run again).
pub(super) fn open_store(cfg: &StudyConfig, dir: &Path, results: &Results) -> Result<Store> {
    let db_path = dir.join(store::sqlite::DB_FILE);
    let db = if cfg.resume.is_some() && db_path.exists() {
        let mut db = Store::open(&db_path)?;
        let stored = db.read().map_err(anyhow::Error::msg)?;
        for r in stored.runs.iter().filter(|r| !r.complete) {
            db.delete_run(r.index)?;
        }
        db
    } else {
        let mut db = Store::create(&db_path)?;
        for r in &results.runs {
            db.save_run(r)?;
        }
        db
    };
    Ok(db)
}
