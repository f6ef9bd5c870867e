//! An experiment: factors x repetitions -> runs, executed in interleaved
//! order (repetition 1 of every cell, then repetition 2, ...), so that a
//! slow drift of the machine spreads over all cells instead of biasing one.
//!
//! Every run starts from the same state: a fresh copy of the template
//! database (`CREATE DATABASE ... TEMPLATE`, `STRATEGY FILE_COPY` on
//! PostgreSQL 15+), then `VACUUM ANALYZE` and `CHECKPOINT`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use tokio::sync::watch;
use tokio_postgres::Client;
use tokio_util::sync::CancellationToken;

use crate::engine::retry::Retrier;
use crate::engine::{self, EngineParams};
use crate::metrics::encode_histogram;
use crate::model::LoadReport;
use crate::model::Phase;
use crate::model::{BadInput, ExperimentConfig, Isolation, Order, RetryPolicy};
use crate::observe;
use crate::progress::Progress;
use crate::report;
use crate::store::sqlite::Store;
use crate::store::{
    self, Cell, Environment, Rate, Results, RunRecord, StoredConfig, StoredTarget, TxTypeRecord,
};
use crate::target::{self, Target};
use crate::workload::{self, Setup, Workload, WorkloadSpec};

mod external;

/// How an experiment ended.
#[derive(Debug)]
pub struct ExperimentOutcome {
    pub dir: PathBuf,
    pub results: Results,
    /// Ctrl-C (or SIGTERM) stopped it before every run was done.
    pub interrupted: bool,
}

/// One planned run.
#[derive(Debug, Clone)]
pub struct PlannedRun {
    pub cell: Cell,
    /// Index into [`cells`].
    pub cell_index: usize,
    pub repetition: u32,
}

/// The workload spec of `cfg`. Errors: unknown workload.
fn workload_spec(cfg: &ExperimentConfig) -> Result<&'static WorkloadSpec> {
    workload::spec(&cfg.workload).ok_or_else(|| {
        anyhow!(BadInput(format!(
            "--workload: unknown workload '{}' (built-in: {}; see `isobench workloads`)",
            cfg.workload,
            workload::REGISTRY
                .iter()
                .map(|s| s.name)
                .collect::<Vec<_>>()
                .join(", ")
        )))
    })
}

