//! A study: factors x repetitions -> runs, executed in interleaved
//! order (repetition 1 of every cell, then repetition 2, ...), so that a
//! slow drift of the machine spreads over all cells instead of biasing one.
//!
//! Every run starts from the same state: a fresh copy of the template
//! database (`CREATE DATABASE ... TEMPLATE`, `STRATEGY FILE_COPY` on
//! PostgreSQL 15+), then `VACUUM ANALYZE` and `CHECKPOINT`.
//!
//! The parts, by responsibility, so that each can be read (and tested)
//! without the others:
//! - `plan`: factors -> cells -> ordered runs, pure functions;
//! - `server`: the target, one managed server at a time;
//! - `copies`: template databases and the fresh copy of every run;
//! - `drivers`: what measures a run (built-in workloads, pgbench scripts,
//!   external loads), behind one `Driver` trait;
//! - `save`: the results written again after every run;
//! - here: [`run`], the orchestration of all of them, and the clean-up on
//!   every way out (done, Ctrl-C, error).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, anyhow, bail};
use tokio_util::sync::CancellationToken;

use crate::model::{BadInput, RunRecord, StudyConfig, first_failure_of, sqlstate_name};
use crate::postgres::Target;
use crate::progress::{Progress, TickHook};
use crate::report;
use crate::store::sqlite::Store;
use crate::store::{self, Cell, Environment, Results, StoredConfig};

mod checks;
mod copies;
mod drivers;
mod hunt;
mod inject;
mod pooler;
mod precision;
mod save;
mod schedule;
pub mod shard;
mod target;

use copies::drop_database;
use drivers::{Driver, RunCtx, StudyHeader, TemplateCtx};
use save::save;
pub use schedule::{ScheduledRun, cells, schedule, setup};
use target::{Server, fmt_settings, server_key, start_server};

/// How a study ended.
#[derive(Debug)]
pub struct StudyOutcome {
    pub dir: PathBuf,
    pub results: Results,
    /// Ctrl-C (or SIGTERM) stopped it before every run was done.
    pub interrupted: bool,
}

/// The workload name of cells and results driven by an external load.
pub const EXTERNAL: &str = "external";

/// The workload name of cells and results driven by pgbench scripts.
pub const SCRIPTS: &str = "pgbench-script";

/// Runs the study `cfg` until done or `cancel` fires, `reports`
/// rendering its reports.
///
/// Errors: invalid configuration, a target that cannot be started or
/// reached, a failed load, or a run that cannot start; completed runs are
/// already written to the results directory when an error is returned.
pub async fn run(
    cfg: StudyConfig,
    cancel: CancellationToken,
    reports: Option<Arc<dyn Reports>>,
) -> Result<StudyOutcome> {
    let hooks = Hooks {
        reports,
        ..Hooks::default()
    };
    run_observed(cfg, cancel, hooks).await
}

/// What a caller of [`run_observed`] gets from its runs: every tick
/// (about once a second, warm-up included) and, with a transaction log
/// (`isobench pgbench -l`), every transaction.
#[derive(Default, Clone)]
pub struct Hooks {
    pub on_tick: Option<TickHook>,
    pub tx_log: Option<crate::engine::txlog::TxLogHook>,
    /// What renders reports from the results as they are saved; none:
    /// the results directory holds the store and results.json only.
    pub reports: Option<Arc<dyn Reports>>,
}

/// What renders reports from a study's results: the executor measures,
/// stores and saves (`results.sqlite`, `results.json`); the command that
/// runs the study decides what to render (`isobench run`: report.md after
/// every run, every format at the end; [`crate::cmd`]'s `ReportFiles`).
pub trait Reports: Send + Sync {
    /// After a run was saved, with the results so far (at least one run).
    ///
    /// Errors: a report could not be written (the study stops; what was
    /// measured is saved).
    fn after_run(&self, dir: &Path, results: &Results) -> Result<()>;

    /// Once the study ended, complete or not (not when it stopped before
    /// measuring anything).
    ///
    /// Errors: a report could not be written.
    fn at_end(&self, dir: &Path, results: &Results) -> Result<()>;
}

