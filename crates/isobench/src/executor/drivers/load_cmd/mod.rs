//! The driver of studies whose runs are external load commands (see
//! [`crate::load_cmd`] for the commands' life cycle).
//!
//! Data: on the managed server, `setup_cmd` fills a template database per
//! server and distinct setup command (rendered with the cell's values),
//! and every run gets a fresh copy of it, as a built-in workload's run
//! does; without `setup_cmd` the template is an empty database. On an
//! external server the load runs in the DSN's database, untouched by
//! isobench: `setup_cmd` runs there whenever the setup differs from the
//! last one run.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow, bail};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

mod vars;

use crate::executor::EXTERNAL;
use crate::executor::checks;
use crate::executor::copies::{drop_database, fresh_copy, quote_ident};
use crate::executor::drivers::services::Watchers;
use crate::executor::drivers::{Driver, RunCtx, StudyHeader, TemplateCtx};
use crate::executor::schedule::{ScheduledRun, cells, validate};
use crate::executor::target::{Server, shown_settings};
use crate::load_cmd::parse::{self};
use crate::load_cmd::template::{Template, Vars};
use crate::load_cmd::{self as ext, Finished};
use crate::model::LoadFigures;
use crate::model::LoadReport;
use crate::model::Phase;
use crate::model::{BadInput, LatencySummary, LoadFormat, ServerObservations};
use crate::model::{OnError, StudyConfig};
use crate::observe::{self, Backends};
use crate::postgres::{self, Target};
use crate::store::{Cell, LoadRecord, RunRecord};
use vars::{SERVER_VARS, cell_vars, env_of, known_placeholders, plain, server_vars, unused_note};

/// The external load of a study: its parsed templates, checked against
/// every placeholder the study can fill.
pub(in crate::executor) struct LoadCmd {
    cmd: Template,
    setup: Option<Template>,
    before_run: Option<Template>,
    after_run: Option<Template>,
    ready: Option<Template>,
    /// Per cell: its placeholder values (without the run's and server's).
    cell_vars: Vec<Vars>,
    /// Per cell: the setup command with the server's placeholders left in,
    /// the key of its data variant.
    setup_keys: Vec<String>,
    dsn: Option<String>,
}

/// The cells, stored header and driver of a study of an external load:
/// templates checked before anything starts. Notes for the user are
/// printed unless quiet.
pub(in crate::executor) fn prepare(cfg: &StudyConfig) -> Result<(Vec<Cell>, StudyHeader, LoadCmd)> {
    validate(cfg).map_err(BadInput::from_error)?;
    if !cfg.faults.is_empty() || !cfg.fault_plans.is_empty() {
        bail!(BadInput(
            "--fault and --fault-plan inject faults into isobench's own clients' runs, not into an external load's (not supported yet)".into()
        ));
    }
    if cfg.latency_limit.is_some() {
        bail!(
            "--latency-limit applies to isobench's own open-loop clients, not to an external load; give the load tool its own limit"
        );
    }
    let cells = cells(cfg)?;
    let (driver, notes) = LoadCmd::new(cfg, &cells)?;
    if !cfg.quiet {
        for n in notes {
            eprintln!("{n}");
        }
    }
    let header = StudyHeader {
        workload: EXTERNAL.into(),
        strategies: cfg.strategies.clone(),
        param_defaults: BTreeMap::new(),
    };
    Ok((cells, header, driver))
}