/// The cells of `cfg` in factor order, slowest first: server build,
/// server settings, scale, clients, pool size, rate, workload parameters
/// (the first given varies slowest), max_tries, strategy, isolation level
/// (fastest, so that every cell's baseline is a near neighbour). Server
/// factors vary slowest so that a repetition restarts the server as
/// seldom as possible.
///
/// Errors: unknown workload, strategy or parameter, a factor given twice,
/// `--scale` for a workload without one.
pub fn cells(cfg: &ExperimentConfig) -> Result<Vec<Cell>> {
    // An external load: every factor is a placeholder value, unchecked
    // (the workload is `external`, with no strategy unless given).
    let (workload, scales, strategies): (String, Vec<Option<u32>>, Vec<String>) =
        if cfg.scripts.active() {
            // pgbench scripts: `:scale` is pgbench's tables' scale.
            let spec = workload::spec("tpcb").expect("built in");
            (
                SCRIPTS.to_string(),
                if cfg.scale.is_empty() {
                    vec![spec.resolve_scale(None)?]
                } else {
                    cfg.scale
                        .iter()
                        .map(|&s| spec.resolve_scale(Some(s)))
                        .collect::<Result<_, _>>()?
                },
                vec![String::new()],
            )
        } else if cfg.load.active() {
            (
                EXTERNAL.to_string(),
                if cfg.scale.is_empty() {
                    vec![None]
                } else {
                    cfg.scale.iter().map(|&s| Some(s)).collect()
                },
                if cfg.strategies.is_empty() {
                    vec![String::new()]
                } else {
                    cfg.strategies.clone()
                },
            )
        } else {
            let spec = workload_spec(cfg)?;
            for s in &cfg.strategies {
                spec.check_strategy(s)?;
            }
            for (name, _) in &cfg.params {
                spec.check_param(name)?;
            }
            (
                cfg.workload.clone(),
                if cfg.scale.is_empty() {
                    vec![spec.resolve_scale(None)?]
                } else {
                    cfg.scale
                        .iter()
                        .map(|&s| spec.resolve_scale(Some(s)))
                        .collect::<Result<_, _>>()?
                },
                if cfg.strategies.is_empty() {
                    vec![spec.default_strategy().to_string()]
                } else {
                    cfg.strategies.clone()
                },
            )
        };
    let params = combinations(&cfg.params, "--param")?;
    let settings = combinations(&cfg.setting_factors, "settings")?;
    let opt = |v: Vec<Option<String>>| if v.is_empty() { vec![None] } else { v };
    let pg_bins = opt(cfg
        .pg_bin
        .iter()
        .map(|p| Some(p.display().to_string()))
        .collect());
    let some = |v: &[u32]| -> Vec<Option<u32>> {
        if v.is_empty() {
            vec![None]
        } else {
            v.iter().map(|&x| Some(x)).collect()
        }
    };
    let rates: Vec<Option<Rate>> = if cfg.rate.is_empty() {
        vec![None]
    } else {
        cfg.rate.iter().map(|&r| Some(Rate(r))).collect()
    };
    let levels = cfg.levels();
    let mut out = Vec::new();
    for pg_bin in &pg_bins {
        for setting in &settings {
            for &scale in &scales {
                for &clients in &cfg.clients {
                    for &pool_size in &some(&cfg.pool_size) {
                        for &rate in &rates {
                            for param in &params {
                                for &max_tries in &some(&cfg.max_tries) {
                                    for strategy in &strategies {
                                        for &isolation in &levels {
                                            out.push(Cell {
                                                workload: workload.clone(),
                                                isolation,
                                                strategy: strategy.clone(),
                                                params: param.clone(),
                                                clients,
                                                scale,
                                                pool_size,
                                                rate,
                                                max_tries,
                                                settings: setting.clone(),
                                                pg_bin: pg_bin.clone(),
                                            });
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    Ok(out)
}

/// Every combination of `factors` (name, values), the first varying
/// slowest. Errors: a name given twice, naming `option`.
fn combinations(
    factors: &[(String, Vec<String>)],
    option: &str,
) -> Result<Vec<BTreeMap<String, String>>> {
    let mut combos: Vec<BTreeMap<String, String>> = vec![BTreeMap::new()];
    for (i, (name, values)) in factors.iter().enumerate() {
        if factors[..i].iter().any(|(n, _)| n == name) {
            bail!("{option} {name}: given twice; list its values once, e.g. {option} {name}=1,2");
        }
        combos = combos
            .into_iter()
            .flat_map(|c| {
                values.iter().map(move |v| {
                    let mut c = c.clone();
                    c.insert(name.clone(), v.clone());
                    c
                })
            })
            .collect();
    }
    Ok(combos)
}

/// Every run of `cells`: repetition 1 of every cell, then repetition 2,
/// ... With [`Order::Random`] each repetition's cells are shuffled
/// (Fisher–Yates, seeded by `seed`, so a resumed study plans the same
/// order).
pub fn plan(cells: &[Cell], repeat: u32, order: Order, seed: u64) -> Vec<PlannedRun> {
    use rand::SeedableRng;
    use rand::seq::SliceRandom;
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed ^ 0x006f_7264_6572);
    (1..=repeat)
        .flat_map(|repetition| {
            let mut idx: Vec<usize> = (0..cells.len()).collect();
            if order == Order::Random {
                idx.shuffle(&mut rng);
            }
            idx.into_iter()
                .map(|cell_index| PlannedRun {
                    cell: cells[cell_index].clone(),
                    cell_index,
                    repetition,
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The workload setup of a cell. Errors: as [`Setup::new`].
pub fn setup(cell: &Cell) -> Result<Setup> {
    let spec = workload::spec(&cell.workload)
        .ok_or_else(|| anyhow!("unknown workload '{}'", cell.workload))?;
    Ok(Setup::new(
        spec,
        cell.scale,
        Some(&cell.strategy),
        &cell.params,
    )?)
}

/// Runs the experiment `cfg` until done or `cancel` fires.
///
/// Errors: invalid configuration, a target that cannot be started or
/// reached, a failed load, or a run that cannot start; completed runs are
/// already written to the results directory when an error is returned.
pub async fn run(cfg: ExperimentConfig, cancel: CancellationToken) -> Result<ExperimentOutcome> {
    use crate::workload::*;
    let cfg = cfg.resolve();
    if cfg.load.active() && cfg.scripts.active() {
        bail!(BadInput(
            "--load-cmd and -f/-b both given: a study is driven by an external load or by pgbench scripts, not both"
                .into()
        ));
    }
    if cfg.load.active() {
        return run_external(cfg, cancel).await;
    }
    if cfg.scripts.active() {
        return run_scripts(cfg, cancel).await;
    }
    let name = workload_spec(&cfg)?.name;
    match name {
        "tpcb" => run_with::<tpcb::Tpcb>(cfg, cancel).await,
        "sibench" => run_with::<sibench::Sibench>(cfg, cancel).await,
        "ssibench" | "simple-ssibench" => run_with::<ssibench::Ssibench>(cfg, cancel).await,
        "smallbank" => run_with::<smallbank::Smallbank>(cfg, cancel).await,
        "write-skew" => run_with::<write_skew::WriteSkew>(cfg, cancel).await,
        "docstore" => run_with::<docstore::Docstore>(cfg, cancel).await,
        other => bail!("workload '{other}' is in the registry but not wired into experiment::run"),
    }
}

fn validate(cfg: &ExperimentConfig) -> Result<Retrier> {
    if cfg.isolation.is_empty() {
        bail!("--isolation: give at least one level");
    }
    if cfg.clients.is_empty() || cfg.clients.contains(&0) {
        bail!("--clients: every client count must be at least 1");
    }
    if cfg.repeat == 0 {
        bail!("--repeat must be at least 1");
    }
    if cfg.duration.is_zero() {
        bail!("--duration must be longer than 0s");
    }
    if cfg.sample_interval < Duration::from_millis(100) {
        bail!("--sample-interval must be at least 100ms");
    }
    if cfg.pool_size.contains(&0) {
        bail!("--pool-size: every pool size must be at least 1");
    }
    if let Some(r) = cfg.rate.iter().find(|r| !(r.is_finite() && **r > 0.0)) {
        bail!("--rate: {r} is not a rate; give transactions per second > 0, e.g. --rate 500");
    }
    if cfg.latency_limit.is_some() && cfg.rate.is_empty() {
        bail!("--latency-limit needs --rate (it applies to open-loop runs, as in pgbench)");
    }
    if cfg.max_tries.contains(&0) {
        bail!("max_tries: every value must be at least 1");
    }
    let l = &cfg.load;
    if !l.active() {
        for (given, option) in [
            (l.setup.is_some(), "setup_cmd"),
            (l.before_run.is_some(), "before_run"),
            (l.after_run.is_some(), "after_run"),
            (l.ready.is_some(), "ready"),
            (l.timeout_ms.is_some(), "load_timeout"),
        ] {
            if given {
                bail!(
                    "{option} (--{}) belongs to an external load: give load_cmd (--load-cmd) too",
                    option.replace('_', "-")
                );
            }
        }
    }
    let external = cfg.target.dsn.is_some() || cfg.target.external_from_env;
    if external && !cfg.setting_factors.is_empty() {
        bail!(
            "settings factors need the managed server (isobench restarts it with each cell's settings); \
             drop --dsn/--external or the settings factor"
        );
    }
    if external && !cfg.pg_bin.is_empty() {
        bail!("pg_bin factor: server builds need the managed server; drop --dsn/--external");
    }
    if !cfg.pg_bin.is_empty() && cfg.target.pg_bin.is_some() {
        bail!("--pg-bin and a pg_bin factor both given; list every build in the factor");
    }
    for t in cfg.max_tries.iter().copied().chain([cfg.retry.max_tries]) {
        Retrier::new(&RetryPolicy {
            max_tries: t,
            ..cfg.retry.clone()
        })
        .map_err(|e| anyhow!(e))?;
    }
    Retrier::new(&cfg.retry).map_err(|e| anyhow!(e))
}

/// The retry policy of `cell`: the experiment's, with the cell's
/// `max_tries` when that is a factor.
fn retrier_for(cfg: &ExperimentConfig, cell: &Cell) -> Result<Retrier> {
    Retrier::new(&RetryPolicy {
        max_tries: cell.max_tries.unwrap_or(cfg.retry.max_tries),
        ..cfg.retry.clone()
    })
    .map_err(|e| anyhow!(e))
}

async fn environment(admin: &Client) -> Result<Environment> {
    let version: String = admin.query_one("SHOW server_version", &[]).await?.get(0);
    let num: String = admin
        .query_one("SHOW server_version_num", &[])
        .await?
        .get(0);
    let rows = admin
        .query(
            "SELECT name, setting || coalesce(unit, '') FROM pg_settings
              WHERE name = ANY($1) ORDER BY name",
            &[&vec![
                "max_connections",
                "shared_buffers",
                "synchronous_commit",
                "fsync",
                "max_pred_locks_per_transaction",
                "max_pred_locks_per_relation",
                "max_pred_locks_per_page",
                "default_transaction_isolation",
                "deadlock_timeout",
                "lock_timeout",
                "statement_timeout",
                "wal_level",
                "max_wal_size",
                "checkpoint_timeout",
            ]],
        )
        .await?;
    Ok(Environment {
        host: nix::unistd::gethostname()
            .map(|h| h.to_string_lossy().into_owned())
            .unwrap_or_default(),
        os: format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
        cpus: std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        server_version: version,
        server_version_num: num.parse().unwrap_or(0),
        server_settings: rows.iter().map(|r| (r.get(0), r.get(1))).collect(),
    })
}

fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

async fn drop_database(admin: &Client, name: &str, version_num: i32) -> Result<()> {
    let force = if version_num >= 130000 {
        " WITH (FORCE)"
    } else {
        ""
    };
    admin
        .batch_execute(&format!(
            "DROP DATABASE IF EXISTS {}{force}",
            quote_ident(name)
        ))
        .await
        .map_err(|e| anyhow!("DROP DATABASE {name}: {}", target::error_text(&e)))
}

/// The managed or external server that runs use now. At most one
/// managed server runs at a time: when a cell needs other binaries or
/// settings, the current one is stopped (its directory removed) and a new
/// one initialised, and the template databases are loaded again on it.
struct Server {
    /// The binaries and settings it was started with (see
    /// [`Cell::server_key`]).
    key: (Option<String>, BTreeMap<String, String>),
    target: Target,
    admin: Client,
    env: Environment,
    /// Template databases loaded on this server, by data variant.
    loaded: Vec<bool>,
}

impl Server {
    fn vnum(&self) -> i32 {
        self.env.server_version_num
    }
}

/// Starts the server for `key` (binaries, settings) as configured by
/// `cfg.target`; the key's settings override `--set` ones.
async fn start_server(
    cfg: &ExperimentConfig,
    key: (Option<String>, BTreeMap<String, String>),
    log: &std::path::Path,
    connections: u32,
    variants: usize,
) -> Result<Server> {
    let mut tc = cfg.target.clone();
    if let Some(bin) = &key.0 {
        tc.pg_bin = Some(PathBuf::from(bin));
    }
    for (k, v) in &key.1 {
        tc.settings.retain(|(name, _)| name != k);
        tc.settings.push((k.clone(), v.clone()));
    }
    let target = target::start(&tc, log, connections)
        .await
        .with_context(|| match (&key.0, key.1.is_empty()) {
            (None, true) => "starting the server".to_string(),
            _ => format!(
                "starting the server for pg_bin={} settings {:?}",
                key.0.as_deref().unwrap_or("(default)"),
                key.1
            ),
        })?;
    let admin = target::connect(&target.config(&target.admin_db())).await?;
    let env = environment(&admin).await?;
    Ok(Server {
        key,
        target,
        admin,
        env,
        loaded: vec![false; variants],
    })
}

/// What drives a study's runs: a built-in workload ([`Builtin`]) or an
/// external load ([`external::External`]).
trait Driver {
    /// The key of cell `cell`'s data variant: cells with equal keys share a
    /// template database.
    fn data_key(&self, cell: usize) -> String;

    /// Whether every data variant lives in the one database of the target
    /// (an external load on an external server), so that loading one
    /// replaces the others.
    fn one_database(&self, _srv: &Server) -> bool {
        false
    }

    /// Loads cell `cell`'s data into template database `tmpl` on `srv`.
    /// Returns `None` when cancelled.
    #[allow(clippy::too_many_arguments)]
    async fn load_template(
        &self,
        cell: usize,
        srv: &Server,
        tmpl: &str,
        run_db: &str,
        dir: &Path,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<Option<LoadReport>>;

    /// Runs `run` in a fresh copy `run_db` of `tmpl`, with results
    /// directory `dir`. Returns the record, and an error when the study
    /// must stop after saving it.
    #[allow(clippy::too_many_arguments)]
    async fn one_run(
        &self,
        cfg: &ExperimentConfig,
        srv: &Server,
        tmpl: &str,
        run_db: &str,
        dir: &Path,
        run: &PlannedRun,
        index: u32,
        cancel: &CancellationToken,
        progress: &Progress,
    ) -> Result<(RunRecord, Option<anyhow::Error>)>;
}

/// A built-in workload, one instance per cell.
struct Builtin<W> {
    spec: &'static WorkloadSpec,
    workloads: Vec<W>,
}

impl<W: Workload> Driver for Builtin<W> {
    fn data_key(&self, cell: usize) -> String {
        self.workloads[cell].data_key()
    }

    async fn load_template(
        &self,
        cell: usize,
        srv: &Server,
        tmpl: &str,
        run_db: &str,
        _dir: &Path,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<Option<LoadReport>> {
        load_template(
            &self.workloads[cell],
            self.spec,
            srv,
            tmpl,
            run_db,
            progress,
            cancel,
        )
        .await
    }

    async fn one_run(
        &self,
        cfg: &ExperimentConfig,
        srv: &Server,
        tmpl: &str,
        run_db: &str,
        _dir: &Path,
        run: &PlannedRun,
        index: u32,
        cancel: &CancellationToken,
        progress: &Progress,
    ) -> Result<(RunRecord, Option<anyhow::Error>)> {
        let retrier = retrier_for(cfg, &run.cell)?;
        let (record, script_error) = one_run(
            &self.workloads[run.cell_index],
            cfg,
            &retrier,
            srv,
            tmpl,
            run_db,
            run,
            index,
            cancel,
            progress,
        )
        .await?;
        // A script's own error (an expression error, an undefined
        // variable) stops its client, as in pgbench; every run would hit it
        // again, so the study stops, with the error, after saving the run.
        let stop = script_error.map(|m| anyhow!("a script error stopped the clients: {m}"));
        Ok((record, stop))
    }
}

async fn run_with<W: Workload>(
    cfg: ExperimentConfig,
    cancel: CancellationToken,
) -> Result<ExperimentOutcome> {
    validate(&cfg).map_err(BadInput::from_error)?;
    let spec = workload_spec(&cfg)?;
    let cells = cells(&cfg)?;
    // Build every cell's workload before starting anything, so a bad
    // parameter value is reported at once.
    let workloads: Vec<W> = cells
        .iter()
        .map(|c| Ok(W::new(&setup(c)?)?))
        .collect::<Result<_>>()?;
    let header = StudyHeader {
        workload: cfg.workload.clone(),
        strategies: if cfg.strategies.is_empty() {
            vec![spec.default_strategy().to_string()]
        } else {
            cfg.strategies.clone()
        },
        param_defaults: spec.defaults(),
    };
    run_study(cfg, cancel, cells, header, Builtin { spec, workloads }).await
}

/// The workload name of cells and results driven by an external load.
pub const EXTERNAL: &str = "external";

/// A study of an external load: templates checked before anything starts.
async fn run_external(
    cfg: ExperimentConfig,
    cancel: CancellationToken,
) -> Result<ExperimentOutcome> {
    validate(&cfg).map_err(BadInput::from_error)?;
    if cfg.latency_limit.is_some() {
        bail!(
            "--latency-limit applies to isobench's own open-loop clients, not to an external load; give the load tool its own limit"
        );
    }
    let cells = cells(&cfg)?;
    let (driver, notes) = external::External::new(&cfg, &cells)?;
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
    run_study(cfg, cancel, cells, header, driver).await
}

/// The workload name of cells and results driven by pgbench scripts.
pub const SCRIPTS: &str = "pgbench-script";

/// A study of pgbench scripts: every script parsed (and every expression)
/// before anything starts.
async fn run_scripts(
    cfg: ExperimentConfig,
    cancel: CancellationToken,
) -> Result<ExperimentOutcome> {
    use crate::pgbench::{run, script};
    validate(&cfg).map_err(BadInput::from_error)?;
    if !cfg.params.is_empty() || !cfg.strategies.is_empty() {
        bail!(BadInput(
            "--param and --strategy belong to built-in workloads; pgbench scripts take variables with -D NAME=VALUE"
                .into()
        ));
    }
    let sc = &cfg.scripts;
    let mut scripts = Vec::new();
    for (path, weight) in &sc.files {
        let text = std::fs::read_to_string(path).map_err(|e| {
            BadInput(format!(
                "-f {}: cannot read the script: {e}",
                path.display()
            ))
        })?;
        scripts.push(
            script::parse(&path.display().to_string(), &text, *weight)
                .map_err(BadInput::from_error)?,
        );
    }
    for (name, weight) in &sc.builtins {
        scripts.push(script::builtin(name, *weight).map_err(BadInput)?);
    }
    let init = match &sc.init_sql {
        Some(p) => Some((
            p.clone(),
            std::fs::read_to_string(p).map_err(|e| {
                BadInput(format!("--init-sql {}: cannot read it: {e}", p.display()))
            })?,
        )),
        None => None,
    };
    let cells = cells(&cfg)?;
    let workloads: Vec<run::ScriptWorkload> = cells
        .iter()
        .map(|c| {
            let data = match &init {
                Some((p, text)) => run::Data::InitSql(p.clone(), text.clone()),
                None => run::Data::Tpcb(c.scale.unwrap_or(1)),
            };
            run::ScriptWorkload::new(
                scripts.clone(),
                sc.mode,
                sc.defines.clone(),
                data,
                c.clients,
            )
            .map_err(|e| BadInput(e).into())
        })
        .collect::<Result<_>>()?;
    let header = StudyHeader {
        workload: SCRIPTS.into(),
        strategies: Vec::new(),
        param_defaults: BTreeMap::new(),
    };
    let spec = workload::spec("tpcb").expect("built in");
    run_study(cfg, cancel, cells, header, Builtin { spec, workloads }).await
}

/// What the stored configuration says about the driver.
struct StudyHeader {
    workload: String,
    strategies: Vec<String>,
    param_defaults: BTreeMap<String, String>,
}

/// Runs the planned runs of `cells` with `driver`: the results directory
/// and store, the servers, the template databases, the run loop, and the
/// clean-up on every way out.
async fn run_study<D: Driver>(
    cfg: ExperimentConfig,
    cancel: CancellationToken,
    cells: Vec<Cell>,
    header: StudyHeader,
    driver: D,
) -> Result<ExperimentOutcome> {
    // One template database per distinct data variant.
    let mut data_keys: Vec<String> = Vec::new();
    let template_of: Vec<usize> = (0..cells.len())
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
    let planned = plan(&cells, cfg.repeat, cfg.order, cfg.seed);
    let mut stored = StoredConfig {
        workload: header.workload,
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
        max_tries: cfg.max_tries.clone(),
        setting_factors: cfg.setting_factors.clone(),
        pg_bin: cfg.pg_bin.iter().map(|p| p.display().to_string()).collect(),
        repeat: cfg.repeat,
        order: cfg.order,
        baseline: cfg.baseline.clone().or_else(|| default_baseline(&cfg)),
        duration_s: cfg.duration.as_secs_f64(),
        warmup_s: cfg.warmup.as_secs_f64(),
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
    };
    if cfg.resume.is_none() {
        // A bad --baseline is refused before anything starts.
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
        report::cells::check_baseline_among(&probe, &planned_cells)
            .map_err(|e| anyhow!("--baseline: {e}"))?;
    }
    // Resume: the runs already measured stay; interrupted ones run again.
    let (dir, prior) = match &cfg.resume {
        Some(dir) => {
            let prior = store::load_dir_to_resume(dir).map_err(anyhow::Error::msg)?;
            check_resumable(&prior, &planned)?;
            (dir.to_path_buf(), Some(prior))
        }
        None => (
            store::results_dir(cfg.out.as_deref(), "", store::RESULTS_JSON)
                .map_err(anyhow::Error::msg)?,
            None,
        ),
    };
    let max_clients = cfg
        .clients
        .iter()
        .chain(&cfg.pool_size)
        .copied()
        .max()
        .unwrap_or(1);
    let progress = Progress::new(cfg.quiet);
    progress.note(&format!("results: {}", dir.display()));
    let log = dir.join(store::SERVER_LOG);
    // Clients + observer + admin + invariant check, with room to spare.
    let connections = max_clients + 20;
    let first_key = planned
        .first()
        .map(|r| (r.cell.pg_bin.clone(), r.cell.settings.clone()))
        .unwrap_or_default();
    let mut server = Some(start_server(&cfg, first_key, &log, connections, data_keys.len()).await?);
    let srv = server.as_ref().expect("just started");
    progress.note(&format!("target: {}", srv.target.describe()));
    stored.target = srv.target.describe();
    let pid = std::process::id();
    let templates: Vec<String> = (0..data_keys.len())
        .map(|i| format!("isobench_tmpl_{pid}_{i}"))
        .collect();
    let run_db = format!("isobench_run_{pid}");

    let mut results = match prior {
        Some(mut prior) => {
            let redo = prior.runs.iter().filter(|r| !r.complete).count();
            prior.runs.retain(|r| r.complete);
            progress.note(&format!(
                "resuming: {} of {} runs done{}",
                prior.runs.len(),
                planned.len(),
                if redo > 0 {
                    format!("; {redo} interrupted run(s) run again")
                } else {
                    String::new()
                }
            ));
            prior.complete = false;
            prior.finished_at = None;
            prior.config.target = stored.target.clone();
            prior
        }
        None => Results {
            schema_version: store::SCHEMA_VERSION,
            isobench_version: env!("CARGO_PKG_VERSION").into(),
            started_at: chrono::Local::now().to_rfc3339(),
            finished_at: None,
            complete: false,
            config: stored,
            environment: srv.env.clone(),
            load: Vec::new(),
            runs: Vec::new(),
        },
    };
    // The store: created with the experiment, or reopened to resume (the
    // interrupted runs' rows go; they run again).
    let db_path = dir.join(store::sqlite::DB_FILE);
    let mut db = if cfg.resume.is_some() && db_path.exists() {
        let mut db = Store::open(&db_path).map_err(anyhow::Error::msg)?;
        let stored = db.read().map_err(anyhow::Error::msg)?;
        for r in stored.runs.iter().filter(|r| !r.complete) {
            db.delete_run(r.index).map_err(anyhow::Error::msg)?;
        }
        db
    } else {
        let mut db = Store::create(&db_path).map_err(anyhow::Error::msg)?;
        for r in &results.runs {
            db.save_run(r).map_err(anyhow::Error::msg)?;
        }
        db
    };
    save(&dir, &mut db, &results, None)?;
    let done: Vec<(Cell, u32)> = results
        .runs
        .iter()
        .map(|r| (r.cell.clone(), r.repetition))
        .collect();
    let todo: Vec<(u32, &PlannedRun)> = planned
        .iter()
        .enumerate()
        .map(|(i, r)| (i as u32 + 1, r))
        .filter(|(_, r)| !done.contains(&(r.cell.clone(), r.repetition)))
        .collect();

    // Everything between creating databases and dropping them, so that
    // every way out of it (done, Ctrl-C, error) reaches the clean-up below.
    let body: Result<()> = async {
        progress.start(planned.len(), results.runs.len(), cfg.warmup + cfg.duration);
        for (index, run) in todo {
            if cancel.is_cancelled() {
                break;
            }
            let key = (run.cell.pg_bin.clone(), run.cell.settings.clone());
            if server.as_ref().is_none_or(|s| s.key != key) {
                // Stop the old server first: one server at a time.
                drop(server.take());
                progress.note(&format!(
                    "restarting the server: pg_bin={} settings {}",
                    key.0.as_deref().unwrap_or("(default)"),
                    fmt_settings(&key.1)
                ));
                server = Some(start_server(&cfg, key, &log, connections, data_keys.len()).await?);
            }
            let srv = server.as_mut().expect("started above");
            let t = template_of[run.cell_index];
            if !srv.loaded[t] {
                let Some(load) = driver
                    .load_template(
                        run.cell_index,
                        srv,
                        &templates[t],
                        &run_db,
                        &dir,
                        &progress,
                        &cancel,
                    )
                    .await?
                else {
                    break; // cancelled while loading
                };
                if driver.one_database(srv) {
                    srv.loaded.fill(false);
                }
                srv.loaded[t] = true;
                if !results.load.iter().any(|l| l.data == load.data) {
                    results.load.push(load);
                }
            }
            progress.begin_run(index, &run.cell, run.repetition);
            let context = || {
                format!(
                    "run {index} ({}, repetition {})",
                    run.cell.label(),
                    run.repetition
                )
            };
            let (record, stop) = driver
                .one_run(
                    &cfg,
                    srv,
                    &templates[t],
                    &run_db,
                    &dir,
                    run,
                    index,
                    &cancel,
                    &progress,
                )
                .await
                .with_context(context)?;
            progress.end_run(&record);
            results.runs.push(record);
            results.runs.sort_by_key(|r| r.index);
            save(&dir, &mut db, &results, Some(index))?;
            if let Some(e) = stop {
                return Err(e.context(context()));
            }
        }
        Ok(())
    }
    .await;
    progress.finish();
    let outcome_err = body.err();
    let interrupted = cancel.is_cancelled();
    results.complete = outcome_err.is_none()
        && !interrupted
        && results.runs.len() == planned.len()
        && results.runs.iter().all(|r| r.complete);
    results.finished_at = Some(chrono::Local::now().to_rfc3339());
    save(&dir, &mut db, &results, None)?;
    report::files::write(&dir, &results, report::files::Format::ALL).map_err(anyhow::Error::msg)?;
    if let Some(srv) = &server
        && matches!(srv.target, Target::External(_))
    {
        let _ = drop_database(&srv.admin, &run_db, srv.vnum()).await;
        for tmpl in &templates {
            let _ = drop_database(&srv.admin, tmpl, srv.vnum()).await;
        }
    }
    drop(server); // stops a managed server
    if let Some(e) = outcome_err {
        return Err(e.context(format!("completed runs are saved in {}", dir.display())));
    }
    Ok(ExperimentOutcome {
        dir,
        results,
        interrupted,
    })
}

/// Writes everything measured so far: the store (the experiment's header
/// and run `index`, the one just finished, if any), then `results.json`
/// and `report.md`.
fn save(dir: &Path, db: &mut Store, results: &Results, index: Option<u32>) -> Result<()> {
    db.save_header(results).map_err(anyhow::Error::msg)?;
    if let Some(run) = index.and_then(|i| results.runs.iter().find(|r| r.index == i)) {
        db.save_run(run).map_err(anyhow::Error::msg)?;
    }
    results
        .write(dir)
        .with_context(|| format!("writing {}", dir.join(store::RESULTS_JSON).display()))?;
    store::write_atomic(
        &dir.join(store::REPORT_MD),
        report::markdown::render(results).as_bytes(),
    )
    .with_context(|| format!("writing {}", dir.join(store::REPORT_MD).display()))?;
    Ok(())
}

/// The baseline when none is given and a study compares neither
/// isolation levels nor strategies (where the default rule, "first level
/// and strategy, other factors equal", would make every cell its own
/// baseline): the first value of the first factor that varies, e.g.
/// `pool_size=2` or `pg_bin=/usr/lib/postgresql/15/bin`.
fn default_baseline(cfg: &ExperimentConfig) -> Option<String> {
    if cfg.isolation.len() > 1 || cfg.strategies.len() > 1 {
        return None;
    }
    let first = |name: &str, values: Vec<String>| {
        (values.len() > 1).then(|| format!("{name}={}", values[0]))
    };
    let strs = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>();
    cfg.params
        .iter()
        .find_map(|(k, v)| first(k, v.clone()))
        .or_else(|| first("clients", strs(&cfg.clients)))
        .or_else(|| first("scale", strs(&cfg.scale)))
        .or_else(|| first("pool_size", strs(&cfg.pool_size)))
        .or_else(|| {
            first(
                "rate",
                cfg.rate.iter().map(|r| Rate(*r).to_string()).collect(),
            )
        })
        .or_else(|| first("max_tries", strs(&cfg.max_tries)))
        .or_else(|| {
            cfg.setting_factors
                .iter()
                .find_map(|(k, v)| first(k, v.clone()))
        })
        .or_else(|| {
            first(
                "pg_bin",
                cfg.pg_bin.iter().map(|p| p.display().to_string()).collect(),
            )
        })
}

/// `name=value, ...` or `(none)`.
fn fmt_settings(s: &BTreeMap<String, String>) -> String {
    if s.is_empty() {
        return "(none)".into();
    }
    s.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Refuses to resume into results whose runs do not belong to `planned`
/// (another study, or a changed file).
fn check_resumable(prior: &Results, planned: &[PlannedRun]) -> Result<()> {
    for r in &prior.runs {
        if !planned
            .iter()
            .any(|p| p.cell == r.cell && p.repetition == r.repetition)
        {
            bail!(
                "--resume: run {} ({}, repetition {}) is not in this study's plan; \
                 resume with the same study (its configuration is read from results.json)",
                r.index,
                r.cell.label(),
                r.repetition
            );
        }
    }
    Ok(())
}

/// Loads `w`'s data into template database `tmpl` on `srv` (dropping any
/// stale run database first). Returns `None` when cancelled.
async fn load_template<W: Workload>(
    w: &W,
    spec: &WorkloadSpec,
    srv: &Server,
    tmpl: &str,
    run_db: &str,
    progress: &Progress,
    cancel: &CancellationToken,
) -> Result<Option<LoadReport>> {
    drop_database(&srv.admin, run_db, srv.vnum()).await?;
    drop_database(&srv.admin, tmpl, srv.vnum()).await?;
    srv.admin
        .batch_execute(&format!("CREATE DATABASE {}", quote_ident(tmpl)))
        .await
        .map_err(|e| {
            anyhow!(
                "CREATE DATABASE {tmpl}: {} (on an external server isobench needs a role with CREATEDB)",
                target::error_text(&e)
            )
        })?;
    let what = match w.data_key() {
        k if k.is_empty() => spec.name.to_string(),
        k => format!("{} ({k})", spec.name),
    };
    progress.note(&format!("loading {what} ..."));
    let config = srv.target.config(tmpl);
    let db = workload::Loader::new(target::connect(&config).await?, config);
    let started = Instant::now();
    let rows = tokio::select! {
        r = w.load(&db) => r.with_context(|| format!("loading {what}"))?,
        _ = cancel.cancelled() => return Ok(None),
    };
    let load = LoadReport {
        data: w.data_key(),
        elapsed: started.elapsed(),
        rows,
    };
    progress.note(&format!(
        "loaded {} rows in {:.2} s",
        load.rows,
        load.elapsed.as_secs_f64()
    ));
    Ok(Some(load))
}

/// Makes `run_db` a fresh copy of `tmpl` on `srv` (`CREATE DATABASE ...
/// TEMPLATE`, then `VACUUM ANALYZE` and `CHECKPOINT`). Returns a
/// connection to it (`application_name` `isobench-check`), the time
/// taken in ms, and a failed CHECKPOINT's message.
async fn fresh_copy(srv: &Server, tmpl: &str, run_db: &str) -> Result<(Client, f64, Vec<String>)> {
    let (target, admin, vnum) = (&srv.target, &srv.admin, srv.vnum());
    let reset_start = Instant::now();
    drop_database(admin, run_db, vnum).await?;
    let strategy = if vnum >= 150000 {
        " STRATEGY FILE_COPY"
    } else {
        ""
    };
    admin
        .batch_execute(&format!(
            "CREATE DATABASE {} TEMPLATE {}{strategy}",
            quote_ident(run_db),
            quote_ident(tmpl)
        ))
        .await
        .map_err(|e| {
            anyhow!(
                "CREATE DATABASE {run_db} TEMPLATE {tmpl}: {}",
                target::error_text(&e)
            )
        })?;
    let db_config = target.config(run_db);
    let mut check_config = db_config.clone();
    check_config.application_name("isobench-check");
    let check_db = target::connect(&check_config).await?;
    check_db
        .batch_execute("VACUUM ANALYZE")
        .await
        .map_err(|e| anyhow!("VACUUM ANALYZE: {}", target::error_text(&e)))?;
    let mut errors = Vec::new();
    if let Err(e) = check_db.batch_execute("CHECKPOINT").await {
        errors.push(format!(
            "CHECKPOINT before the run failed: {}",
            target::error_text(&e)
        ));
    }
    let reset_ms = reset_start.elapsed().as_secs_f64() * 1000.0;
    Ok((check_db, reset_ms, errors))
}

#[allow(clippy::too_many_arguments)]
/// Per-command records from the measured window's step counts, named by
/// the workload (empty when it times no commands).
fn command_records(
    names: &[String],
    steps: &[crate::metrics::StepStats],
) -> Vec<store::CommandRecord> {
    names
        .iter()
        .enumerate()
        .map(|(k, name)| {
            let s = steps.get(k).copied().unwrap_or_default();
            store::CommandRecord {
                command: name.clone(),
                executions: s.executions,
                mean_ms: if s.executions > 0 {
                    s.total_us as f64 / s.executions as f64 / 1000.0
                } else {
                    0.0
                },
                failures: s.failures,
            }
        })
        .collect()
}

async fn one_run<W: Workload>(
    workload: &W,
    cfg: &ExperimentConfig,
    retrier: &Retrier,
    srv: &Server,
    tmpl: &str,
    run_db: &str,
    run: &PlannedRun,
    index: u32,
    cancel: &CancellationToken,
    progress: &Progress,
) -> Result<(RunRecord, Option<String>)> {
    let started_at = chrono::Local::now().to_rfc3339();
    let (check_db, reset_ms, errors) = fresh_copy(srv, tmpl, run_db).await?;
    let db_config = srv.target.config(run_db);
    let (server_version, server_settings) = shown_settings(&check_db, cfg, &run.cell).await?;

    let seed = cfg.seed.wrapping_add(u64::from(index) << 32);
    let params = EngineParams {
        clients: run.cell.clients,
        isolation: run.cell.isolation,
        retrier: retrier.clone(),
        warmup: cfg.warmup,
        duration: cfg.duration,
        seed,
        threads: cfg
            .threads
            .unwrap_or_else(|| engine::default_threads(run.cell.clients)),
        pool_size: run.cell.pool_size,
        rate: run.cell.rate.map(|r| r.0),
        latency_limit: cfg.latency_limit,
    };
    let (phase_tx, phase_rx) = watch::channel(Phase::Connecting);
    let observer = tokio::spawn(observe::observe(
        db_config.clone(),
        run_db.to_string(),
        workload.explain_statements(),
        observe::ObserveOptions {
            level: cfg.observe,
            sample_interval: cfg.sample_interval,
            backends: observe::Backends::Isobench,
            siread_locks: run.cell.isolation == Isolation::Serializable,
        },
        phase_rx,
    ));
    let mut on_tick = |t: &engine::Tick| progress.tick(t);
    let outcome = engine::run(
        workload,
        &db_config,
        &params,
        cancel,
        &phase_tx,
        &mut on_tick,
    )
    .await;
    phase_tx.send_replace(Phase::Draining);
    let server = observer.await.unwrap_or_default();
    let (outcome, ledger) = outcome?;
    let invariants = workload
        .check(&check_db, outcome.lifetime, ledger)
        .await
        .context("checking invariants")?;

    let m = outcome.measured.total();
    let m = &m;
    let failed_total = m.failed.total();
    let transactions = m.transactions();
    let type_names = workload.tx_types();
    let per_type: Vec<TxTypeRecord> = outcome
        .measured
        .types
        .iter()
        .zip(&type_names)
        .enumerate()
        .map(|(i, (t, name))| TxTypeRecord {
            name: name.to_string(),
            committed: t.committed,
            user_aborts: t.user_aborts,
            attempts: t.attempts,
            failed: t.failed.iter().collect(),
            unknown_outcome: t.unknown_outcome,
            wasted_ms: t.wasted_us as f64 / 1000.0,
            latency_ms: t.latency_summary(),
            latency_histogram: encode_histogram(&t.latency_us),
            commands: command_records(&workload.step_names(i), &t.steps),
        })
        .collect();
    let failed_by_type = per_type
        .iter()
        .filter(|t| !t.failed.is_empty())
        .map(|t| (t.name.clone(), t.failed.clone()))
        .collect();
    let client_time_ms = f64::from(run.cell.clients) * outcome.measured_s * 1000.0;
    let wasted_ms = m.wasted_us as f64 / 1000.0;
    let mut errors_all = errors;
    // Without every client's ledger, checks that use it can report
    // violations that did not happen: shown, but not counted.
    let anomalies = if outcome.ledger_complete {
        invariants.iter().map(|i| i.violations).sum()
    } else {
        errors_all.push(
            "clients were lost with their ledgers: invariant results are shown but not counted as anomalies"
                .into(),
        );
        0
    };
    let lost_clients = !outcome.client_errors.is_empty();
    let script_error = outcome.client_errors.iter().find_map(|e| match &e.reason {
        engine::StopReason::Script(m) => Some(m.clone()),
        _ => None,
    });
    errors_all.extend(outcome.client_errors.iter().map(ToString::to_string));
    errors_all.extend(server.errors.iter().cloned());
    Ok((
        RunRecord {
            index,
            cell: run.cell.clone(),
            repetition: run.repetition,
            seed,
            started_at,
            // A run that lost clients did not measure the cell as planned.
            complete: !outcome.interrupted && !lost_clients,
            duration_s: outcome.measured_s,
            committed: m.committed,
            tps: if outcome.measured_s > 0.0 {
                m.committed as f64 / outcome.measured_s
            } else {
                0.0
            },
            attempts: m.attempts,
            retries: m.attempts.saturating_sub(transactions),
            failed: m.failed.iter().collect(),
            failed_by_type,
            unknown_outcome: m.unknown_outcome,
            user_aborts: m.user_aborts,
            failure_pct: if transactions > 0 {
                100.0 * failed_total as f64 / transactions as f64
            } else {
                0.0
            },
            retries_per_commit: if m.committed > 0 {
                m.attempts.saturating_sub(transactions) as f64 / m.committed as f64
            } else {
                0.0
            },
            wasted_ms,
            wasted_attempts: m.wasted_attempts(),
            abort_ratio: if m.attempts > 0 {
                m.wasted_attempts() as f64 / m.attempts as f64
            } else {
                0.0
            },
            wasted_time_pct: if client_time_ms > 0.0 {
                100.0 * wasted_ms / client_time_ms
            } else {
                0.0
            },
            transactions: per_type,
            latency_ms: m.latency_summary(),
            latency_histogram: encode_histogram(&m.latency_us),
            per_second: outcome.per_second,
            client_cpu_s: outcome.cpu_s,
            client_cpu_us_per_tx: if m.committed > 0 {
                outcome.cpu_s * 1e6 / m.committed as f64
            } else {
                0.0
            },
            lifetime: outcome.lifetime,
            reset_ms,
            server,
            invariants,
            anomalies,
            errors: errors_all,
            pool_wait_ms: run
                .cell
                .pool_size
                .map(|_| wait_summary(&outcome.measured.waits.pool_us)),
            schedule_lag_ms: run
                .cell
                .rate
                .map(|_| wait_summary(&outcome.measured.waits.lag_us)),
            skipped: outcome.measured.waits.skipped,
            late: outcome.measured.waits.late,
            server_version,
            server_settings,
            load: None,
        },
        script_error,
    ))
}

/// `SHOW server_version`, and the values in effect of the cell's
/// settings and the `--set` ones, as the run's database sees them.
async fn shown_settings(
    db: &Client,
    cfg: &ExperimentConfig,
    cell: &Cell,
) -> Result<(String, BTreeMap<String, String>)> {
    let show = |e: tokio_postgres::Error| anyhow!("SHOW: {}", target::error_text(&e));
    let version: String = db
        .query_one("SHOW server_version", &[])
        .await
        .map_err(show)?
        .get(0);
    let names: Vec<String> = cell
        .settings
        .keys()
        .chain(cfg.target.settings.iter().map(|(k, _)| k))
        .cloned()
        .collect();
    let rows = db
        .query(
            "SELECT n, current_setting(n, true) FROM unnest($1::text[]) AS n",
            &[&names],
        )
        .await
        .map_err(show)?;
    let settings = rows
        .iter()
        .map(|r| {
            let v: Option<String> = r.get(1);
            (r.get(0), v.unwrap_or_else(|| "(unknown setting)".into()))
        })
        .collect();
    Ok((version, settings))
}

/// A wait histogram (µs) as a summary in ms.
fn wait_summary(h: &hdrhistogram::Histogram<u64>) -> store::WaitSummary {
    let l = crate::model::LatencySummary::of(h);
    store::WaitSummary {
        count: h.len(),
        mean: l.mean,
        p50: l.p50,
        p99: l.p99,
        max: l.max,
    }
}

/// The distinct values of `it`, in first-seen order.
fn distinct<T: PartialEq>(it: impl Iterator<Item = T>) -> Vec<T> {
    let mut out = Vec::new();
    for x in it {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{RetryPolicy, TargetConfig};

    fn cfg() -> ExperimentConfig {
        ExperimentConfig {
            workload: "tpcb".into(),
            load: Default::default(),
            scripts: Default::default(),
            scale: vec![1],
            isolation: vec![Isolation::ReadCommitted, Isolation::Serializable],
            strategies: Vec::new(),
            params: Vec::new(),
            clients: vec![1, 8],
            pool_size: Vec::new(),
            rate: Vec::new(),
            latency_limit: None,
            max_tries: Vec::new(),
            setting_factors: Vec::new(),
            pg_bin: Vec::new(),
            order: Order::Interleaved,
            baseline: None,
            file: None,
            resume: None,
            repeat: 2,
            duration: Duration::from_secs(1),
            warmup: Duration::ZERO,
            retry: RetryPolicy::default(),
            threads: None,
            sample_interval: Duration::from_secs(5),
            observe: crate::model::ObserveLevel::Full,
            seed: 1,
            target: TargetConfig::default(),
            out: None,
            quiet: true,
            fail_on_violation: false,
        }
    }

    #[test]
    fn plan_is_interleaved_by_repetition() {
        let c = cfg();
        let p = plan(&cells(&c).unwrap(), c.repeat, Order::Interleaved, 1);
        assert_eq!(p.len(), 8);
        let reps: Vec<u32> = p.iter().map(|r| r.repetition).collect();
        assert_eq!(reps, vec![1, 1, 1, 1, 2, 2, 2, 2]);
        let first: Vec<(Isolation, u32)> = p[..4]
            .iter()
            .map(|r| (r.cell.isolation, r.cell.clients))
            .collect();
        assert_eq!(
            first,
            vec![
                (Isolation::ReadCommitted, 1),
                (Isolation::Serializable, 1),
                (Isolation::ReadCommitted, 8),
                (Isolation::Serializable, 8)
            ]
        );
        assert_eq!(
            p[..4].iter().map(|r| &r.cell).collect::<Vec<_>>(),
            p[4..].iter().map(|r| &r.cell).collect::<Vec<_>>()
        );
        assert_eq!(p[5].cell_index, 1);
    }

    #[test]
    fn params_and_strategies_are_factors() {
        let mut c = cfg();
        c.workload = "sibench".into();
        c.scale = Vec::new();
        c.clients = vec![4];
        c.strategies = vec!["optimistic".into(), "locking".into()];
        c.params = vec![(
            "rows".into(),
            vec!["10".into(), "100".into(), "1000".into()],
        )];
        let cells = cells(&c).unwrap();
        assert_eq!(cells.len(), 3 * 2 * 2);
        assert_eq!(
            cells[0].label(),
            "isolation=rc strategy=optimistic rows=10 clients=4"
        );
        assert_eq!(
            cells[3].label(),
            "isolation=ser strategy=locking rows=10 clients=4"
        );
        assert_eq!(cells[11].params["rows"], "1000");
        // Every cell builds; a bad value names the option.
        for cell in &cells {
            setup(cell).unwrap();
        }
        c.params = vec![("rows".into(), vec!["0".into()])];
        let cell = &super::cells(&c).unwrap()[0];
        let e = <workload::sibench::Sibench as Workload>::new(&setup(cell).unwrap())
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("--param rows=0"), "{e}");
    }

    #[test]
    fn bad_factors_name_the_option() {
        let mut c = cfg();
        c.strategies = vec!["locking".into()];
        let e = cells(&c).unwrap_err().to_string();
        assert!(
            e.contains("--strategy locking") && e.contains("optimistic"),
            "{e}"
        );
        let mut c = cfg();
        c.params = vec![
            ("variant".into(), vec!["a".into()]),
            ("variant".into(), vec!["b".into()]),
        ];
        assert!(cells(&c).unwrap_err().to_string().contains("given twice"));
        let mut c = cfg();
        c.workload = "write-skew".into();
        assert!(cells(&c).unwrap_err().to_string().contains("--scale"));
    }

    #[test]
    fn default_baseline_is_the_first_varying_factor_without_levels_to_compare() {
        let mut c = cfg();
        // Two levels: the usual rule applies.
        assert_eq!(default_baseline(&c), None);
        c.isolation = vec![Isolation::Serializable];
        assert_eq!(default_baseline(&c).as_deref(), Some("clients=1"));
        c.clients = vec![8];
        c.pool_size = vec![8, 2];
        assert_eq!(default_baseline(&c).as_deref(), Some("pool_size=8"));
        c.pool_size = vec![2];
        assert_eq!(default_baseline(&c), None);
    }

    #[test]
    fn validation_names_the_option() {
        let mut c = cfg();
        c.clients = vec![0];
        assert!(validate(&c).unwrap_err().to_string().contains("--clients"));
        let mut c = cfg();
        c.duration = Duration::ZERO;
        assert!(validate(&c).unwrap_err().to_string().contains("--duration"));
        let mut c = cfg();
        c.load.before_run = Some("./app &".into());
        let e = validate(&c).unwrap_err().to_string();
        assert!(
            e.starts_with("before_run (--before-run) belongs to an external load"),
            "{e}"
        );
        let mut c = cfg();
        c.retry.max_tries = 0;
        assert!(
            validate(&c)
                .unwrap_err()
                .to_string()
                .contains("--max-tries")
        );
    }
}