/// [`run`], calling `hooks.on_tick` with every run's ticks (about once a
/// second, warm-up included).
///
/// Errors: as [`run`].
pub async fn run_observed(
    cfg: StudyConfig,
    cancel: CancellationToken,
    hooks: Hooks,
) -> Result<StudyOutcome> {
    let cfg = cfg.resolve();
    if cfg.load.active() && cfg.scripts.active() {
        bail!(BadInput(
            "--load-cmd and -f/-b both given: a study is driven by an external load or by pgbench scripts, not both"
                .into()
        ));
    }
    if let Some(s) = cfg.shard {
        if cfg.target.dsn.is_none() && !cfg.target.external_from_env {
            bail!(BadInput(format!(
                "--shard {s}: a sharded study needs an external server that every shard reaches (--dsn or --external)"
            )));
        }
        if cfg.load.active() {
            bail!(BadInput(format!(
                "--shard {s}: an external load (--load-cmd) is not sharded; shard a built-in workload or pgbench scripts"
            )));
        }
        if !cfg.faults.is_empty() || !cfg.fault_plans.is_empty() {
            bail!(BadInput(format!(
                "--shard {s}: --fault and --fault-plan are not supported in a sharded study yet"
            )));
        }
    }
    if let Some(b) = pooler::check(&cfg)? {
        tracing::info!("pgbouncer {} from {}", b.version, b.bin.display());
    }
    if cfg.load.active() {
        return run_external(cfg, cancel, hooks).await;
    }
    if cfg.scripts.active() {
        return run_scripts(cfg, cancel, hooks).await;
    }
    if cfg.workloads.len() > 1 {
        let (cells, header, driver) = drivers::factored::prepare(&cfg)?;
        return run_study(cfg, cancel, cells, header, driver, hooks).await;
    }
    let name = schedule::workload_spec(&cfg)?.name;
    match crate::drive::with_workload(name, RunWith { cfg, cancel, hooks }) {
        Some(study) => study.await,
        None => bail!("workload '{name}' is not registered"),
    }
}

/// Runs a study of the workload type [`crate::drive::with_workload`]
/// picks by name.
struct RunWith {
    cfg: StudyConfig,
    cancel: CancellationToken,
    hooks: Hooks,
}

impl crate::drive::WithWorkload for RunWith {
    type Output = std::pin::Pin<Box<dyn std::future::Future<Output = Result<StudyOutcome>> + Send>>;
    fn with<W: crate::drive::Driven>(self) -> Self::Output {
        Box::pin(run_with::<W>(self.cfg, self.cancel, self.hooks))
    }
}

/// A study of built-in workload `W`.
async fn run_with<W: crate::drive::Driven>(
    cfg: StudyConfig,
    cancel: CancellationToken,
    hooks: Hooks,
) -> Result<StudyOutcome> {
    let (cells, header, driver) = drivers::builtin::prepare::<W>(&cfg)?;
    run_study(cfg, cancel, cells, header, driver, hooks).await
}

/// A study of an external load: templates checked before anything starts.
async fn run_external(
    cfg: StudyConfig,
    cancel: CancellationToken,
    hooks: Hooks,
) -> Result<StudyOutcome> {
    let (cells, header, driver) = drivers::load_cmd::prepare(&cfg)?;
    run_study(cfg, cancel, cells, header, driver, hooks).await
}

/// A study of pgbench scripts: every script parsed (and every expression)
/// before anything starts.
async fn run_scripts(
    cfg: StudyConfig,
    cancel: CancellationToken,
    hooks: Hooks,
) -> Result<StudyOutcome> {
    let (cells, header, driver) = drivers::scripts::prepare(&cfg)?;
    run_study(cfg, cancel, cells, header, driver, hooks).await
}