impl LoadCmd {
    /// Parses and checks `cfg.load`'s templates for `cells`. Returns the
    /// driver and notes for the user (a factor that varies but that no
    /// command uses).
    ///
    /// Errors (naming the option): a malformed template, an unknown
    /// placeholder, or one without a value in this study (e.g.
    /// `{pool_size}` without a pool_size factor).
    fn new(cfg: &StudyConfig, cells: &[Cell]) -> Result<(LoadCmd, Vec<String>)> {
        let l = &cfg.load;
        let parse = |option: &str, t: &Option<String>| -> Result<Option<Template>> {
            t.as_deref()
                .map(|t| Template::parse(option, t).map_err(|e| anyhow!(e)))
                .transpose()
        };
        let cmd = parse("load_cmd", &l.cmd)?.ok_or_else(|| anyhow!("no load_cmd"))?;
        let setup = parse("setup_cmd", &l.setup)?;
        let before_run = parse("before_run", &l.before_run)?;
        let after_run = parse("after_run", &l.after_run)?;
        let ready = parse("ready", &l.ready)?;
        let known = known_placeholders(cfg);
        let all: Vec<&Template> = [
            Some(&cmd),
            setup.as_ref(),
            before_run.as_ref(),
            after_run.as_ref(),
            ready.as_ref(),
        ]
        .into_iter()
        .flatten()
        .collect();
        for t in &all {
            t.check(&known).map_err(|e| anyhow!(e))?;
        }
        if let Some(s) = &setup {
            for name in ["run", "repetition", "seed"] {
                if s.uses(name) {
                    bail!(
                        "setup_cmd: placeholder {{{name}}} has no value: setup_cmd runs once per server and setup, not per run"
                    );
                }
            }
        }
        let mut notes = Vec::new();
        let uses = |names: &[&str]| all.iter().any(|t| names.iter().any(|n| t.uses(n)));
        let mut varying: Vec<(String, usize)> = vec![
            ("clients".into(), cfg.clients.len()),
            ("pool_size".into(), cfg.pool_size.len()),
            ("rate".into(), cfg.rate.len()),
            ("scale".into(), cfg.scale.len()),
            ("max_tries".into(), cfg.max_tries.len()),
            ("strategy".into(), cfg.strategies.len()),
        ];
        varying.extend(cfg.params.iter().map(|(k, v)| (k.clone(), v.len())));
        if cfg.isolation.len() > 1 && !uses(&["isolation", "isolation_short", "isolation_sql"]) {
            notes.push(unused_note("isolation"));
        }
        for (name, n) in varying {
            if n > 1 && !uses(&[&name]) {
                notes.push(unused_note(&name));
            }
        }
        let cell_vars: Vec<Vars> = cells.iter().map(|c| cell_vars(cfg, c)).collect();
        let setup_keys = cell_vars
            .iter()
            .map(|v| {
                let Some(s) = &setup else {
                    return Ok(String::new());
                };
                let mut v = v.clone();
                for name in SERVER_VARS {
                    v.insert(name.into(), plain(&format!("{{{name}}}")));
                }
                s.render(&v).map_err(|e| anyhow!(e))
            })
            .collect::<Result<_>>()?;
        Ok((
            LoadCmd {
                cmd,
                setup,
                before_run,
                after_run,
                ready,
                cell_vars,
                setup_keys,
                dsn: cfg.target.dsn.clone(),
            },
            notes,
        ))
    }

    /// The placeholder values of a run of `cell` on `srv` in `database`.
    fn vars(&self, cell: usize, srv: &Server, database: &str, extra: &[(&str, String)]) -> Vars {
        let mut v = self.cell_vars[cell].clone();
        v.extend(server_vars(&srv.target, database, self.dsn.as_deref()));
        for (k, val) in extra {
            v.insert((*k).into(), plain(val));
        }
        v
    }
}

/// The database the load runs in on `srv`: a copy per run on the managed
/// server, the DSN's on an external one.
fn load_database(srv: &Server, run_db: &str) -> String {
    match srv.target {
        Target::Managed(_) => run_db.to_string(),
        Target::External(_) => srv.target.admin_db(),
    }
}

/// Runs template `t` (rendered with `vars`) to its end, output in
/// `dir/name.out` and `.err`. Errors: it cannot start, or (with a
/// message naming it and the end of its stderr) it failed.
async fn step(
    t: &Template,
    vars: &Vars,
    dir: &Path,
    name: &str,
    limit: Option<Duration>,
    cancel: &CancellationToken,
) -> Result<Finished, String> {
    let cmd = t.render(vars)?;
    let (out, err) = (
        dir.join(format!("{name}.out")),
        dir.join(format!("{name}.err")),
    );
    let f = ext::run_to_end(&cmd, &env_of(vars), &out, &err, limit, cancel).await?;
    if f.ok() || f.stopped == Some(ext::Stopped::Interrupted) {
        return Ok(f);
    }
    Err(failure(t, vars, &f, &err))
}

