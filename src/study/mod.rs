//! Experiment files: a study as TOML (`isobench run study.toml`).
//!
//! Every `isobench run` flag has a key of the same name in snake_case
//! (`--pool-size` is `pool_size`, `--set` is the `[settings]` table,
//! `--param` the `[params]` table). A factor takes one value or a list;
//! a list makes the factor vary, and the cells are the cross product of
//! all factors. Factors may be written at the top level or in a
//! `[factors]` table, not both:
//!
//! ```toml
//! workload = "tpcb"
//! scale = 1
//! repeat = 2
//! duration = "2s"
//! warmup = "1s"
//! [factors]
//! isolation = ["rc", "ser"]
//! clients = [8]
//! pool_size = [2, 8]
//! [factors.settings]          # server settings as a factor (managed server)
//! max_pred_locks_per_transaction = [64, 256]
//! ```
//!
//! An external load replaces the workload: `load_cmd` (a command run once
//! per run, with `{clients}`, `{pool_size}`, `{isolation}`, `{dsn}` and
//! other placeholders), `setup_cmd`, `before_run`, `after_run`, `ready`,
//! `ready_timeout`, `load_format`, `on_error` and `load_timeout`, as the
//! `--load-cmd` ... flags (see [`crate::external`]). Its `[params]` are
//! free placeholders, e.g. `app_workers = [2, 4]` for `{app_workers}`.
//!
//! pgbench scripts: `file = ["tpcb-one.sql@1", "other.sql@3"]` (paths
//! relative to the experiment file), `builtin = "tpcb-like"`, a `[define]`
//! table of variables, `protocol` and `init_sql`, as `-f`, `-b`, `-D`, `-M`
//! and `--init-sql`.
//!
//! Server builds: `pg_bin` takes a directory, a list of directories, or a
//! table of name = directory (`pg_bin = { stock = "/usr/lib/postgresql/15/bin",
//! finer-lock = "/opt/pg-patched/bin" }`), each checked as `--pg-bin
//! [NAME=]DIR` is; one build is the server, several a factor whose cells
//! hold the labels (see [`crate::model::build_labels`]).
//!
//! A `[settings]` entry with one value is a fixed server setting (like
//! `--set`); with a list it is a factor. `[params]` holds workload
//! parameters the same way. Unknown keys and invalid values are errors
//! naming the file, line, column and key. Command-line flags override the
//! file's values (`--set`/`--param` per name).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::{Spanned, Value};

use crate::model::{Backoff, ExperimentConfig, Isolation, ObserveLevel, OnError, Order};
use crate::model::{LoadFormat, PgBuild, PgBuildError, dedup_builds};