/// Runs the planned runs of `cells` with `driver`: the results directory
/// and store, the servers, the template databases, the run loop, and the
/// clean-up on every way out.
async fn run_study<D: Driver>(
    cfg: StudyConfig,
    cancel: CancellationToken,
    cells: Vec<Cell>,
    header: StudyHeader,
    driver: D,
    hooks: Hooks,
) -> Result<StudyOutcome> {
    // Before anything runs: an address that cannot be bound is bad input.
    let live = cfg
        .metrics_listen
        .as_ref()
        .map(|addr| {
            let live = std::sync::Arc::new(crate::progress::live::Live::new());
            live.serve(addr).map(|server| (live, server))
        })
        .transpose()?;
    // `--cpus`: the managed server's processes and the client threads.
    let cpus = cfg.cpus.clone().unwrap_or_default();
    crate::postgres::cpus::set_server_cpus(cpus.server);
    crate::postgres::cpus::set_client_cpus(cpus.clients);
    let (template_of, variants) = template_indices(&driver, cells.len());
    let planned = schedule(&cells, cfg.repeat, cfg.order, cfg.seed);
    let mut stored = save::stored_config(&cfg, &cells, header);
    if cfg.resume.is_none() {
        check_baseline(&stored, &cells)?;
    }
    crate::engine::limits::raise_open_files(&cells, cfg.shard, cfg.pooler.process_count())
        .map_err(BadInput)?;
    let (dir, prior, fresh) = results_dir(&cfg, &planned)?;
    let progress = Progress::new(cfg.quiet)
        .with_live(live.as_ref().map(|(l, _)| l.clone()))
        .with_tick_hook(hooks.on_tick);
    if let Some((_, server)) = &live {
        progress.note(&format!("metrics: http://{}/metrics", server.local_addr()));
    }
    // Database names: per process, or, sharded, the same in every shard
    // (from the study's id).
    let id = match cfg.shard {
        Some(_) => shard::study_id(&study_key(&cfg, &planned)),
        None => std::process::id().to_string(),
    };
    let mut study = Study {
        cfg: &cfg,
        driver: &driver,
        cancel: &cancel,
        template_of,
        templates: (0..variants)
            .map(|i| format!("isobench_tmpl_{id}_{i}"))
            .collect(),
        run_db: format!("isobench_run_{id}"),
        log: dir.join(store::SERVER_LOG),
        dir,
        // Clients + observer + admin + invariant check, with room to spare.
        connections: max_connections(&cfg, &cells) + 20,
        progress,
        coord: None,
        tx_log: hooks.tx_log,
        reports: hooks.reports,
    };
    let first_key = planned
        .first()
        .map(|r| server_key(&r.cell))
        .unwrap_or_default();
    let mut server = match study.start_server(first_key).await {
        Ok(s) => Some(s),
        Err(e) => {
            // Nothing measured: no empty directory left behind.
            if let Some(f) = &fresh {
                f.remove_if_empty();
            }
            return Err(e);
        }
    };
    let srv = server.as_ref().expect("just started");
    if in_place(&cfg) {
        // isobench pgbench on a named server: the runs use its database.
        study.run_db = srv.target.admin_db();
    }
    // Named once the server runs: a start that fails removes it.
    study
        .progress
        .note(&format!("results: {}", study.dir.display()));
    study.progress.note(&format!("target: {}", srv.describe()));
    stored.target = srv.describe();
    if let Some(spec) = cfg.shard {
        let coord = shard::Coord::open(&srv.target, spec, id.clone(), cfg.shard_wait).await;
        match coord {
            Ok(c) => {
                study.progress.note(&format!(
                    "shard {spec}: study {id}, coordinated in schema {} of database {}",
                    shard::SCHEMA,
                    srv.target.admin_db()
                ));
                study.coord = Some(c);
            }
            Err(e) => {
                if let Some(f) = &fresh {
                    f.remove_if_empty();
                }
                return Err(e);
            }
        }
    }
    let mut results =
        save::starting_results(prior, stored, &srv.env, planned.len(), &study.progress);
    let mut db = save::open_store(&cfg, &study.dir, &results)?;
    save(
        &study.dir,
        &mut db,
        &results,
        None,
        study.reports.as_deref(),
    )?;
    let todo = schedule::remaining(&planned, &results.runs);

    // Everything between creating databases and dropping them, so that
    // every way out of it (done, Ctrl-C, error) reaches the clean-up in
    // `finish`.
    study
        .progress
        .start(planned.len(), results.runs.len(), cfg.warmup + cfg.duration);
    let hunt_started = std::time::Instant::now();
    let mut body = study
        .run_all(todo, &mut server, &mut results, &mut db)
        .await;
    // `--precision`: another interleaved round of the cells that have not
    // reached the target, until all have or the maximum. `--hunt`: of the
    // cells still hunting, until all have a violation or a bound, or the
    // budget is spent.
    let mut total = planned.len();
    while body.is_ok() && !cancel.is_cancelled() {
        let round = match (cfg.precision, cfg.hunt) {
            (Some(p), _) => precision::next_round(&cells, &results, p, cfg.exclude_faulted),
            (None, Some(h)) => {
                let left = h.budget_s - hunt_started.elapsed().as_secs_f64();
                let line = hunt::status(&cells, &results, &h, left.max(0.0));
                study.progress.note(&line);
                study.progress.goal(&line);
                if left <= 0.0 {
                    study
                        .progress
                        .note("hunt: the time budget (--hunt-for) is spent");
                    break;
                }
                hunt::next_round(&cells, &results, &h)
            }
            (None, None) => break,
        };
        if round.is_empty() {
            break;
        }
        study.progress.more(round.len());
        total += round.len();
        let next = results.runs.iter().map(|r| r.index).max().unwrap_or(0) + 1;
        let todo: Vec<(u32, &ScheduledRun)> = round
            .iter()
            .enumerate()
            .map(|(i, r)| (next + i as u32, r))
            .collect();
        body = study
            .run_all(todo, &mut server, &mut results, &mut db)
            .await;
    }
    study.finish(body, server, results, db, total).await
}