/// `before_run `cmd` exited with status 1 (see ...: last lines)`.
fn failure(t: &Template, vars: &Vars, f: &Finished, err: &Path) -> String {
    let shown = t.render_shown(vars).unwrap_or_default();
    let last = ext::tail(err, 3);
    format!(
        "{} `{shown}` {} (stderr in {}{})",
        t.option(),
        f.describe(),
        err.display(),
        if last.is_empty() {
            String::new()
        } else {
            format!(": {last}")
        }
    )
}

impl Driver for LoadCmd {
    fn data_key(&self, cell: usize) -> String {
        self.setup_keys[cell].clone()
    }

    fn one_database(&self, srv: &Server) -> bool {
        matches!(srv.target, Target::External(_))
    }

    async fn load_template(
        &self,
        cell: usize,
        ctx: &TemplateCtx<'_>,
    ) -> Result<Option<LoadReport>> {
        let TemplateCtx {
            srv,
            tmpl,
            run_db,
            dir,
            progress,
            cancel,
        } = *ctx;
        let started = Instant::now();
        let database = match srv.target {
            Target::Managed(_) => {
                drop_database(&srv.admin, run_db, srv.vnum()).await?;
                drop_database(&srv.admin, tmpl, srv.vnum()).await?;
                srv.admin
                    .batch_execute(&format!("CREATE DATABASE {}", quote_ident(tmpl)))
                    .await
                    .map_err(|e| anyhow!("CREATE DATABASE {tmpl}: {}", postgres::error_text(&e)))?;
                tmpl.to_string()
            }
            Target::External(_) => srv.target.admin_db(),
        };
        if let Some(setup) = &self.setup {
            let key = &self.setup_keys[cell];
            progress.note(&format!("setup: {key}"));
            let out = dir.join("load");
            std::fs::create_dir_all(&out)
                .map_err(|e| anyhow!("cannot create {}: {e}", out.display()))?;
            let n = std::fs::read_dir(&out).map(|d| d.count()).unwrap_or(0);
            let vars = self.vars(cell, srv, &database, &[]);
            let f = step(setup, &vars, &out, &format!("setup-{n}"), None, cancel)
                .await
                .map_err(|e| anyhow!(e))?;
            if f.stopped.is_some() {
                return Ok(None);
            }
            progress.note(&format!(
                "setup done in {:.2} s",
                started.elapsed().as_secs_f64()
            ));
        }
        Ok(Some(LoadReport {
            data: self.setup_keys[cell].clone(),
            elapsed: started.elapsed(),
            rows: 0,
        }))
    }