/// An error in an experiment file, located at `line:column` (1-based).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}:{line}:{column}: {message}")]
pub struct StudyError {
    pub path: String,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

mod raw;

use raw::*;

/// Reads the experiment file `path` over `base` (the defaults).
///
/// Errors: the file cannot be read, is not TOML, has an unknown key, or a
/// value that is invalid for its key ([`StudyError`] with line and column).
pub fn load(path: &Path, base: ExperimentConfig) -> Result<ExperimentConfig, StudyError> {
    let text = std::fs::read_to_string(path).map_err(|e| StudyError {
        path: path.display().to_string(),
        line: 0,
        column: 0,
        message: format!("cannot read the experiment file: {e}"),
    })?;
    let mut cfg = parse(&path.display().to_string(), &text, base)?;
    cfg.file = Some(path.to_path_buf());
    Ok(cfg)
}

/// Parses an experiment file's `text` (named `path` in errors) over `base`:
/// its keys in four groups (the load, pgbench scripts, factors, the
/// run's settings), each applied by a function of its own.
pub fn parse(
    path: &str,
    text: &str,
    base: ExperimentConfig,
) -> Result<ExperimentConfig, StudyError> {
    let src = Src { path, text };
    let mut raw: Raw = toml::from_str(text).map_err(|e| {
        let at = e.span().map_or(0, |s| s.start);
        src.err(at, e.message().trim())
    })?;
    let mut cfg = base;
    let mut f = raw.factors.take().unwrap_or_default();
    apply_load(&src, &mut raw, &mut cfg)?;
    apply_scripts(&src, &mut raw, &mut cfg)?;
    apply_factors(&src, &mut raw, &mut f, &mut cfg)?;
    apply_builds(&src, &mut raw, &mut f, &mut cfg)?;
    apply_tables(&src, &mut raw, &mut f, &mut cfg)?;
    apply_run(&src, &mut raw, &mut cfg)?;
    Ok(cfg)
}

/// The workload, or the external load that replaces it (`load_cmd` and
/// its companions, templates checked).
fn apply_load(src: &Src, raw: &mut Raw, cfg: &mut ExperimentConfig) -> Result<(), StudyError> {
    if let (Some(_), Some(cmd)) = (&raw.workload, &raw.load_cmd) {
        return Err(src.err(
            cmd.span().start,
            "load_cmd: an external load replaces the workload; remove `workload` or `load_cmd`",
        ));
    }
    if let Some(v) = raw.workload.take() {
        let name = src.one("workload", &v, string)?;
        if crate::workload::spec(&name).is_none() {
            let known: Vec<&str> = crate::workload::REGISTRY.iter().map(|s| s.name).collect();
            return Err(src.err(
                v.span().start,
                format!(
                    "workload: unknown workload '{name}' (built-in: {})",
                    known.join(", ")
                ),
            ));
        }
        cfg.workload = name;
        cfg.scripts.workload_named = true;
        cfg.load.cmd = None;
    }
    let text_of = |key: &str, v: &Spanned<Value>| -> Result<String, StudyError> {
        let t = src.one(key, v, string)?;
        crate::external::template::Template::parse(key, &t)
            .map_err(|e| src.err(v.span().start, e))?;
        Ok(t)
    };
    if let Some(v) = &raw.load_cmd {
        cfg.load.cmd = Some(text_of("load_cmd", v)?);
    }
    for (key, entry, slot) in [
        ("setup_cmd", &raw.setup_cmd, &mut cfg.load.setup),
        ("before_run", &raw.before_run, &mut cfg.load.before_run),
        ("after_run", &raw.after_run, &mut cfg.load.after_run),
        ("ready", &raw.ready, &mut cfg.load.ready),
    ] {
        if let Some(v) = entry {
            *slot = Some(text_of(key, v)?);
        }
    }
    if let Some(v) = raw.ready_timeout.take() {
        cfg.load.ready_timeout = src.one("ready_timeout", &v, duration)?;
    }
    if let Some(v) = raw.load_format.take() {
        cfg.load.format = src.one("load_format", &v, parsed::<LoadFormat>)?;
    }
    if let Some(v) = raw.on_error.take() {
        cfg.load.on_error = src.one("on_error", &v, parsed::<OnError>)?;
    }
    if let Some(v) = raw.load_timeout.take() {
        let d = src.one("load_timeout", &v, duration)?;
        cfg.load.timeout_ms = Some(d.as_secs_f64() * 1000.0);
    }
    Ok(())
}

/// pgbench scripts (`file`, `builtin`, `[define]`, `protocol`,
/// `init_sql`); files relative to the experiment file's directory.
fn apply_scripts(src: &Src, raw: &mut Raw, cfg: &mut ExperimentConfig) -> Result<(), StudyError> {
    // pgbench scripts; files relative to the experiment file's directory.
    let here = Path::new(src.path).parent().unwrap_or(Path::new(""));
    let weighted = |v: &Value| -> Result<(String, u32), String> {
        crate::pgbench::script::split_weight(&string(v)?).map(|(n, w)| (n.to_string(), w))
    };
    if let Some(v) = raw.file.take() {
        cfg.scripts.files = src
            .list("file", &v, weighted)?
            .into_iter()
            .map(|(f, w)| (here.join(f), w))
            .collect();
    }
    if let Some(v) = raw.builtin.take() {
        cfg.scripts.builtins = src.list("builtin", &v, weighted)?;
    }
    if let Some(table) = raw.define.take() {
        cfg.scripts.defines = table
            .into_iter()
            .map(|(k, v)| {
                crate::pgbench::script::check_variable_name(k.get_ref())
                    .map_err(|e| src.err(k.span().start, format!("define: {e}")))?;
                Ok((k.into_inner(), src.one("define", &v, scalar)?))
            })
            .collect::<Result<_, StudyError>>()?;
    }
    if let Some(v) = raw.protocol.take() {
        cfg.scripts.mode = src.one("protocol", &v, parsed)?;
    }
    if let Some(v) = raw.init_sql.take() {
        cfg.scripts.init_sql = Some(here.join(src.one("init_sql", &v, string)?));
    }
    Ok(())
}

/// The list factors, each from the top level or `[factors]` (never
/// both), checked against the workload.
fn apply_factors(
    src: &Src,
    raw: &mut Raw,
    f: &mut Factors,
    cfg: &mut ExperimentConfig,
) -> Result<(), StudyError> {
    // A factor from the top level or [factors], never both.
    let pick = |key: &str, top: Entry, fac: Entry| -> Result<Entry, StudyError> {
        match (top, fac) {
            (Some(_), Some(b)) => Err(src.err(
                b.span().start,
                format!("{key}: given both at the top level and in [factors]; keep one"),
            )),
            (a, b) => Ok(a.or(b)),
        }
    };
    // With an external load, strategies, scale and parameters are only
    // placeholder values: no workload checks them.
    let external = cfg.load.active();
    let spec = crate::workload::spec(&cfg.workload).expect("checked above or default");
    if let Some(v) = pick("isolation", raw.isolation.take(), f.isolation.take())? {
        cfg.isolation = dedup(src.list("isolation", &v, parsed::<Isolation>)?);
    }
    if let Some(v) = pick("strategy", raw.strategy.take(), f.strategy.take())? {
        let list = dedup(src.list("strategy", &v, string)?);
        for s in list.iter().filter(|_| !external) {
            spec.check_strategy(s)
                .map_err(|e| src.err(v.span().start, format!("strategy: {e}")))?;
        }
        cfg.strategies = list;
    }
    if let Some(v) = pick("clients", raw.clients.take(), f.clients.take())? {
        cfg.clients = dedup(src.list("clients", &v, u32_in(1, 10_000))?);
    }
    if let Some(v) = pick("pool_size", raw.pool_size.take(), f.pool_size.take())? {
        cfg.pool_size = dedup(src.list("pool_size", &v, u32_in(1, 10_000))?);
    }
    if let Some(v) = pick("rate", raw.rate.take(), f.rate.take())? {
        cfg.rate = src.list("rate", &v, positive_rate)?;
    }
    if let Some(v) = pick("scale", raw.scale.take(), f.scale.take())? {
        if spec.scale.is_none() && !external {
            return Err(src.err(
                v.span().start,
                format!(
                    "scale: {} has no scale factor; its size is a parameter (see `isobench workloads {}`)",
                    spec.name, spec.name
                ),
            ));
        }
        cfg.scale = dedup(src.list("scale", &v, u32_in(1, 100_000))?);
    }
    if let Some(v) = pick("fault_plan", raw.fault_plan.take(), f.fault_plan.take())? {
        cfg.fault_plans = dedup(src.list("fault_plan", &v, |x| {
            string(x)?
                .parse::<crate::model::FaultPlan>()
                .map_err(|e| e.to_string())
        })?);
    }
    if let Some(v) = pick("max_tries", raw.max_tries.take(), f.max_tries.take())? {
        let tries = dedup(src.list("max_tries", &v, u32_in(1, 1_000_000))?);
        match tries.as_slice() {
            [one] => {
                cfg.retry.max_tries = *one;
                cfg.max_tries = Vec::new();
            }
            _ => cfg.max_tries = tries,
        }
    }
    Ok(())
}

/// `pg_bin` from the top level or `[factors]` (never both): one build is a
/// setting of the target, several a factor.
fn apply_builds(
    src: &Src,
    raw: &mut Raw,
    f: &mut Factors,
    cfg: &mut ExperimentConfig,
) -> Result<(), StudyError> {
    let pg_bin = match (raw.pg_bin.take(), f.pg_bin.take()) {
        (Some(_), Some(b)) => {
            return Err(src.err(
                b.span().start,
                "pg_bin: given both at the top level and in [factors]; keep one",
            ));
        }
        (a, b) => a.or(b),
    };
    if let Some(v) = pg_bin {
        let mut builds =
            dedup_builds(pg_builds(src, v)?).map_err(|e| src.err(0, format!("pg_bin: {e}")))?;
        if builds.len() == 1 {
            cfg.target.pg_bin = builds.pop();
            cfg.pg_bin = Vec::new();
        } else {
            cfg.target.pg_bin = None;
            cfg.pg_bin = builds;
        }
    }
    Ok(())
}

/// `[params]` and `[settings]` entries, from the top level and
/// `[factors]` (a key in both is an error): a parameter is checked against
/// the workload (unless an external load replaces it); a setting with one
/// value is a server setting, with several a factor.
fn apply_tables(
    src: &Src,
    raw: &mut Raw,
    f: &mut Factors,
    cfg: &mut ExperimentConfig,
) -> Result<(), StudyError> {
    let external = cfg.load.active();
    let spec = crate::workload::spec(&cfg.workload).expect("checked above or default");
    for (name, top, fac) in [
        ("params", raw.params.take(), f.params.take()),
        ("settings", raw.settings.take(), f.settings.take()),
    ] {
        let mut seen = BTreeMap::new();
        for (k, v) in top.into_iter().flatten().chain(fac.into_iter().flatten()) {
            if seen.insert(k.get_ref().clone(), ()).is_some() {
                return Err(src.err(
                    k.span().start,
                    format!("{name}.{}: given twice", k.get_ref()),
                ));
            }
            let key = format!("{name}.{}", k.get_ref());
            let values = dedup(src.list(&key, &v, scalar)?);
            if name == "params" {
                if !external {
                    spec.check_param(k.get_ref())
                        .map_err(|e| src.err(k.span().start, format!("{key}: {e}")))?;
                }
                cfg.params.retain(|(p, _)| p != k.get_ref());
                cfg.params.push((k.get_ref().clone(), values));
            } else if values.len() == 1 {
                cfg.target.settings.retain(|(p, _)| p != k.get_ref());
                cfg.target
                    .settings
                    .push((k.get_ref().clone(), values[0].clone()));
            } else {
                cfg.setting_factors.push((k.get_ref().clone(), values));
            }
        }
    }
    Ok(())
}

/// The run's settings: repetitions, times, faults, retries, observation,
/// target and output.
fn apply_run(src: &Src, raw: &mut Raw, cfg: &mut ExperimentConfig) -> Result<(), StudyError> {
    if let Some(v) = raw.repeat.take() {
        cfg.repeat = src.one("repeat", &v, u32_in(1, 10_000))?;
    }
    if let Some(v) = raw.duration.take() {
        cfg.duration = src.one("duration", &v, duration)?;
        if cfg.duration.is_zero() {
            return Err(src.err(v.span().start, "duration: must be longer than 0s"));
        }
    }
    if let Some(v) = raw.server_wait.take() {
        cfg.server_wait = src.one("server_wait", &v, duration)?;
        if cfg.server_wait.is_zero() {
            return Err(src.err(v.span().start, "server_wait: must be longer than 0s"));
        }
    }
    if let Some(v) = raw.warmup.take() {
        cfg.warmup = src.one("warmup", &v, duration)?;
    }
    if let Some(v) = raw.latency_limit.take() {
        cfg.latency_limit = Some(src.one("latency_limit", &v, duration)?);
    }
    if let Some(v) = raw.exclude_faulted.take() {
        cfg.exclude_faulted = src.one("exclude_faulted", &v, boolean)?;
    }
    if let Some(v) = raw.fault.take() {
        cfg.faults = src.list("fault", &v, |x| {
            string(x)?
                .parse::<crate::model::FaultSpec>()
                .map_err(|e| e.to_string())
        })?;
    }
    if let Some(v) = raw.sample_interval.take() {
        cfg.sample_interval = src.one("sample_interval", &v, duration)?;
        if cfg.sample_interval < Duration::from_millis(100) {
            return Err(src.err(
                v.span().start,
                "sample_interval: shorter than the 100ms minimum",
            ));
        }
    }
    if let Some(v) = raw.retry_on.take() {
        cfg.retry.retry_on = dedup(src.list("retry_on", &v, |x| {
            let s = string(x)?.trim().to_ascii_uppercase();
            crate::model::sqlstate(&s)
                .map(|_| s.clone())
                .ok_or_else(|| format!("'{s}' is not a five-character SQLSTATE like 40001"))
        })?);
    }
    if let Some(v) = raw.backoff.take() {
        cfg.retry.backoff = src.one("backoff", &v, parsed::<Backoff>)?;
    }
    if let Some(v) = raw.threads.take() {
        cfg.threads = Some(src.one("threads", &v, int_in(1, 1024))? as usize);
    }
    if let Some(v) = raw.seed.take() {
        cfg.seed = src.one("seed", &v, int_in(0, i64::MAX))? as u64;
    }
    if let Some(v) = raw.order.take() {
        cfg.order = src.one("order", &v, parsed::<Order>)?;
    }
    if let Some(v) = raw.observe.take() {
        cfg.observe = src.one("observe", &v, parsed::<ObserveLevel>)?;
    }
    if let Some(v) = raw.baseline.take() {
        cfg.baseline = Some(src.one("baseline", &v, baseline)?);
    }
    if let Some(v) = raw.dsn.take() {
        cfg.target.dsn = Some(src.one("dsn", &v, string)?);
    }
    if let Some(v) = raw.external.take() {
        cfg.target.external_from_env = src.one("external", &v, boolean)?;
    }
    if let Some(v) = raw.server_user.take() {
        cfg.target.server_user = src.one("server_user", &v, string)?;
    }
    if let Some(v) = raw.out.take() {
        cfg.out = Some(PathBuf::from(src.one("out", &v, string)?));
    }
    if let Some(v) = raw.quiet.take() {
        cfg.quiet = src.one("quiet", &v, boolean)?;
    }
    if let Some(v) = raw.fail_on_violation.take() {
        cfg.fail_on_violation = src.one("fail_on_violation", &v, boolean)?;
    }
    Ok(())
}

/// The builds of `pg_bin`, each checked by [`crate::target::pg_build`]
/// (as `--pg-bin` is), in the file's order.
///
/// Errors: an empty list or table, a value that is not a string, a name
/// that cannot be a label (located at the name), a directory without
/// `initdb` and `postgres` (located at the directory).
fn pg_builds(src: &Src, v: Spanned<PgBinEntry>) -> Result<Vec<PgBuild>, StudyError> {
    let at = v.span().start;
    let fail = |at: usize, e: &dyn fmt::Display| src.err(at, format!("pg_bin: {e}"));
    match v.into_inner() {
        PgBinEntry::One(dir) => Ok(vec![
            crate::target::pg_build(None, &dir).map_err(|e| fail(at, &e))?,
        ]),
        PgBinEntry::List(items) if items.is_empty() => Err(fail(at, &"the list is empty")),
        PgBinEntry::List(items) => items
            .iter()
            .map(|item| {
                let at = item.span().start;
                let dir = string(item.get_ref()).map_err(|e| fail(at, &e))?;
                crate::target::pg_build(None, &dir).map_err(|e| fail(at, &e))
            })
            .collect(),
        PgBinEntry::Named(entries) if entries.is_empty() => Err(fail(
            at,
            &"the table is empty; write { name = \"/path/to/bin\" }",
        )),
        PgBinEntry::Named(entries) => entries
            .iter()
            .map(|(name, dir)| {
                let build = |e: PgBuildError| match e {
                    PgBuildError::EmptyName | PgBuildError::BadName(_) => {
                        fail(name.span().start, &e)
                    }
                    _ => fail(dir.span().start, &e),
                };
                let d = string(dir.get_ref())
                    .map_err(|e| fail(dir.span().start, &format!("{}: {e}", name.get_ref())))?;
                crate::target::pg_build(Some(name.get_ref()), &d).map_err(build)
            })
            .collect(),
    }
}

/// The study recorded in results directory `dir` (for `--resume`), with
/// the flags in `given` taken from `cli` (quiet, fail_on_violation and the
/// server flags). An external server must be named again (`--dsn` or
/// `--external`), since its DSN is never stored.
///
/// Errors: no readable results.json in `dir`, a study that already
/// completed, or an external target without `--dsn`/`--external`.
pub fn resume(
    dir: &Path,
    cli: &ExperimentConfig,
    given: &[String],
) -> Result<ExperimentConfig, String> {
    let r = crate::store::load_dir_to_resume(dir).map_err(|e| format!("--resume: {e}"))?;
    if r.complete {
        return Err(format!(
            "--resume: the experiment in {} is complete; nothing to resume",
            dir.display()
        ));
    }
    let c = r.config;
    let mut target = cli.target.clone();
    // The builds as recorded (a store from before build labels: its
    // directories are the labels its cells hold), unless `--pg-bin` is
    // given again (e.g. a build moved; its labels must match the runs').
    let mut pg_bin: Vec<PgBuild> = c
        .pg_bin
        .iter()
        .map(|label| PgBuild {
            name: Some(label.clone()),
            dir: PathBuf::from(c.pg_bin_dir(label)),
        })
        .collect();
    if !given.iter().any(|g| g == "pg_bin") {
        target.pg_bin = c.target_options.pg_bin.as_ref().map(|dir| PgBuild {
            name: c.target_options.pg_bin_label.clone(),
            dir: PathBuf::from(dir),
        });
    } else if !cli.pg_bin.is_empty() {
        pg_bin = cli.pg_bin.clone();
    }
    if !given.iter().any(|g| g == "server_user") {
        target.server_user = c.target_options.server_user.clone();
    }
    target.settings = c.settings.clone().into_iter().collect();
    let external_now = target.dsn.is_some() || target.external_from_env;
    if c.target_options.external && !external_now {
        return Err(format!(
            "--resume: the experiment in {} ran on an external server; give --dsn or --external again",
            dir.display()
        ));
    }
    let workload_has_scale = crate::workload::spec(&c.workload).is_some_and(|s| s.scale.is_some());
    Ok(ExperimentConfig {
        workload: c.workload,
        scale: if workload_has_scale || c.load.active() {
            c.scale
        } else {
            Vec::new()
        },
        load: c.load,
        scripts: c.scripts,
        isolation: c.isolation,
        strategies: c.strategies,
        params: c.params,
        clients: c.clients,
        pool_size: c.pool_size,
        rate: c.rate,
        latency_limit: c
            .latency_limit_ms
            .map(|ms| Duration::from_secs_f64(ms / 1000.0)),
        faults: c
            .faults
            .iter()
            .map(|f| f.parse())
            .collect::<Result<_, crate::model::FaultSpecError>>()
            .map_err(|e| format!("--resume: the stored fault plan: {e}"))?,
        fault_plans: c
            .fault_plans
            .iter()
            .map(|f| f.parse())
            .collect::<Result<_, crate::model::FaultSpecError>>()
            .map_err(|e| format!("--resume: the stored fault plans: {e}"))?,
        exclude_faulted: c.exclude_faulted,
        max_tries: c.max_tries,
        setting_factors: c.setting_factors,
        pg_bin,
        repeat: c.repeat,
        order: c.order,
        baseline: c.baseline,
        duration: Duration::from_secs_f64(c.duration_s),
        warmup: Duration::from_secs_f64(c.warmup_s),
        server_wait: Duration::from_secs_f64(c.server_wait_s),
        retry: c.retry,
        threads: c.threads,
        sample_interval: Duration::from_secs_f64(c.sample_interval_s),
        // Not stored: a resumed study observes as its command line says.
        observe: cli.observe,
        seed: c.seed,
        target,
        file: c.file.map(PathBuf::from),
        resume: Some(dir.to_path_buf()),
        out: Some(dir.to_path_buf()),
        quiet: cli.quiet,
        fail_on_violation: cli.fail_on_violation,
    })
}

/// A baseline: a string `isolation=rc,clients=16`, or an inline table
/// `{ isolation = "rc", clients = 16 }`; returned in the string form.
fn baseline(v: &Value) -> Result<String, String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Table(t) => t
            .iter()
            .map(|(k, v)| scalar(v).map(|v| format!("{k}={v}")))
            .collect::<Result<Vec<_>, _>>()
            .map(|kv| kv.join(",")),
        other => Err(format!(
            "expected \"isolation=rc,clients=16\" or {{ isolation = \"rc\" }}, found {}",
            other.type_str()
        )),
    }
}