/// Whether the runs use the target's own database (`isobench pgbench` on
/// a named server): no template, no copy, nothing dropped.
/// The server connections of the busiest cell: its clients', its
/// application pool's, or pgbouncer's pool; an external load may open as
/// many as its clients or its pool size, whichever is larger.
fn max_connections(cfg: &StudyConfig, cells: &[Cell]) -> u32 {
    if cfg.load.active() {
        cfg.clients.iter().chain(&cfg.pool_size).copied().max()
    } else {
        cells.iter().map(Cell::server_connections).max()
    }
    .unwrap_or(1)
}

fn in_place(cfg: &StudyConfig) -> bool {
    cfg.pgbench.as_ref().is_some_and(|p| p.in_place)
}

/// The template database of every one of `cells` cells (an index), one
/// per distinct data variant of `driver`, and the number of templates.
fn template_indices<D: Driver>(driver: &D, cells: usize) -> (Vec<usize>, usize) {
    let mut data_keys: Vec<String> = Vec::new();
    let template_of: Vec<usize> = (0..cells)
        .map(|i| {
            let key = driver.data_key(i);
            match data_keys.iter().position(|k| *k == key) {
                Some(i) => i,
                None => {
                    data_keys.push(key);
                    data_keys.len() - 1
                }
            }
        })
        .collect();
    (template_of, data_keys.len())
}

/// Refuses a bad `--baseline` (in `stored`) before anything starts.
fn check_baseline(stored: &StoredConfig, cells: &[Cell]) -> Result<()> {
    let probe = Results {
        schema_version: store::SCHEMA_VERSION,
        isobench_version: String::new(),
        started_at: String::new(),
        finished_at: None,
        complete: false,
        config: stored.clone(),
        environment: Environment::default(),
        load: Vec::new(),
        runs: Vec::new(),
    };
    let planned_cells: Vec<&Cell> = cells.iter().collect();
    report::analysis::cells::check_baseline_among(&probe, &planned_cells)
        .map_err(|e| anyhow!("--baseline: {e}"))
}