    async fn one_run(&self, ctx: &RunCtx<'_>) -> Result<(RunRecord, Option<anyhow::Error>)> {
        let RunCtx {
            cfg,
            srv,
            tmpl,
            run_db,
            dir,
            run,
            index,
            progress,
            ..
        } = *ctx;
        let started_at = chrono::Local::now().to_rfc3339();
        let database = load_database(srv, run_db);
        let (check_db, reset_ms, mut errors) = match srv.target {
            Target::Managed(_) => fresh_copy(srv, tmpl, run_db).await?,
            Target::External(_) => {
                let mut c = srv.target.config(&database);
                postgres::own_session(&mut c, "check");
                (postgres::connect(&c).await?, 0.0, Vec::new())
            }
        };
        let (server_version, server_settings) = shown_settings(&check_db, cfg, &run.cell).await?;
        drop(check_db);
        let rel = format!("load/run-{index}");
        let out = dir.join(&rel);
        std::fs::create_dir_all(&out)
            .map_err(|e| anyhow!("cannot create {}: {e}", out.display()))?;
        let seed = cfg.seed.wrapping_add(u64::from(index) << 32);
        let vars = self.run_vars(ctx, &database, seed);
        let format = cfg
            .load
            .format
            .resolve(&self.cmd.render(&vars).unwrap_or_default());
        let shown = self.cmd.render_shown(&vars).map_err(|e| anyhow!(e))?;

        // before_run and its background processes, readiness, the load
        // under observation, after_run; the first failure ends the steps.
        let mut st = Steps::default();
        self.before_run(ctx, &vars, &out, &mut st).await?;
        self.wait_ready(ctx, &vars, &out, &mut st).await?;
        self.load(ctx, &vars, &out, &database, format, &mut st)
            .await?;
        // The declared checks, after the load and before after_run (which
        // may clean up); one that fails to run stops the study after the
        // run is saved.
        let (invariants, check_failed) =
            declared_checks(ctx, &database, &mut st, &mut errors).await;
        self.after_run(ctx, &vars, &out, &mut errors).await;
        if let Some(g) = st.app.take() {
            g.stop().await;
        }

        let Steps {
            failure_msg,
            ready_s,
            load,
            server,
            ..
        } = st;
        let interrupted = ctx.cancel.is_cancelled();
        let (finished, figures) = match load {
            Some((f, parsed)) => (Some(f), parsed.ok().flatten()),
            None => (None, None),
        };
        if let Some(m) = &failure_msg {
            errors.push(m.clone());
            progress.note(&format!("run {index} ({}) failed: {m}", run.cell.label()));
        }
        errors.extend(server.errors.iter().cloned());
        let wall_s = finished.as_ref().map_or(0.0, |f| f.wall.as_secs_f64());
        let seen = Seen {
            seed,
            started_at,
            complete: !interrupted && failure_msg.is_none(),
            wall_s,
            reset_ms,
            server,
            errors,
            server_version,
            server_settings,
            invariants,
        };
        let record = record(
            run,
            index,
            figures.as_ref(),
            seen,
            LoadRecord {
                command: shown,
                format,
                exit_code: finished.as_ref().and_then(|f| f.exit_code),
                wall_s,
                ready_s,
                output_dir: rel,
                figures: figures.clone(),
            },
        );
        let stop = check_failed.or_else(|| stop_of(failure_msg.as_deref(), cfg.load.on_error));
        Ok((record, stop))
    }
}

/// Runs the study's declared checks in `database` after a run's load,
/// with what their samples saw during it (`st.during`). Returns their
/// results and, when one failed to run, the error that stops the study;
/// problems go to `errors`. Nothing when the study declares no check.
async fn declared_checks(
    ctx: &RunCtx<'_>,
    database: &str,
    st: &mut Steps,
    errors: &mut Vec<String>,
) -> (Vec<crate::model::InvariantResult>, Option<anyhow::Error>) {
    let checks = &ctx.cfg.checks;
    if checks.is_empty() {
        return (Vec::new(), None);
    }
    let during = match st.during.take() {
        Some(Ok(d)) => {
            errors.extend(d.stopped);
            d.seen
        }
        Some(Err(e)) => {
            errors.push(format!("declared checks not counted: {e:#}"));
            return (Vec::new(), Some(e));
        }
        None => Vec::new(),
    };
    let mut config = ctx.srv.target.config(database);
    postgres::own_session(&mut config, "check");
    let result = match postgres::connect(&config).await {
        Ok(db) => checks::after_run(&db, checks, &during).await,
        Err(e) => Err(anyhow!(e)),
    };
    match result {
        Ok(inv) => (inv, None),
        Err(e) => {
            errors.push(format!("declared checks not counted: {e:#}"));
            (Vec::new(), Some(e))
        }
    }
}

/// The error that stops the study after a run that failed with
/// `failure_msg`, when `on_error` says to stop.
fn stop_of(failure_msg: Option<&str>, on_error: OnError) -> Option<anyhow::Error> {
    match (failure_msg, on_error) {
        (Some(m), OnError::Stop) => Some(anyhow!(
            "{m}\n(on_error = \"stop\"; set on_error = \"continue\" or --on-error continue to go on after a failed run)"
        )),
        _ => None,
    }
}