fn dedup<T: PartialEq>(v: Vec<T>) -> Vec<T> {
    let mut out = Vec::with_capacity(v.len());
    for x in v {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::RunArgs;

    fn base() -> ExperimentConfig {
        RunArgs::default().into_config()
    }

    fn parse_ok(text: &str) -> ExperimentConfig {
        parse("study.toml", text, base()).unwrap_or_else(|e| panic!("{e}"))
    }

    fn parse_err(text: &str) -> StudyError {
        parse("study.toml", text, base()).unwrap_err()
    }

    /// The example studies in examples/ stay valid study files, and the
    /// SSI plan study crosses enable_seqscan as a factor.
    #[test]
    fn the_example_studies_parse() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
        let mut n = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                load(&path, base()).unwrap_or_else(|e| panic!("{e}"));
                n += 1;
            }
        }
        assert!(n >= 2, "{n} example studies in {}", dir.display());
        let cfg = load(&dir.join("ssi-plan-study.toml"), base()).unwrap();
        assert_eq!(cfg.isolation, vec![Isolation::Serializable]);
        assert_eq!(
            cfg.setting_factors,
            vec![(
                "enable_seqscan".to_string(),
                vec!["on".to_string(), "off".to_string()]
            )]
        );
    }

    #[test]
    fn pgbench_script_keys() {
        let cfg = parse(
            "studies/s.toml",
            "file = [\"one.sql@2\", \"/abs/two.sql\"]\nbuiltin = \"select-only@3\"\nprotocol = \"simple\"\ninit_sql = \"init.sql\"\n[define]\nhot = 10\nname = \"x\"\n",
            base(),
        )
        .unwrap();
        let s = &cfg.scripts;
        assert_eq!(
            s.files,
            vec![
                (PathBuf::from("studies/one.sql"), 2),
                (PathBuf::from("/abs/two.sql"), 1)
            ]
        );
        assert_eq!(s.builtins, vec![("select-only".to_string(), 3)]);
        assert_eq!(s.mode, crate::model::QueryMode::Simple);
        assert_eq!(s.init_sql, Some(PathBuf::from("studies/init.sql")));
        assert_eq!(
            s.defines,
            vec![("hot".into(), "10".into()), ("name".into(), "x".into())]
        );
        let e = parse("s.toml", "protocol = \"fast\"\n", base()).unwrap_err();
        assert_eq!((e.line, e.column), (1, 12));
        assert!(e.message.contains("unknown query mode 'fast'"), "{e}");
        let e = parse("s.toml", "file = \"a.sql@x\"\n", base()).unwrap_err();
        assert!(e.message.starts_with("file: "), "{e}");
    }

    #[test]
    fn the_issue_example_parses() {
        let c = parse_ok(
            r#"workload = "tpcb"
scale = 1
repeat = 2
duration = "2s"
warmup = "1s"
[factors]
isolation = ["rc", "ser"]
clients = [8]
pool_size = [2, 8]
"#,
        );
        assert_eq!(c.workload, "tpcb");
        assert_eq!(c.scale, vec![1]);
        assert_eq!(c.repeat, 2);
        assert_eq!(c.duration, Duration::from_secs(2));
        assert_eq!(c.warmup, Duration::from_secs(1));
        assert_eq!(
            c.isolation,
            vec![Isolation::ReadCommitted, Isolation::Serializable]
        );
        assert_eq!(c.clients, vec![8]);
        assert_eq!(c.pool_size, vec![2, 8]);
        let cells = crate::experiment::cells(&c).unwrap();
        assert_eq!(cells.len(), 4);
        assert_eq!(cells[0].pool_size, Some(2));
        assert_eq!(cells[3].pool_size, Some(8));
    }

    #[test]
    fn settings_params_builds_and_fixed_values() {
        let c = parse_ok(
            r#"workload = "sibench"
clients = 4
max_tries = [1, 10]
order = "random"
seed = 7
baseline = { isolation = "rc", max_tries = 10 }
[params]
rows = [10, 100]
[settings]
shared_buffers = "64MB"
[factors.settings]
max_pred_locks_per_transaction = [64, 256]
"#,
        );
        assert_eq!(c.clients, vec![4]);
        assert_eq!(c.max_tries, vec![1, 10]);
        assert_eq!(c.order, Order::Random);
        assert_eq!(c.seed, 7);
        assert_eq!(c.baseline.as_deref(), Some("isolation=rc,max_tries=10"));
        assert_eq!(
            c.params,
            vec![(
                "rows".to_string(),
                vec!["10".to_string(), "100".to_string()]
            )]
        );
        assert!(
            c.target
                .settings
                .contains(&("shared_buffers".into(), "64MB".into()))
        );
        assert_eq!(
            c.setting_factors,
            vec![(
                "max_pred_locks_per_transaction".to_string(),
                vec!["64".to_string(), "256".to_string()]
            )]
        );
        let cells = crate::experiment::cells(&c).unwrap();
        // 3 levels x 2 rows x 2 max_tries x 2 settings.
        assert_eq!(cells.len(), 24);
        // Server settings vary slowest.
        assert!(
            cells[..12]
                .iter()
                .all(|c| c.settings["max_pred_locks_per_transaction"] == "64")
        );
    }

    #[test]
    fn errors_name_key_and_line() {
        for (text, line, needle) in [
            (
                "workload = \"tpcb\"\nbogus = 1\n",
                2,
                "unknown field `bogus`",
            ),
            (
                "[factors]\nclients = [0]\n",
                2,
                "clients: 0 is out of range",
            ),
            (
                "isolation = [\"rc\", \"snapshot\"]\n",
                1,
                "isolation: unknown isolation level 'snapshot'",
            ),
            (
                "\n\nduration = \"soon\"\n",
                3,
                "duration: 'soon' is not a duration",
            ),
            (
                "workload = \"nope\"\n",
                1,
                "workload: unknown workload 'nope'",
            ),
            (
                "\nfault = [\"terminate@2s\", \"explode@1s\"]\n",
                2,
                "fault: 'explode' is not a fault kind",
            ),
            (
                "fault = \"terminate\"\n",
                1,
                "fault: 'terminate' is not KIND@TIME",
            ),
            (
                "fault = \"terminate@soon\"\n",
                1,
                "fault: 'terminate@soon': bad time",
            ),
            (
                "workload = \"sibench\"\n[params]\nrowz = 1\n",
                3,
                "params.rowz",
            ),
            ("clients = 4\n[factors]\nclients = [8]\n", 3, "given both"),
            ("[factors]\nsize = [1]\n", 2, "unknown field `size`"),
            ("repeat = [1, 2]\n", 1, "repeat: takes one value"),
            ("rate = [0]\n", 1, "rate: 0 is not a rate"),
            (
                "workload = \"write-skew\"\nscale = 2\n",
                2,
                "scale: write-skew has no scale",
            ),
            ("pool_size = []\n", 1, "pool_size: the list is empty"),
            ("clients = [1,\n", 1, ""),
        ] {
            let e = parse_err(text);
            assert_eq!(e.line, line, "{text:?}: {e}");
            assert!(
                e.to_string().starts_with(&format!("study.toml:{line}:")),
                "{e}"
            );
            assert!(e.message.contains(needle), "{text:?}: {e}");
        }
    }

    #[test]
    fn missing_file_names_it() {
        let e = load(Path::new("/nonexistent/study.toml"), base()).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/study.toml"), "{e}");
    }

    /// A real PostgreSQL bin directory (the tests need the server installed).
    fn bin() -> String {
        crate::target::find_bin_dir(None)
            .unwrap()
            .display()
            .to_string()
    }

    #[test]
    fn pg_bin_takes_a_directory_a_list_or_named_builds() {
        let b = bin();
        let c = parse_ok(&format!("pg_bin = \"{b}\"\n"));
        assert_eq!(c.target.pg_bin, Some(PgBuild::new(None, &b).unwrap()));
        assert!(c.pg_bin.is_empty());
        // One named build: the server, with its name.
        let c = parse_ok(&format!("pg_bin = {{ stock = \"{b}\" }}\n"));
        assert_eq!(c.target.pg_bin.unwrap().name.as_deref(), Some("stock"));
        // Named builds in the file's order (not sorted), as a factor.
        let c = parse_ok(&format!(
            "[factors]\npg_bin = {{ stock = \"{b}\", finer-lock = \"{b}\", a = \"{b}\" }}\n"
        ));
        assert_eq!(c.target.pg_bin, None);
        assert_eq!(c.pg_build_labels(), ["stock", "finer-lock", "a"]);
        assert_eq!(c.pg_bin_dir("finer-lock"), Some(Path::new(&b)));
        let cells = crate::experiment::cells(&c).unwrap();
        assert_eq!(cells[0].pg_bin.as_deref(), Some("stock"));
        assert!(
            cells[0].label().ends_with(" pg_bin=stock"),
            "{}",
            cells[0].label()
        );
        // The table form over several lines, and a list (labels derived).
        let c = parse_ok(&format!("[pg_bin]\nstock = \"{b}\"\npatched = \"{b}\"\n"));
        assert_eq!(c.pg_build_labels(), ["stock", "patched"]);
        let c = parse_ok(&format!("pg_bin = [\"{b}\", \"{b}/\"]\n"));
        assert_eq!(c.pg_bin.len(), 0, "the same directory twice is one build");
        let other = tempfile::tempdir().unwrap();
        let other_bin = other.path().join("patched/bin");
        std::fs::create_dir_all(&other_bin).unwrap();
        for exe in ["postgres", "initdb"] {
            std::os::unix::fs::symlink(Path::new(&b).join(exe), other_bin.join(exe)).unwrap();
        }
        let o = other_bin.display();
        let c = parse_ok(&format!("pg_bin = [\"{b}\", \"{o}\"]\n"));
        let labels = c.pg_build_labels();
        assert_eq!(labels[1], "patched");
        assert_ne!(labels[0], labels[1]);
    }

    #[test]
    fn pg_bin_errors_name_the_line_and_the_build() {
        let b = bin();
        for (text, line, column, needle) in [
            (
                "pg_bin = \"/nonexistent/bin\"\n".to_string(),
                1,
                10,
                "pg_bin: /nonexistent/bin has no `postgres`".to_string(),
            ),
            (
                format!("pg_bin = [\"{b}\",\n  \"/tmp\"]\n"),
                2,
                3,
                "pg_bin: /tmp has no `postgres`".into(),
            ),
            (
                format!("[pg_bin]\nstock = \"{b}\"\n\"fin er\" = \"{b}\"\n"),
                3,
                1,
                "pg_bin: build name 'fin er' is not a label".into(),
            ),
            (
                format!("pg_bin = {{ \"\" = \"{b}\" }}\n"),
                1,
                12,
                "pg_bin: empty build name".into(),
            ),
            (
                "pg_bin = { stock = \"/nonexistent/bin\" }\n".into(),
                1,
                20,
                "pg_bin: /nonexistent/bin has no `postgres`".into(),
            ),
            (
                "pg_bin = { stock = 15 }\n".into(),
                1,
                20,
                "pg_bin: stock: expected a string".into(),
            ),
            (
                "pg_bin = {}\n".into(),
                1,
                10,
                "pg_bin: the table is empty".into(),
            ),
            (
                "pg_bin = []\n".into(),
                1,
                10,
                "pg_bin: the list is empty".into(),
            ),
            (
                "pg_bin = [3]\n".into(),
                1,
                11,
                "pg_bin: expected a string".into(),
            ),
            (
                "pg_bin = 3\n".into(),
                1,
                10,
                "pg_bin: a directory, a list".into(),
            ),
            (
                format!("pg_bin = {{ a = \"{b}\", a = \"{b}\" }}\n"),
                1,
                0,
                "duplicate key".into(),
            ),
            (
                format!("pg_bin = \"{b}\"\n[factors]\npg_bin = [\"{b}\"]\n"),
                3,
                10,
                "pg_bin: given both".into(),
            ),
        ] {
            let e = parse_err(&text);
            assert_eq!(e.line, line, "{text:?}: {e}");
            if column > 0 {
                assert_eq!(e.column, column, "{text:?}: {e}");
            }
            assert!(e.message.contains(&needle), "{text:?}: {e}");
        }
    }

    /// `r` written as a store in a new directory, interrupted.
    fn stored(mut r: crate::store::Results) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        r.complete = false;
        let mut db =
            crate::store::sqlite::Store::create(&dir.path().join(crate::store::sqlite::DB_FILE))
                .unwrap();
        db.save_header(&r).unwrap();
        for run in &r.runs {
            db.save_run(run).unwrap();
        }
        dir
    }

    #[test]
    fn resume_keeps_build_labels_and_reads_older_stores() {
        let r = crate::report::fixture::with_builds();
        let dir = stored(r.clone());
        let c = resume(dir.path(), &base(), &[]).unwrap();
        assert_eq!(c.pg_build_labels(), ["stock", "finer-lock"]);
        assert_eq!(
            c.pg_bin_dir("finer-lock"),
            Some(Path::new("/opt/pg-patched/bin"))
        );
        // A store from before labels: its directories are the labels, as
        // its cells hold them.
        let mut old = r;
        let dirs = std::mem::take(&mut old.config.pg_bin_dirs);
        old.config.pg_bin = old.config.pg_bin.iter().map(|l| dirs[l].clone()).collect();
        for run in &mut old.runs {
            run.cell.pg_bin = run.cell.pg_bin.as_ref().map(|l| dirs[l].clone());
        }
        let dir = stored(old);
        let c = resume(dir.path(), &base(), &[]).unwrap();
        assert_eq!(
            c.pg_build_labels(),
            ["/usr/lib/postgresql/16/bin", "/opt/pg-patched/bin"]
        );
        assert_eq!(
            c.pg_bin_dir("/opt/pg-patched/bin"),
            Some(Path::new("/opt/pg-patched/bin"))
        );
        // A named single build keeps its name.
        let mut one = crate::report::fixture::results();
        one.config.target_options.pg_bin = Some("/usr/lib/postgresql/16/bin".into());
        one.config.target_options.pg_bin_label = Some("stock".into());
        let dir = stored(one);
        let c = resume(dir.path(), &base(), &[]).unwrap();
        let b = c.target.pg_bin.unwrap();
        assert_eq!(b.name.as_deref(), Some("stock"));
        assert_eq!(b.dir, Path::new("/usr/lib/postgresql/16/bin"));
    }
}