/// The distinct cells of `planned`, in order of first run.
fn distinct_planned(planned: &[ScheduledRun]) -> Vec<Cell> {
    let mut cells: Vec<Cell> = Vec::new();
    for p in planned {
        if !cells.contains(&p.cell) {
            cells.push(p.cell.clone());
        }
    }
    cells
}

/// The results directory, the results to resume there, if any, and
/// for a new directory what was created for it. Resume: the runs already
/// measured stay; interrupted ones run again.
fn results_dir(
    cfg: &StudyConfig,
    planned: &[ScheduledRun],
) -> Result<(PathBuf, Option<Results>, Option<store::NewDir>)> {
    Ok(match &cfg.resume {
        Some(dir) => {
            let prior = store::load_dir_to_resume(dir)?;
            match cfg.precision {
                // Repetitions beyond the first stage were added by the
                // sequential rule, up to the maximum.
                Some(p) => {
                    let cells: Vec<Cell> = distinct_planned(planned);
                    let most = schedule(&cells, p.max_repeat, cfg.order, cfg.seed);
                    schedule::check_resumable(&prior, &most)?;
                }
                None => schedule::check_resumable(&prior, planned)?,
            }
            (dir.to_path_buf(), Some(prior), None)
        }
        None => {
            let d = store::create_results_dir(cfg.out.as_deref(), "", store::RESULTS_JSON)?;
            (d.path.clone(), None, Some(d))
        }
    })
}

/// What every run of a study shares: the configuration, the driver, the
/// template database of every cell (by index into `templates`), the run
/// database, the results directory and server log.
struct Study<'a, D> {
    cfg: &'a StudyConfig,
    driver: &'a D,
    cancel: &'a CancellationToken,
    template_of: Vec<usize>,
    templates: Vec<String>,
    run_db: String,
    dir: PathBuf,
    log: PathBuf,
    /// The connections a server must accept.
    connections: u32,
    progress: Progress,
    /// A sharded study's coordination (`--shard`).
    coord: Option<shard::Coord>,
    /// Every run's transaction log, if any ([`Hooks::tx_log`]).
    tx_log: Option<crate::engine::txlog::TxLogHook>,
    /// [`Hooks::reports`].
    reports: Option<Arc<dyn Reports>>,
}

/// What identifies a study to its shards: its planned runs (cells,
/// repetitions, order), seed, durations and workload, as text
/// ([`shard::study_id`] hashes it).
fn study_key(cfg: &StudyConfig, planned: &[ScheduledRun]) -> String {
    let mut key = format!(
        "{} seed={} warmup={:?} duration={:?} transactions={:?};",
        cfg.workload, cfg.seed, cfg.warmup, cfg.duration, cfg.transactions
    );
    for r in planned {
        key.push_str(&format!(
            "{}#{}#{};",
            r.cell.label(),
            r.repetition,
            r.cell_index
        ));
    }
    key
}