/// The steps of a run so far: the first failure, the application
/// `before_run` left running (and whether readiness should watch it), the
/// time to readiness (s), the load's end and parsed figures, and the
/// server's observations during the load.
#[derive(Default)]
struct Steps {
    failure_msg: Option<String>,
    app: Option<ext::Group>,
    watch_app: bool,
    ready_s: Option<f64>,
    load: Option<(Finished, Result<Option<LoadFigures>, String>)>,
    server: ServerObservations,
    /// What the declared checks with `during` saw while the load ran;
    /// `None` when the load did not run.
    during: Option<Result<checks::During>>,
}

impl LoadCmd {
    /// The placeholder values of run `ctx.run` (seed `seed`) in
    /// `database`.
    fn run_vars(&self, ctx: &RunCtx<'_>, database: &str, seed: u64) -> Vars {
        let (run, index) = (ctx.run, ctx.index);
        self.vars(
            run.cell_index,
            ctx.srv,
            database,
            &[
                ("run", index.to_string()),
                ("repetition", run.repetition.to_string()),
                ("seed", seed.to_string()),
                ("out", ctx.dir.display().to_string()),
            ],
        )
    }

    /// `before_run`, if any, output in `out`; what it leaves running is
    /// the application.
    async fn before_run(
        &self,
        ctx: &RunCtx<'_>,
        vars: &Vars,
        out: &Path,
        st: &mut Steps,
    ) -> Result<()> {
        let Some(t) = &self.before_run else {
            return Ok(());
        };
        ctx.progress.status("before_run");
        let cmd = t.render(vars).map_err(|e| anyhow!(e))?;
        let err = out.join("before_run.err");
        let (f, group) = ext::run(
            &cmd,
            &env_of(vars),
            &out.join("before_run.out"),
            &err,
            None,
            ctx.cancel,
        )
        .await
        .map_err(|e| anyhow!(e))?;
        if !f.ok() && f.stopped.is_none() {
            st.failure_msg = Some(failure(t, vars, &f, &err));
        }
        // Something left running (the application): readiness is
        // pointless once it has exited.
        st.watch_app = group.alive();
        st.app = Some(group);
        Ok(())
    }

    /// Waits for `ready`, if any and nothing failed yet.
    async fn wait_ready(
        &self,
        ctx: &RunCtx<'_>,
        vars: &Vars,
        out: &Path,
        st: &mut Steps,
    ) -> Result<()> {
        let cancel = ctx.cancel;
        if let (Some(t), None) = (&self.ready, &st.failure_msg)
            && !cancel.is_cancelled()
        {
            ctx.progress.status("waiting for readiness");
            let target = t.render(vars).map_err(|e| anyhow!(e))?;
            match ext::wait_ready(
                &target,
                &env_of(vars),
                &out.join("ready.out"),
                &out.join("ready.err"),
                ctx.cfg.load.ready_timeout,
                st.app.as_ref().filter(|_| st.watch_app),
                cancel,
            )
            .await
            {
                Ok(d) => st.ready_s = Some(d.as_secs_f64()),
                Err(e) if !cancel.is_cancelled() => {
                    st.failure_msg = Some(format!(
                        "ready `{}`: {e}",
                        t.render_shown(vars).unwrap_or_default()
                    ))
                }
                Err(_) => {}
            }
        }
        Ok(())
    }

    /// The load itself, if nothing failed yet, under observation of
    /// `database`; its output in `out`, parsed as `format`.
    async fn load(
        &self,
        ctx: &RunCtx<'_>,
        vars: &Vars,
        out: &Path,
        database: &str,
        format: LoadFormat,
        st: &mut Steps,
    ) -> Result<()> {
        let (cfg, cancel) = (ctx.cfg, ctx.cancel);
        if st.failure_msg.is_some() || cancel.is_cancelled() {
            return Ok(());
        }
        ctx.progress.status("load running");
        let (phase_tx, _) = watch::channel(Phase::Measuring);
        let options = observe::ObserveOptions {
            level: cfg.observe,
            sample_interval: cfg.sample_interval,
            backends: Backends::All,
            // An external load's isolation level is its own.
            siread_locks: true,
        };
        let config = ctx.srv.target.config(database);
        let watchers = Watchers::start(
            cfg,
            (&config, database),
            Vec::new(),
            options,
            true,
            &phase_tx,
        );
        let cmd = self.cmd.render(vars).map_err(|e| anyhow!(e))?;
        let (o, e) = (out.join("load.out"), out.join("load.err"));
        let finished =
            ext::run_to_end(&cmd, &env_of(vars), &o, &e, cfg.load.timeout(), cancel).await;
        phase_tx.send_replace(Phase::Draining);
        let watched = watchers.finish().await;
        st.server = watched.server;
        st.during = Some(watched.during);
        let f = finished.map_err(|e| anyhow!(e))?;
        if f.stopped != Some(ext::Stopped::Interrupted) {
            if !f.ok() {
                st.failure_msg = Some(failure(&self.cmd, vars, &f, &e));
            }
            let text = std::fs::read_to_string(&o).unwrap_or_default();
            let parsed = parse::parse(format, &text);
            if let (Err(p), None) = (&parsed, &st.failure_msg) {
                st.failure_msg = Some(format!(
                    "load_cmd output ({}) is not {}'s: {p}",
                    o.display(),
                    format.name()
                ));
            }
            st.load = Some((f, parsed));
        } else {
            st.load = Some((f, Ok(None)));
        }
        Ok(())
    }

    /// `after_run`, if any: clean-up runs even after Ctrl-C, bounded; its
    /// failure goes to `errors`.
    async fn after_run(&self, ctx: &RunCtx<'_>, vars: &Vars, out: &Path, errors: &mut Vec<String>) {
        if let Some(t) = &self.after_run {
            ctx.progress.status("after_run");
            let fresh = CancellationToken::new();
            if let Err(e) = step(
                t,
                vars,
                out,
                "after_run",
                Some(Duration::from_secs(60)),
                &fresh,
            )
            .await
            {
                errors.push(e);
            }
        }
    }
}

/// What a run of an external load saw besides its figures: its seed, when
/// it started, whether it completed, its wall time (s), the fresh copy's
/// time (ms), the observations, problems, and the server's version and
/// settings.
struct Seen {
    seed: u64,
    started_at: String,
    complete: bool,
    wall_s: f64,
    reset_ms: f64,
    server: ServerObservations,
    errors: Vec<String>,
    server_version: String,
    server_settings: BTreeMap<String, String>,
    /// The declared checks' results.
    invariants: Vec<crate::model::InvariantResult>,
}