impl<D: Driver> Study<'_, D> {
    /// Starts the server for `key` (binaries, settings).
    async fn start_server(
        &self,
        key: (Option<String>, std::collections::BTreeMap<String, String>),
    ) -> Result<Server> {
        start_server(
            self.cfg,
            key,
            &self.log,
            self.connections,
            self.templates.len(),
        )
        .await
    }

    /// Runs `todo` (run number, planned run) until done, cancelled or
    /// failed, saving after every run.
    async fn run_all(
        &self,
        todo: Vec<(u32, &ScheduledRun)>,
        server: &mut Option<Server>,
        results: &mut Results,
        db: &mut Store,
    ) -> Result<()> {
        for (index, run) in todo {
            if self.cancel.is_cancelled() {
                break;
            }
            let key = server_key(&run.cell);
            if server.as_ref().is_none_or(|s| s.key != key) {
                // Stop the old server first: one server at a time.
                drop(server.take());
                self.progress.note(&format!(
                    "restarting the server: pg_bin={} settings {}",
                    key.0.as_deref().unwrap_or("(default)"),
                    fmt_settings(&key.1)
                ));
                *server = Some(self.start_server(key).await?);
            }
            let srv = server.as_mut().expect("started above");
            srv.ensure_admin(self.cfg.server_wait).await?;
            srv.prepare_run(self.cfg, &run.cell, &self.progress).await?;
            let t = self.template_of[run.cell_index];
            // A non-zero shard: shard 0 loads and prepares; wait for it.
            if let Some(c) = self.coord.as_ref().filter(|c| c.spec.index != 0) {
                srv.loaded[t] = true;
                match c.await_prepared(index, self.cancel).await? {
                    None => break,
                    Some(shard::Join::Skip(why)) => {
                        self.progress.note(&format!("run {index} skipped: {why}"));
                        continue;
                    }
                    Some(shard::Join::Join) => {}
                }
            }
            if !srv.loaded[t] && in_place(self.cfg) {
                // The user's database, as it is: nothing to load.
                srv.loaded[t] = true;
            }
            if !srv.loaded[t] {
                let ctx = TemplateCtx {
                    srv,
                    tmpl: &self.templates[t],
                    run_db: &self.run_db,
                    dir: &self.dir,
                    progress: &self.progress,
                    cancel: self.cancel,
                };
                let Some(load) = self.driver.load_template(run.cell_index, &ctx).await? else {
                    break; // cancelled while loading
                };
                if self.driver.one_database(srv) {
                    srv.loaded.fill(false);
                }
                srv.loaded[t] = true;
                if !results.load.iter().any(|l| l.data == load.data) {
                    results.load.push(load);
                }
            }
            self.one_run(srv, t, index, run, results, db).await?;
        }
        Ok(())
    }

    /// Runs `run` (number `index`) on `srv` in a copy of template `t`,
    /// and saves it. Errors: the run could not be measured, or its
    /// driver stops the study (after saving it).
    async fn one_run(
        &self,
        srv: &Server,
        t: usize,
        index: u32,
        run: &ScheduledRun,
        results: &mut Results,
        db: &mut Store,
    ) -> Result<()> {
        self.progress.begin_run(index, &run.cell, run.repetition);
        let context = || {
            format!(
                "run {index} ({}, repetition {})",
                run.cell.label(),
                run.repetition
            )
        };
        let ctx = RunCtx {
            cfg: self.cfg,
            srv,
            tmpl: &self.templates[t],
            run_db: &self.run_db,
            dir: &self.dir,
            run,
            index,
            cancel: self.cancel,
            progress: &self.progress,
            coord: self.coord.as_ref(),
            tx_log: self.tx_log.clone(),
        };
        let (record, stop) = self.driver.one_run(&ctx).await.with_context(context)?;
        // isobench pgbench: one run, whose failures are pgbench's outcome.
        let stop = stop.or_else(|| {
            self.cfg
                .pgbench
                .is_none()
                .then(|| all_failed_alike(&record, &self.cfg.retry.retry_on))
                .flatten()
        });
        self.progress.end_run(&record);
        results.runs.push(record);
        results.runs.sort_by_key(|r| r.index);
        save(&self.dir, db, results, Some(index), self.reports.as_deref())?;
        if let Some(c) = self.coord.as_ref().filter(|c| c.spec.index == 0) {
            c.done(index).await?;
        }
        if let Some(e) = stop {
            return Err(e.context(context()));
        }
        Ok(())
    }

    /// The clean-up on every way out of the run loop (`body`): the final
    /// save and reports, the run and template databases dropped on an
    /// external server, the managed server stopped.
    async fn finish(
        self,
        body: Result<()>,
        server: Option<Server>,
        mut results: Results,
        mut db: Store,
        planned: usize,
    ) -> Result<StudyOutcome> {
        let dir = self.dir;
        self.progress.finish();
        let outcome_err = body.err();
        let interrupted = self.cancel.is_cancelled();
        results.complete = outcome_err.is_none()
            && !interrupted
            && results.runs.len() == planned
            && results.runs.iter().all(|r| r.complete);
        results.finished_at = Some(chrono::Local::now().to_rfc3339());
        save(&dir, &mut db, &results, None, None)?;
        // A study stopped by an error before its first run has nothing
        // to report (issue #49: its report said "INCOMPLETE
        // (interrupted)" over 0 runs, and stderr "completed runs are
        // saved").
        let nothing = outcome_err.is_some() && results.runs.is_empty() && !interrupted;
        if let Some(reports) = self.reports.as_deref().filter(|_| !nothing) {
            reports.at_end(&dir, &results)?;
        }
        let lead = self.coord.as_ref().is_none_or(|c| c.spec.index == 0);
        if let Some(c) = self.coord.as_ref().filter(|_| lead) {
            let _ = c.drop_schema().await;
        }
        if let Some(srv) = &server
            && matches!(srv.target, Target::External(_))
            && lead
            && !in_place(self.cfg)
        {
            let _ = drop_database(&srv.admin, &self.run_db, srv.vnum()).await;
            for tmpl in &self.templates {
                let _ = drop_database(&srv.admin, tmpl, srv.vnum()).await;
            }
        }
        drop(server); // stops a managed server
        if let Some(e) = outcome_err {
            return Err(e.context(if nothing {
                format!(
                    "no run started: nothing was measured (the server log is in {})",
                    dir.display()
                )
            } else {
                format!("completed runs are saved in {}", dir.display())
            }));
        }
        Ok(StudyOutcome {
            dir,
            results,
            interrupted,
        })
    }
}