/// A run record from an external load's figures: throughput, count and
/// latency as the tool reported them (0 where it reports nothing), and
/// pgbench's failures by SQLSTATE (`--failures-detailed`) and retries.
fn record(
    run: &ScheduledRun,
    index: u32,
    f: Option<&LoadFigures>,
    seen: Seen,
    load: LoadRecord,
) -> RunRecord {
    let Seen {
        seed,
        started_at,
        complete,
        wall_s,
        reset_ms,
        server,
        errors,
        server_version,
        server_settings,
        invariants,
    } = seen;
    let g = |x: fn(&LoadFigures) -> Option<f64>| f.and_then(x).unwrap_or(0.0);
    let committed = f.map_or(0, |f| f.count);
    let duration_s = f.and_then(|f| f.duration_s).unwrap_or(wall_s);
    let mut failed = BTreeMap::new();
    if let Some(f) = f {
        for (code, n) in [
            ("40001", f.serialization_failures),
            ("40P01", f.deadlock_failures),
        ] {
            if let Some(n) = n.filter(|n| *n > 0) {
                failed.insert(code.to_string(), n);
            }
        }
    }
    let failed_n = f.and_then(|f| f.failed).unwrap_or(0);
    let retries = f.and_then(|f| f.retries).unwrap_or(0);
    RunRecord {
        index,
        cell: run.cell.clone(),
        repetition: run.repetition,
        seed,
        started_at,
        complete,
        duration_s,
        committed,
        tps: f.map_or(0.0, |f| f.throughput),
        effective_tps: None,
        tpmc: None,
        attempts: committed + failed_n + retries,
        retries,
        failed,
        failed_by_type: BTreeMap::new(),
        unknown_outcome: 0,
        user_aborts: 0,
        failure_pct: if committed + failed_n > 0 {
            100.0 * failed_n as f64 / (committed + failed_n) as f64
        } else {
            0.0
        },
        retries_per_commit: if committed > 0 {
            retries as f64 / committed as f64
        } else {
            0.0
        },
        wasted_ms: 0.0,
        wasted_attempts: 0,
        abort_ratio: 0.0,
        wasted_time_pct: 0.0,
        transactions: Vec::new(),
        latency_ms: LatencySummary {
            mean: g(|f| f.latency_mean_ms),
            p50: g(|f| f.latency_p50_ms),
            p90: g(|f| f.latency_p90_ms),
            p95: 0.0,
            p99: g(|f| f.latency_p99_ms),
            p999: 0.0,
            max: g(|f| f.latency_max_ms),
        },
        latency_histogram: String::new(),
        per_second: Vec::new(),
        client_cpu_s: 0.0,
        client_cpu_us_per_tx: 0.0,
        host_cpu: None,
        lifetime: Default::default(),
        reset_ms,
        server,
        anomalies: invariants.iter().map(|i| i.violations).sum(),
        invariants,
        errors,
        pool_wait_ms: None,
        schedule_lag_ms: None,
        skipped: f.and_then(|f| f.skipped).unwrap_or(0),
        late: 0,
        server_version,
        server_settings,
        load: Some(load),
        faults: None,
        window_start: None,
        shard_clients: None,
        hosts: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Isolation, TargetConfig};

    fn cfg() -> StudyConfig {
        let mut c = crate::study::defaults();
        c.load.cmd = Some("pgbench -c {clients} -T {duration_s} {dsn}".into());
        c.clients = vec![1, 4];
        c.target = TargetConfig::default();
        c.resolve()
    }

    #[test]
    fn templates_are_checked_before_anything_runs() {
        let mut c = cfg();
        let cells = crate::executor::cells(&c).unwrap();
        assert_eq!(cells.len(), 2);
        assert_eq!(c.isolation, vec![Isolation::ReadCommitted]);
        let (ext, notes) = LoadCmd::new(&c, &cells).unwrap();
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(ext.cell_vars[1]["clients"].text, "4");
        assert_eq!(ext.cell_vars[1]["duration_s"].text, "10");

        c.load.before_run = Some("./app --pool {pool_size}".into());
        let e = LoadCmd::new(&c, &cells).err().unwrap().to_string();
        assert!(
            e.starts_with("before_run: placeholder {pool_size} (offset 13) has no value: pool_size is not a factor"),
            "{e}"
        );
        c.load.before_run = None;
        c.load.after_run = Some("echo {clinets}".into());
        let e = LoadCmd::new(&c, &cells).err().unwrap().to_string();
        assert!(
            e.starts_with("after_run: unknown placeholder {clinets}"),
            "{e}"
        );
        c.load.after_run = None;
        c.load.setup = Some("pgbench -i {run}".into());
        let e = LoadCmd::new(&c, &cells).err().unwrap().to_string();
        assert!(e.contains("setup_cmd: placeholder {run}"), "{e}");
    }

    #[test]
    fn a_factor_no_command_uses_gets_a_note() {
        let mut c = cfg();
        c.pool_size = vec![10, 25];
        c.params = vec![("workers".into(), vec!["2".into(), "4".into()])];
        c.load.setup = Some("pgbench -i -s {workers} {dsn}".into());
        let cells = crate::executor::cells(&c).unwrap();
        assert_eq!(cells.len(), 2 * 2 * 2);
        let (ext, notes) = LoadCmd::new(&c, &cells).unwrap();
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("pool_size varies") && notes[0].contains("$ISOBENCH_POOL_SIZE"));
        // Two data variants, keyed by the setup with the server's
        // placeholders left in.
        assert_eq!(ext.data_key(0), "pgbench -i -s 2 {dsn}");
        let keys: std::collections::BTreeSet<String> =
            (0..cells.len()).map(|i| ext.data_key(i)).collect();
        assert_eq!(keys.len(), 2);
    }
}