/// A run that committed nothing and whose transactions all failed with one
/// SQLSTATE the retry policy does not retry (a script on a missing table:
/// 42P01) measured nothing, and every further run would fail the same
/// way: the study stops with this error (exit 1) after saving the run.
/// The error names the first failure's message and, for a script, its
/// file and line, from the run's Problems ([`first_failure_of`]).
fn all_failed_alike(record: &RunRecord, retry_on: &[String]) -> Option<anyhow::Error> {
    if record.committed > 0 || record.failed.len() != 1 {
        return None;
    }
    let (code, n) = record.failed.iter().next()?;
    if *n == 0 || retry_on.contains(code) {
        return None;
    }
    let first = first_failure_of(&record.errors, code)
        .map(|m| format!(" (the first: {m})"))
        .unwrap_or_default();
    Some(anyhow!(
        "all {n} transactions failed with SQLSTATE {code} ({}), which is not retried, and none committed{first}: \
         the workload cannot run as given (see Problems and the server log in the results directory)",
        sqlstate_name(code)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_that_only_failed_with_one_unretried_sqlstate_stops_the_study() {
        let retry_on = vec!["40001".to_string(), "40P01".to_string()];
        let mut run = crate::model::fixture::results().runs[0].clone();
        assert!(all_failed_alike(&run, &retry_on).is_none(), "it committed");
        run.committed = 0;
        run.failed = [("42P01".to_string(), 95_876)].into();
        let e = all_failed_alike(&run, &retry_on).unwrap().to_string();
        assert!(
            e.contains("all 95876 transactions failed with SQLSTATE 42P01"),
            "{e}"
        );
        // The first failure's message and location, from Problems.
        run.errors.push(crate::model::first_failure_line(
            "42P01",
            "m.sql:4: relation \"nope\" does not exist (42P01) (in `SELECT * FROM nope;`)",
        ));
        let e = all_failed_alike(&run, &retry_on).unwrap().to_string();
        assert!(
            e.contains(
                "none committed (the first: m.sql:4: relation \"nope\" does not exist (42P01) (in `SELECT * FROM nope;`)): the workload"
            ),
            "{e}"
        );
        // Retried failures (SERIALIZABLE at its worst) or a mix of codes
        // are results, not a broken workload.
        run.failed = [("40001".to_string(), 10)].into();
        assert!(all_failed_alike(&run, &retry_on).is_none());
        run.failed = [("42P01".to_string(), 5), ("23505".to_string(), 1)].into();
        assert!(all_failed_alike(&run, &retry_on).is_none());
    }
}
